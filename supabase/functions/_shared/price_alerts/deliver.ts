/**
 * Delivery of pending price-alert events: the users with events no channel
 * has yet, oldest first, at most {@linkcode PRICE_ALERT_USERS_PER_RUN} per
 * run (the rest wait for the next run), each told in its own transaction
 * (`notify_user.ts`), a batch at a time; after each batch the outbox is
 * flushed. Then e-mail events follow their e-mail's status, set-based
 * (`public.reconcile_price_alert_emails`), which also catches up e-mails a
 * later retry delivered.
 *
 * @module
 */
import type { Context } from "../platform/context.ts";
import type { Sql } from "../platform/db.ts";
import type { JobTally } from "../platform/jobs/tally.ts";
import { notifyUser } from "./notify_user.ts";

/** Users told per run at most. */
export const PRICE_ALERT_USERS_PER_RUN = 500;

/** Users written before the outbox is flushed. */
export const PRICE_ALERT_DELIVERY_BATCH = 100;

/** What delivery did to events (`delivered`: moved to sent, earlier e-mails included). */
export interface DeliveryCounts {
  delivered: number;
  failed: number;
  suppressed: number;
  usersNotified: number;
  /** Events still waiting for a channel afterwards. */
  pendingLeft: number;
}

/** Users with events no channel has yet, oldest event first, at most `limit`. */
export async function usersToNotify(sql: Sql, limit: number): Promise<string[]> {
  const rows = await sql.query<{ user_id: string }>(
    `select user_id from public.price_alert_events
     where status = 'pending' and email_log_id is null
     group by user_id
     order by min(created_at), user_id
     limit $1`,
    [limit],
  );
  return rows.map((row) => row.user_id);
}

/** Events no channel has yet. */
export async function undeliveredCount(sql: Sql): Promise<number> {
  const row = await sql.one<{ n: number }>(
    `select count(*)::integer as n from public.price_alert_events
     where status = 'pending' and email_log_id is null`,
  );
  return row.n;
}

/** Moves e-mail events along their e-mail's status; answers how many became what. */
export async function reconcileEmailEvents(
  sql: Sql,
): Promise<{ delivered: number; failed: number; suppressed: number }> {
  return await sql.one<{ delivered: number; failed: number; suppressed: number }>(
    "select delivered, failed, suppressed from public.reconcile_price_alert_emails()",
  );
}

/**
 * Tells the users with pending events (see the module doc); a user whose
 * notice cannot be written is a failed item of `tally`, and their events
 * stay pending for the next run.
 */
export async function deliverPriceAlerts(ctx: Context, tally: JobTally): Promise<DeliveryCounts> {
  const counts: DeliveryCounts = {
    delivered: 0,
    failed: 0,
    suppressed: 0,
    usersNotified: 0,
    pendingLeft: 0,
  };
  const users = await usersToNotify(ctx.db, PRICE_ALERT_USERS_PER_RUN);
  for (let start = 0; start < users.length; start += PRICE_ALERT_DELIVERY_BATCH) {
    for (const userId of users.slice(start, start + PRICE_ALERT_DELIVERY_BATCH)) {
      const done = await tally.attempt(`user:${userId}`, () => notifyUser(ctx, userId));
      if (!done) continue;
      counts.delivered += done.sent;
      counts.suppressed += done.suppressed;
      if (done.notified) counts.usersNotified++;
    }
    await ctx.outbox.flush();
  }
  const reconciled = await reconcileEmailEvents(ctx.db);
  counts.delivered += reconciled.delivered;
  counts.failed += reconciled.failed;
  counts.suppressed += reconciled.suppressed;
  counts.pendingLeft = await undeliveredCount(ctx.db);
  return counts;
}
