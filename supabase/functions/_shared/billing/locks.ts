/**
 * Per-object serialisation of processor writes: a transaction-scoped
 * advisory lock on the processor object's id (safe behind the transaction
 * pooler). Whoever holds it reads the object from the processor and writes
 * our mirror, so a later holder always reads a state at least as new.
 *
 * @module
 */
import type { Sql } from "../db.ts";

/** The advisory lock key text of processor object `id` (hashed with `hashtextextended`). */
export function objectLockKey(id: string): string {
  return `payproc:${id}`;
}

/** Waits for, then holds until commit/rollback, the lock on processor object `id`. */
export async function lockProcessorObject(sql: Sql, id: string): Promise<void> {
  await sql.query("select pg_advisory_xact_lock(hashtextextended($1, 0))", [objectLockKey(id)]);
}
