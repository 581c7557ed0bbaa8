/**
 * Test helpers for listing views.
 *
 * @module
 */
import type pg from "pg";

/**
 * Waits until every transaction that wrote a visible view has ended
 * cluster-wide, so a fold may take them all (the fold only takes views
 * below the snapshot's xmin). Other test files' transactions on the same
 * server hold that horizon back for a moment; nothing signals their end, so
 * this polls the horizon itself.
 */
export async function viewsSettled(pool: pg.Pool): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const { rows } = await pool.query<{ ok: boolean }>(
      `select coalesce(pg_snapshot_xmin(pg_current_snapshot()) > max(xact), true) as ok
       from public.listing_views`,
    );
    if (rows[0]!.ok) return;
    if (Date.now() > deadline) throw new Error("Views still behind the fold horizon after 30 s");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
