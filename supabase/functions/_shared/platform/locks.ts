/**
 * Transaction-scoped advisory locks (safe behind the transaction pooler):
 * serialise the writers of one thing for the length of a short transaction.
 * Never hold one across a network call.
 *
 * @module
 */
import type { Sql } from "./db.ts";

/** Waits for, then holds until commit or rollback, the advisory lock named `key`. */
export async function holdXactLock(sql: Sql, key: string): Promise<void> {
  await sql.query("select pg_advisory_xact_lock(hashtextextended($1, 0))", [key]);
}
