/**
 * Fixtures for the core schema tests: listings in a given review status,
 * subscriptions on a given plan, and error matchers for SQLSTATEs.
 *
 * Everything here writes on the superuser pool, the way the service
 * connection does, so the review state machine lets it make any transition.
 *
 * @module
 */
import assert from "node:assert/strict";
import type pg from "pg";

/** Review statuses of a listing. */
export type ReviewStatus = "draft" | "pending_review" | "approved" | "rejected" | "archived";

/** The true values of a listing's blur-able fields, all distinct and searchable. */
export interface ListingSecrets {
  seller_id: string;
  description: string;
  url: string;
  asking_price: string;
  monthly_revenue: string;
  monthly_profit: string;
  monthly_traffic: number;
}

/** A listing created by {@linkcode createListing}. */
export interface TestListing extends ListingSecrets {
  id: string;
  title: string;
  review_status: ReviewStatus;
}

let counter = 0;

/**
 * Inserts a listing for `sellerId` and walks it to `status` along the state
 * machine (as the service connection). Field values are unique per listing.
 */
export async function createListing(
  pool: pg.Pool,
  sellerId: string,
  status: ReviewStatus = "approved",
): Promise<TestListing> {
  counter += 1;
  const tag = `${crypto.randomUUID().slice(0, 8)}${counter}`;
  const values = {
    title: `Listing ${tag}`,
    description: `Secret description ${tag}`,
    url: `https://secret-${tag}.example`,
    asking_price: `${40000 + counter}.17`,
    monthly_revenue: `${3000 + counter}.23`,
    monthly_profit: `${1000 + counter}.29`,
    monthly_traffic: 700000 + counter,
  };
  const { rows } = await pool.query<{ id: string }>(
    `insert into public.listings (seller_id, title, description, url, category, asking_price,
       currency, monthly_revenue, monthly_profit, monthly_traffic, review_status)
     values ($1, $2, $3, $4, 'saas', $5, 'USD', $6, $7, $8, $9)
     returning id`,
    [
      sellerId,
      values.title,
      values.description,
      values.url,
      values.asking_price,
      values.monthly_revenue,
      values.monthly_profit,
      values.monthly_traffic,
      status === "draft" ? "draft" : "pending_review",
    ],
  );
  const id = rows[0]!.id;
  const path: Record<ReviewStatus, string[]> = {
    draft: [],
    pending_review: [],
    approved: ["approved"],
    rejected: ["rejected"],
    archived: ["approved", "archived"],
  };
  for (const next of path[status]) {
    await pool.query("update public.listings set review_status = $2 where id = $1", [id, next]);
  }
  return { id, seller_id: sellerId, review_status: status, ...values };
}

/** Options for {@linkcode setSubscription}. */
export interface SubscriptionOptions {
  status?: string;
  source?: "payproc" | "grant";
  /** End of the period; null for none. Default: 30 days ahead. */
  periodEnd?: Date | null;
}

/** Creates or replaces `userId`'s subscription row (as the service connection). */
export async function setSubscription(
  pool: pg.Pool,
  userId: string,
  level: "free" | "starter" | "pro",
  options: SubscriptionOptions = {},
): Promise<void> {
  const periodEnd = options.periodEnd === undefined
    ? new Date(Date.now() + 30 * 86_400_000)
    : options.periodEnd;
  const periodStart = periodEnd === null
    ? new Date(Date.now() - 86_400_000)
    : new Date(Math.min(Date.now(), periodEnd.getTime()) - 30 * 86_400_000);
  await pool.query(
    `insert into public.subscriptions (user_id, subscription_level, subscription_status, source,
       current_period_start, current_period_end, billing_interval)
     values ($1, $2, $3, $4, $5, $6, 'month')
     on conflict (user_id) do update set
       subscription_level = excluded.subscription_level,
       subscription_status = excluded.subscription_status,
       source = excluded.source,
       current_period_start = excluded.current_period_start,
       current_period_end = excluded.current_period_end`,
    [
      userId,
      level,
      options.status ?? "active",
      options.source ?? "payproc",
      periodStart,
      periodEnd,
    ],
  );
}

/** A matcher for `assert.rejects`: a database error with SQLSTATE `code`. */
export function sqlState(code: string): (error: unknown) => boolean {
  return (error: unknown) => {
    const actual = (error as { code?: unknown }).code;
    if (actual !== code) {
      throw new Error(
        `Expected SQLSTATE ${code}, got ${String(actual)}: ${
          error instanceof Error ? error.message : String(error)
        }`,
      );
    }
    return true;
  };
}

/**
 * Asserts that `sql` fails with SQLSTATE `code` inside `client`'s
 * transaction, and rolls back to a savepoint so the transaction goes on.
 */
export async function rejectsWith(
  client: pg.PoolClient,
  code: string,
  sql: string,
  params: unknown[] = [],
  message?: string,
): Promise<void> {
  await client.query("savepoint expect_error");
  try {
    await assert.rejects(client.query(sql, params), sqlState(code), message);
  } finally {
    await client.query("rollback to savepoint expect_error");
  }
}
