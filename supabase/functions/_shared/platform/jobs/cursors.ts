/**
 * Where incremental jobs resume (`public.job_cursors`).
 *
 * @module
 */
import type { Sql } from "../db.ts";

/** The stored cursor of `job`, or null. */
export async function readCursor<T>(sql: Sql, job: string): Promise<T | null> {
  const row = await sql.maybeOne<{ cursor: T }>(
    "select cursor from public.job_cursors where job_name = $1",
    [job],
  );
  return row?.cursor ?? null;
}

/** Stores the cursor of `job`. */
export async function writeCursor(sql: Sql, job: string, cursor: unknown): Promise<void> {
  await sql.query(
    `insert into public.job_cursors (job_name, cursor) values ($1, $2::jsonb)
     on conflict (job_name) do update set cursor = excluded.cursor
     where job_cursors.cursor is distinct from excluded.cursor`,
    [job, JSON.stringify(cursor)],
  );
}
