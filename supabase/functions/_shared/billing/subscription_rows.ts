/**
 * Reading `public.subscriptions` rows (one per user).
 *
 * @module
 */
import type { Sql } from "../db.ts";
import type { SubscriptionLevel, SubscriptionStatus } from "./subscription_state.ts";

/** A `public.subscriptions` row as `pg` returns it. */
export interface SubscriptionRow {
  id: string;
  user_id: string;
  subscription_level: SubscriptionLevel;
  subscription_status: SubscriptionStatus;
  source: "payproc" | "grant";
  payproc_customer_id: string | null;
  payproc_subscription_id: string | null;
  payproc_price_id: string | null;
  billing_interval: "month" | "year" | null;
  current_period_start: Date | null;
  current_period_end: Date | null;
  cancel_at_period_end: boolean;
  payproc_event_created: Date | null;
  payproc_synced_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

/** The user's row, or null; `lock` takes it `for update` until the transaction ends. */
export async function subscriptionRow(
  sql: Sql,
  userId: string,
  options: { lock?: boolean } = {},
): Promise<SubscriptionRow | null> {
  return await sql.maybeOne<SubscriptionRow>(
    `select * from public.subscriptions where user_id = $1${options.lock ? " for update" : ""}`,
    [userId],
  );
}

/** The fields reports show of a row (dates as ISO strings). */
export function describeRow(row: SubscriptionRow | null): Record<string, unknown> | null {
  if (row === null) return null;
  return {
    subscription_level: row.subscription_level,
    subscription_status: row.subscription_status,
    source: row.source,
    payproc_customer_id: row.payproc_customer_id,
    payproc_subscription_id: row.payproc_subscription_id,
    payproc_price_id: row.payproc_price_id,
    billing_interval: row.billing_interval,
    current_period_start: row.current_period_start?.toISOString() ?? null,
    current_period_end: row.current_period_end?.toISOString() ?? null,
    cancel_at_period_end: row.cancel_at_period_end,
  };
}

/** Names of the reported fields whose values differ between two rows. */
export function changedFields(
  before: SubscriptionRow | null,
  after: SubscriptionRow | null,
): string[] {
  const a = describeRow(before) ?? {};
  const b = describeRow(after) ?? {};
  return Object.keys({ ...a, ...b }).filter((key) => a[key] !== b[key]);
}
