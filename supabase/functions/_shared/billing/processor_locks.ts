/**
 * Per-object serialisation of processor mirrors: a transaction-scoped
 * advisory lock on the processor object's id, taken in the short write
 * transaction (never across the read from the processor).
 *
 * @module
 */
import type { Sql } from "../platform/db.ts";
import { holdXactLock } from "../platform/locks.ts";

/** The advisory lock key text of processor object `id`. */
function objectLockKey(id: string): string {
  return `payproc:${id}`;
}

/** Waits for, then holds until commit/rollback, the lock on processor object `id`. */
export async function lockProcessorObject(sql: Sql, id: string): Promise<void> {
  await holdXactLock(sql, objectLockKey(id));
}
