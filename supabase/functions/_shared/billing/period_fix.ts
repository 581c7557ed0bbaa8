/**
 * Period date repair (fix-subscription-dates, auto-fix-subscription-dates):
 * a row's `current_period_start`/`current_period_end` set to the processor
 * subscription's (on its items), when missing or different; dry runs only
 * report.
 *
 * @module
 */
import type Stripe from "stripe";
import type { Sql } from "../platform/db.ts";
import type { OurPlans } from "./plan_prices.ts";
import { lockProcessorObject } from "./processor_locks.ts";
import { type SubscriptionRow, subscriptionRow } from "./subscription_rows.ts";
import { subscriptionState } from "./subscription_state.ts";

/** A period as reports show it. */
export interface Period {
  start: string | null;
  end: string | null;
}

/** What {@linkcode fixPeriod} found and did. */
export interface PeriodFix {
  userId: string;
  subscriptionId: string;
  /** Whether the dates differ (and, unless a dry run, were corrected). */
  changed: boolean;
  /** Whether this call wrote them. */
  written: boolean;
  /** Why nothing was written although the dates differ. */
  reason?: string;
  before: Period;
  after: Period;
}

function iso(date: Date | null): string | null {
  return date?.toISOString() ?? null;
}

/** A subscription read from the processor for a date repair. */
export interface PeriodRead {
  subscription: Stripe.Subscription;
  /** When it was read (taken before the request). */
  readAt: Date;
  plans: OurPlans;
}

/**
 * Compares `userId`'s row with the subscription read and, unless `dryRun`,
 * corrects the dates. Runs in the caller's (short) transaction and locks the
 * subscription and the row; everything from the processor is read before.
 */
export async function fixPeriod(
  sql: Sql,
  userId: string,
  { subscription, readAt, plans }: PeriodRead,
  dryRun: boolean,
): Promise<PeriodFix> {
  await lockProcessorObject(sql, subscription.id);
  const row = await subscriptionRow(sql, userId, { lock: true });
  const state = subscriptionState(subscription, plans);
  const before = {
    start: iso(row?.current_period_start ?? null),
    end: iso(row?.current_period_end ?? null),
  };
  const after = { start: iso(state.periodStart), end: iso(state.periodEnd) };
  const fix: PeriodFix = {
    userId,
    subscriptionId: subscription.id,
    changed: before.start !== after.start || before.end !== after.end,
    written: false,
    before,
    after,
  };
  if (!fix.changed) return fix;
  const refusal = refuse(row, subscription.id, readAt);
  if (refusal) return { ...fix, reason: refusal };
  if (dryRun) return fix;
  await sql.query(
    `update public.subscriptions
     set current_period_start = $2, current_period_end = $3,
         payproc_synced_at = greatest(payproc_synced_at, $4::timestamptz),
         -- A read without the processor's time: the next event re-reads.
         payproc_state_at = null
     where user_id = $1`,
    [userId, state.periodStart, state.periodEnd, readAt],
  );
  return { ...fix, written: true };
}

function refuse(row: SubscriptionRow | null, subscriptionId: string, readAt: Date): string | null {
  if (row === null || row.payproc_subscription_id !== subscriptionId) {
    return "the row no longer mirrors this subscription";
  }
  if (row.payproc_synced_at && row.payproc_synced_at > readAt) {
    return "a newer read is already stored";
  }
  return null;
}
