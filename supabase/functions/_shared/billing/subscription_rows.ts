/**
 * Reading `public.subscriptions` rows (one per user), and the column list of
 * what a row mirrors of a processor subscription: the statements of the full
 * path are generated from {@linkcode MIRRORED_COLUMNS}, and the fast path
 * (`public.mirror_subscription`, in SQL) names the same columns — a test
 * writes each of them through it, so a column added here and not there fails.
 *
 * @module
 */
import type { Sql, SqlParam } from "../platform/db.ts";
import type {
  SubscriptionLevel,
  SubscriptionState,
  SubscriptionStatus,
} from "./subscription_state.ts";

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
  /** Processor time the mirrored values are known current at (see `subscription_sync.ts`). */
  payproc_state_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

/** The columns a row mirrors, their SQL types, and the value of each from a subscription's state. */
export const MIRRORED_COLUMNS = [
  ["subscription_level", "text", (s: SubscriptionState) => s.level],
  ["subscription_status", "text", (s: SubscriptionState) => s.status],
  ["source", "text", () => "payproc"],
  ["payproc_customer_id", "text", (s: SubscriptionState) => s.customerId],
  ["payproc_subscription_id", "text", (s: SubscriptionState) => s.subscriptionId],
  ["payproc_price_id", "text", (s: SubscriptionState) => s.priceId],
  ["billing_interval", "text", (s: SubscriptionState) => s.interval],
  ["current_period_start", "timestamptz", (s: SubscriptionState) => s.periodStart],
  ["current_period_end", "timestamptz", (s: SubscriptionState) => s.periodEnd],
  ["cancel_at_period_end", "boolean", (s: SubscriptionState) => s.cancelAtPeriodEnd],
] as const satisfies ReadonlyArray<
  readonly [keyof SubscriptionRow, string, (s: SubscriptionState) => SqlParam]
>;

/** The values of {@linkcode MIRRORED_COLUMNS} for `state`, in order (`$1`…`$10`). */
export function mirroredValues(state: SubscriptionState): SqlParam[] {
  return MIRRORED_COLUMNS.map(([, , value]) => value(state));
}

/** The mirrored values of `state` by column name (the `p_mirror` of `public.mirror_subscription`). */
export function mirroredObject(state: SubscriptionState): Record<string, SqlParam> {
  return Object.fromEntries(MIRRORED_COLUMNS.map(([name, , value]) => [name, value(state)]));
}

/** `$n` of a mirrored column (1-based, in {@linkcode MIRRORED_COLUMNS} order). */
function mirroredParam(column: (typeof MIRRORED_COLUMNS)[number][0]): string {
  const index = MIRRORED_COLUMNS.findIndex(([name]) => name === column);
  const [, type] = MIRRORED_COLUMNS[index]!;
  return `$${index + 1}::${type}`;
}

/** SQL: the mirrored column names, comma-separated. */
export const MIRRORED_NAMES = MIRRORED_COLUMNS.map(([name]) => name).join(", ");
/** SQL: `$1::text, …` for the mirrored values. */
export const MIRRORED_PARAMS = MIRRORED_COLUMNS.map(([name]) => mirroredParam(name)).join(", ");
/** SQL: `col = $n::type, …` setting every mirrored column. */
export const MIRRORED_SET = MIRRORED_COLUMNS.map(([name]) => `${name} = ${mirroredParam(name)}`)
  .join(", ");
/** SQL (on alias `a`): the row already holds the mirrored values. */
export const mirrorsValues = (a: string) =>
  `(${MIRRORED_COLUMNS.map(([name]) => `${a}.${name}`).join(", ")})
   is not distinct from (${MIRRORED_PARAMS})`;

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
export function describeRow(row: SubscriptionRow | null) {
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
  const a: Record<string, unknown> = describeRow(before) ?? {};
  const b: Record<string, unknown> = describeRow(after) ?? {};
  return Object.keys({ ...a, ...b }).filter((key) => a[key] !== b[key]);
}
