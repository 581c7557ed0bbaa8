/**
 * Test setup for the billing functions: a test database, the payment
 * processor double with our four plan prices, a runtime pointed at both, and
 * helpers to deliver signed webhooks and read the rows billing writes.
 *
 * @module
 */
import type pg from "pg";
import webhook from "../../supabase/functions/payproc-webhook/handler.ts";
import type { Runtime } from "../../supabase/functions/_shared/platform/runtime.ts";
import { type TestCredentials, testCredentials } from "./credentials.ts";
import { createTestDatabase, type TestDatabase } from "./db.ts";
import { type Invocation, invoke, testRuntime } from "./runtime.ts";
import { PayprocDouble, type PayprocPrice } from "./payproc_double.ts";

/** The main endpoint's signing secret in tests. */
export const WEBHOOK_SECRET = "whsec_test";
/** The Connect endpoint's signing secret in tests. */
export const CONNECT_WEBHOOK_SECRET = "whsec_connect_test";

/** Env that points a runtime at `double`. */
export function payprocEnv(double: PayprocDouble): Record<string, string> {
  return {
    PAYPROC_SECRET_KEY: "sk_test_x",
    PAYPROC_API_BASE: double.url,
    PAYPROC_WEBHOOK_SECRET: WEBHOOK_SECRET,
    PAYPROC_CONNECT_WEBHOOK_SECRET: CONNECT_WEBHOOK_SECRET,
    PAYPROC_TIMEOUT_MS: "2000",
  };
}

/** Everything a billing test file needs. */
export interface BillingSetup {
  db: TestDatabase;
  double: PayprocDouble;
  runtime: Runtime;
  keys: TestCredentials;
  prices: Record<"starter_monthly" | "starter_yearly" | "pro_monthly" | "pro_yearly", PayprocPrice>;
  /** Closes the runtime's pool, the double and the database. */
  close(): Promise<void>;
}

/**
 * A database, the double with our plan prices, and a runtime on both
 * (`double.now`: the processor's clock, default real time).
 */
export async function billingSetup(
  env: Record<string, string> = {},
  double_: { now?: () => number } = {},
): Promise<BillingSetup> {
  const db = await createTestDatabase();
  const double = new PayprocDouble(double_);
  const prices = {
    starter_monthly: double.addPrice({
      lookupKey: "starter_monthly",
      unitAmount: 900,
      interval: "month",
      productName: "Starter",
    }),
    starter_yearly: double.addPrice({
      lookupKey: "starter_yearly",
      unitAmount: 9000,
      interval: "year",
      productName: "Starter",
    }),
    pro_monthly: double.addPrice({
      lookupKey: "pro_monthly",
      unitAmount: 2900,
      interval: "month",
      productName: "Pro",
    }),
    pro_yearly: double.addPrice({
      lookupKey: "pro_yearly",
      unitAmount: 29000,
      interval: "year",
      productName: "Pro",
    }),
  };
  const runtime = await testRuntime(db, { ...payprocEnv(double), ...env });
  return {
    db,
    double,
    runtime,
    keys: await testCredentials(),
    prices,
    async close() {
      await runtime.close();
      await double.close();
      await db.close();
    },
  };
}

/** Posts `event` to payproc-webhook signed with `secret` (default the main one). */
export async function deliver<T = Record<string, unknown>>(
  setup: Pick<BillingSetup, "double" | "runtime">,
  event: object,
  options: { secret?: string; timestamp?: number; runtime?: Runtime } = {},
): Promise<Invocation<T>> {
  const signed = await setup.double.signedWebhook(event, options.secret ?? WEBHOOK_SECRET, {
    timestamp: options.timestamp,
  });
  return await invoke<T>(webhook, options.runtime ?? setup.runtime, {
    rawBody: signed.body,
    headers: signed.headers,
  });
}

/** A `subscriptions` row as tests read it. */
export interface TestSubscriptionRow {
  user_id: string;
  subscription_level: string;
  subscription_status: string;
  source: string;
  payproc_customer_id: string | null;
  payproc_subscription_id: string | null;
  payproc_price_id: string | null;
  billing_interval: string | null;
  current_period_start: Date | null;
  current_period_end: Date | null;
  cancel_at_period_end: boolean;
  updated_at: Date;
}

/** The user's subscriptions row, or null. */
export async function subscriptionOf(
  pool: pg.Pool,
  userId: string,
): Promise<TestSubscriptionRow | null> {
  const { rows } = await pool.query<TestSubscriptionRow>(
    "select * from public.subscriptions where user_id = $1",
    [userId],
  );
  return rows[0] ?? null;
}

/** How many rows `table` has (optionally `where` a condition with `params`). */
export async function countRows(
  pool: pg.Pool,
  table: string,
  where = "true",
  params: unknown[] = [],
): Promise<number> {
  const { rows } = await pool.query<{ n: number }>(
    `select count(*)::int as n from ${table} where ${where}`,
    params,
  );
  return rows[0]!.n;
}

/** Unix seconds for `date` (default now). */
export function unix(date: Date = new Date()): number {
  return Math.floor(date.getTime() / 1000);
}
