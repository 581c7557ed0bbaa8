/**
 * The deadlines of due diligence, as steps of the `deal-deadlines` job
 * (`deadlines_job.ts`).
 *
 * **Exclusivity lapses.** A deal in `in_diligence` whose `exclusive_until`
 * has passed is cancelled with cause `exclusivity_lapsed`, and both sides
 * are told (`deal_exclusivity_lapsed` queued for `send-queued-notices`), by
 * `public.lapse_deal_exclusivity()`: one deal per call, each call its own
 * transaction. The call passes by a deal that a move in progress holds
 * locked (a confirm, a withdrawal, another run): that move decides, or the
 * next run looks again. So a rerun, or two runs at once, cancel each deal
 * once.
 *
 * @module
 */
import type { Context } from "../platform/context.ts";
import type { Sql } from "../platform/db.ts";
import type { JobTally } from "../platform/jobs/tally.ts";

/** Overdue deals looked at per run, oldest window first (the rest wait for the next run). */
export const EXCLUSIVITY_BATCH = 500;

/** The ids of deals in due diligence past `exclusive_until` (the database's clock), oldest first. */
export async function overdueDiligenceDeals(
  sql: Sql,
  limit = EXCLUSIVITY_BATCH,
): Promise<string[]> {
  const rows = await sql.query<{ id: string }>(
    `select d.id from public.deals d
     where d.status = 'in_diligence' and d.exclusive_until <= now()
     order by d.exclusive_until, d.id
     limit $1`,
    [limit],
  );
  return rows.map((row) => row.id);
}

/**
 * Cancels deal `dealId` if its exclusivity lapsed and no move holds it, in
 * one statement (its own transaction); answers whether it did.
 */
export async function lapseExclusivity(sql: Sql, dealId: string): Promise<boolean> {
  const row = await sql.one<{ lapsed: boolean }>(
    "select public.lapse_deal_exclusivity($1) as lapsed",
    [dealId],
  );
  return row.lapsed;
}

/**
 * The step `exclusivity-lapses`: every overdue deal (up to `limit`) is
 * lapsed in its own transaction. Counts `exclusivity_lapsed` (listed in
 * `items.exclusivity_lapsed`) and `exclusivity_skipped` (a move in progress
 * held the deal, or it was no longer due); a deal that fails is a failed item
 * `exclusivity-lapses:<deal id>` and the others go on.
 */
export async function lapseExclusivities(
  ctx: Context,
  tally: JobTally,
  limit = EXCLUSIVITY_BATCH,
): Promise<void> {
  tally.count("exclusivity_lapsed", 0);
  tally.count("exclusivity_skipped", 0);
  const due = await overdueDiligenceDeals(ctx.db, limit);
  if (due.length === limit) {
    ctx.log.warn("more overdue diligence deals than one run takes; the rest wait", { limit });
  }
  for (const dealId of due) {
    tally.scanned++;
    const lapsed = await tally.attempt(
      `exclusivity-lapses:${dealId}`,
      () => lapseExclusivity(ctx.db, dealId),
    );
    if (lapsed === true) {
      tally.changed++;
      tally.list("exclusivity_lapsed", dealId);
    } else if (lapsed === false) {
      tally.count("exclusivity_skipped");
    }
  }
}
