/**
 * A subscription the processor no longer has: the row mirroring it (if any)
 * is ended. This only ever lowers access, so it needs no ordering guard: a
 * subscription that is gone stays gone. Its stamp is cleared, so no signed
 * event's copy is ever written over it (each re-reads, and finds it gone).
 *
 * @module
 */
import type { Sql } from "../platform/db.ts";
import { lockProcessorObject } from "./processor_locks.ts";

/** Ends the row of a subscription the processor no longer has; whether it changed. */
export async function markGone(sql: Sql, subscriptionId: string): Promise<boolean> {
  await lockProcessorObject(sql, subscriptionId);
  const row = await sql.maybeOne(
    `update public.subscriptions set subscription_status = 'canceled', payproc_state_at = null
     where payproc_subscription_id = $1 and subscription_status <> 'canceled'
     returning id`,
    [subscriptionId],
  );
  return row !== null;
}
