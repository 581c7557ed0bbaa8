/**
 * The user's customer at the processor: found (stored id, then our metadata;
 * by e-mail only in the admin repair and only for a confirmed address — a
 * customer linked only when its metadata names no other user and no other
 * user's row holds it) or created once per user with the idempotency key
 * `customer:<userId>`, and stored on the user's `subscriptions` row.
 *
 * @module
 */
import type Stripe from "stripe";
import type { Context } from "../platform/context.ts";
import type { Db, Sql } from "../platform/db.ts";
import { conflict } from "../platform/errors.ts";
import { isPayprocError, payprocFor } from "../platform/payproc.ts";
import { orNullIfMissing } from "../platform/payproc_calls.ts";
import type { BillingUser } from "./users.ts";

/** How a customer was found. */
export type CustomerSource = "stored" | "metadata" | "email" | "created";

/** A user's customer and how it was found. */
export interface FoundCustomer {
  customer: Stripe.Customer;
  via: CustomerSource;
}

/** The idempotency key of creating `userId`'s customer. */
export function customerIdempotencyKey(userId: string): string {
  return `customer:${userId}`;
}

/** The customer id stored for the user, if any. */
export async function storedCustomerId(sql: Sql, userId: string): Promise<string | null> {
  const row = await sql.maybeOne<{ payproc_customer_id: string | null }>(
    "select payproc_customer_id from public.subscriptions where user_id = $1",
    [userId],
  );
  return row?.payproc_customer_id ?? null;
}

/** How {@linkcode findCustomer} may look. */
export interface FindOptions {
  /**
   * Also match by the user's e-mail address, when they confirmed it. Only the
   * admin repair does: anyone can sign up with an address they do not own,
   * and a match would open that customer's billing portal to them.
   */
  byEmail?: boolean;
}

/** Finds the user's customer without creating one; null when there is none to trust. */
export async function findCustomer(
  ctx: Context,
  user: BillingUser,
  options: FindOptions = {},
): Promise<FoundCustomer | null> {
  const payproc = await payprocFor(ctx);
  const stored = await storedCustomerId(ctx.db, user.id);
  if (stored) {
    const customer = await orNullIfMissing(payproc.customers.retrieve(stored));
    if (customer && !customer.deleted) return { customer, via: "stored" };
  }
  const byMetadata = await firstUnclaimed(ctx, user.id, await taggedCustomers(ctx, user.id));
  if (byMetadata) return { customer: byMetadata, via: "metadata" };
  if (!options.byEmail || !user.email || !user.email_confirmed) return null;
  const listed = await payproc.customers.list({ email: user.email, limit: 10 });
  const candidates = listed.data.filter((c) => {
    const owner = c.metadata?.user_id;
    return owner === undefined || owner === "" || owner === user.id;
  });
  const byEmail = await firstUnclaimed(ctx, user.id, candidates);
  if (!byEmail) return null;
  return { customer: await tagCustomer(ctx, user.id, byEmail), via: "email" };
}

/** Finds the user's customer (never by e-mail), or creates it once per user, and stores the link. */
export async function ensureCustomer(ctx: Context, user: BillingUser): Promise<FoundCustomer> {
  const found = await findCustomer(ctx, user);
  const payproc = await payprocFor(ctx);
  const result: FoundCustomer = found ?? {
    customer: await payproc.customers.create(
      { email: user.email ?? undefined, metadata: { user_id: user.id } },
      { idempotencyKey: customerIdempotencyKey(user.id) },
    ),
    via: "created",
  };
  await linkCustomer(ctx.db, user.id, result.customer.id);
  return result;
}

/**
 * Stores `customerId` as the user's customer; 409 when another user's row
 * holds it. Returns whether the stored value changed. Runs its own
 * statements (not inside a transaction: a lost race is retried).
 */
export async function linkCustomer(db: Db, userId: string, customerId: string): Promise<boolean> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const owner = await db.maybeOne<{ user_id: string }>(
      "select user_id from public.subscriptions where payproc_customer_id = $1",
      [customerId],
    );
    if (owner?.user_id === userId) return false;
    if (owner) {
      throw conflict(`Cannot link customer "${customerId}": it is linked to another user`, {
        customerId,
      });
    }
    try {
      const row = await db.maybeOne(
        `insert into public.subscriptions (user_id, payproc_customer_id) values ($1, $2)
         on conflict (user_id) do update set payproc_customer_id = excluded.payproc_customer_id
         where subscriptions.payproc_customer_id is distinct from excluded.payproc_customer_id
         returning id`,
        [userId, customerId],
      );
      return row !== null;
    } catch (error) {
      // A concurrent link of the same customer won the unique index: look again.
      if ((error as { code?: unknown }).code !== "23505") throw error;
    }
  }
  throw conflict(`Cannot link customer "${customerId}": its link keeps changing`, { customerId });
}

/** Sets our `user_id` metadata on a customer that has none (idempotent). */
export async function tagCustomer(
  ctx: Context,
  userId: string,
  customer: Stripe.Customer,
): Promise<Stripe.Customer> {
  if (customer.metadata?.user_id === userId) return customer;
  const payproc = await payprocFor(ctx);
  return await payproc.customers.update(
    customer.id,
    { metadata: { user_id: userId } },
    { idempotencyKey: `customer-link:${userId}:${customer.id}` },
  );
}

/**
 * Customers carrying our `user_id` metadata. Search is not offered in every
 * account (the API refuses it with a 4xx); then this finds none.
 */
async function taggedCustomers(ctx: Context, userId: string): Promise<Stripe.Customer[]> {
  const payproc = await payprocFor(ctx);
  try {
    const found = await payproc.customers.search({
      query: `metadata['user_id']:'${userId}'`,
      limit: 10,
    });
    return found.data;
  } catch (error) {
    const status = isPayprocError(error) ? error.statusCode ?? 0 : 0;
    if (status >= 400 && status < 500 && status !== 429) {
      ctx.log.warn("customer search refused; finding customers by stored id and e-mail only", {
        status,
      });
      return [];
    }
    throw error;
  }
}

/** The first candidate that no other user's row holds. */
async function firstUnclaimed(
  ctx: Context,
  userId: string,
  candidates: readonly Stripe.Customer[],
): Promise<Stripe.Customer | null> {
  if (candidates.length === 0) return null;
  const claimed = await ctx.db.query<{ payproc_customer_id: string }>(
    `select payproc_customer_id from public.subscriptions
     where payproc_customer_id = any($1::text[]) and user_id <> $2`,
    [candidates.map((c) => c.id), userId],
  );
  const taken = new Set(claimed.map((r) => r.payproc_customer_id));
  return candidates.find((c) => !taken.has(c.id)) ?? null;
}
