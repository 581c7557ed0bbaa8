/**
 * `syncSubscription`: the one way a processor subscription reaches
 * `public.subscriptions`. Used by the webhook, check-subscription, the sync
 * jobs and fix-user-subscription. It finds the user, refuses stale state,
 * settles which of two subscriptions a user's row mirrors, and writes only
 * when something changed (so `updated_at` moves on every change and only then).
 *
 * @module
 */
import type Stripe from "stripe";
import type { Context } from "../context.ts";
import type { Sql } from "../db.ts";
import { lockProcessorObject } from "./locks.ts";
import { planKeysByPrice } from "./plan_keys.ts";
import { orNullIfMissing } from "./processor.ts";
import { type SubscriptionRow, subscriptionRow } from "./subscription_rows.ts";
import {
  chooseSubscription,
  ENDED_STATUSES,
  ENTITLED_STATUSES,
  needsPlanLookup,
  type SubscriptionState,
  subscriptionState,
} from "./subscription_state.ts";
import { existingUserId } from "./users.ts";

/** Where the subscription object comes from and whom it is for. */
export interface SyncOptions {
  /** The user to link it to (checkout's `client_reference_id`); else found from our rows and metadata. */
  userId?: string;
  /**
   * When the object was read from the processor (taken before the request).
   * Null: it is an event's payload (the processor no longer has the object).
   */
  readAt: Date | null;
  /** `created` of the event being applied (Unix seconds), if any. */
  eventCreated?: number;
  /** The caller already holds the subscription's advisory lock (skips taking it again). */
  locked?: boolean;
}

/** What {@linkcode syncSubscription} did. */
export type SyncResult =
  | { result: "changed" | "unchanged"; userId: string }
  | { result: "stale" | "kept" | "unlinked"; userId: string | null; reason: string };

/** The verdict of comparing a subscription with the user's row. */
export type WriteDecision =
  | { action: "write" }
  | { action: "contest"; otherSubscriptionId: string }
  | { action: "skip"; result: "stale" | "kept"; reason: string };

/**
 * Mirrors `subscription` into its user's row, inside the caller's
 * transaction. Serialised per subscription (advisory lock) and per row
 * (`for update`).
 */
export async function syncSubscription(
  ctx: Context,
  sql: Sql,
  subscription: Stripe.Subscription,
  options: SyncOptions,
): Promise<SyncResult> {
  if (!options.locked) await lockProcessorObject(sql, subscription.id);
  const keys = needsPlanLookup(subscription) ? await planKeysByPrice(ctx) : undefined;
  const state = subscriptionState(subscription, keys);
  const fast = await fastPath(sql, state, options);
  if (fast) return fast;
  const linked = await sql.maybeOne<SubscriptionRow>(
    "select * from public.subscriptions where payproc_subscription_id = $1 for update",
    [state.subscriptionId],
  );
  if (linked && options.userId && linked.user_id !== options.userId) {
    return skip("kept", linked.user_id, "the subscription is linked to another user");
  }
  const userId = linked?.user_id ?? options.userId ??
    await userOfSubscription(ctx, sql, subscription, state);
  if (userId === null) {
    return { result: "unlinked", userId: null, reason: "no user is linked to its customer" };
  }

  for (let attempt = 0; attempt < 3; attempt++) {
    const current = linked?.user_id === userId
      ? linked
      : await subscriptionRow(sql, userId, { lock: true });
    let decision = decideWrite(current, state, options);
    if (decision.action === "contest") {
      decision = await contest(ctx, subscription, decision.otherSubscriptionId);
    }
    if (decision.action === "skip") return skip(decision.result, userId, decision.reason);
    if (current?.payproc_customer_id !== state.customerId) {
      const owner = await sql.maybeOne<{ user_id: string }>(
        "select user_id from public.subscriptions where payproc_customer_id = $1 and user_id <> $2",
        [state.customerId, userId],
      );
      if (owner) return skip("kept", userId, "its customer is linked to another user");
    }
    const values = rowValues(userId, state, options);
    if (current === null) {
      const inserted = await sql.maybeOne(INSERT, values);
      if (inserted) return { result: "changed", userId };
      continue; // a concurrent first write (same user or customer): decide again against it
    }
    const updated = await sql.maybeOne(UPDATE, values);
    return { result: updated ? "changed" : "unchanged", userId };
  }
  throw new Error(`Cannot sync subscription "${state.subscriptionId}": its row keeps changing`);
}

/**
 * The common case: the row already mirrors this subscription. One statement
 * updates it when the state is fresh and differs; otherwise a second one
 * settles "unchanged" or "stale". Null: take the full path.
 */
async function fastPath(
  sql: Sql,
  state: SubscriptionState,
  options: SyncOptions,
): Promise<SyncResult | null> {
  const params = [
    state.subscriptionId,
    state.level,
    state.status,
    state.customerId,
    state.priceId,
    state.interval,
    state.periodStart,
    state.periodEnd,
    state.cancelAtPeriodEnd,
    options.readAt,
    options.eventCreated === undefined ? null : new Date(options.eventCreated * 1000),
    options.userId ?? null,
    ENDED_STATUSES.includes(state.status),
  ];
  const updated = await sql.maybeOne<{ user_id: string }>(FAST_UPDATE, params);
  if (updated) return { result: "changed", userId: updated.user_id };
  const row = await sql.maybeOne<FastRow>(FAST_CHECK, params);
  if (row === null || !row.matches) return null;
  if (!row.fresh) {
    return skip(
      "stale",
      row.user_id,
      options.readAt !== null
        ? "a newer read is already stored"
        : "a newer event is already applied",
    );
  }
  return row.same ? { result: "unchanged", userId: row.user_id } : null;
}

interface FastRow {
  user_id: string;
  /** The row's customer (and user, when one is asked for) are this subscription's. */
  matches: boolean;
  /** The state is not older than the stored one. */
  fresh: boolean;
  /** The row already holds the state. */
  same: boolean;
}

/**
 * Whether `state` may overwrite `current`: the same subscription unless the
 * state is older than what is stored; another subscription unless the row's
 * is still live (then the better of the two wins, see {@linkcode contest}) or
 * an active grant meets a subscription that gives no access.
 */
export function decideWrite(
  current: SubscriptionRow | null,
  state: SubscriptionState,
  options: SyncOptions,
  now: Date = new Date(),
): WriteDecision {
  if (current === null) return { action: "write" };
  if (current.payproc_subscription_id === state.subscriptionId) {
    if (options.readAt !== null) {
      if (current.payproc_synced_at && options.readAt < current.payproc_synced_at) {
        return { action: "skip", result: "stale", reason: "a newer read is already stored" };
      }
      return { action: "write" };
    }
    const stored = current.payproc_event_created?.getTime();
    const created = options.eventCreated;
    if (stored !== undefined && created !== undefined) {
      const ms = created * 1000;
      if (ms < stored || (ms === stored && !ENDED_STATUSES.includes(state.status))) {
        return { action: "skip", result: "stale", reason: "a newer event is already applied" };
      }
    }
    return { action: "write" };
  }
  const entitled = ENTITLED_STATUSES.includes(state.status);
  if (current.source === "grant") {
    const grantActive = ENTITLED_STATUSES.includes(current.subscription_status) &&
      (current.current_period_end === null || current.current_period_end > now);
    return grantActive && !entitled
      ? { action: "skip", result: "kept", reason: "an active grant outranks it" }
      : { action: "write" };
  }
  if (
    current.payproc_subscription_id !== null &&
    !ENDED_STATUSES.includes(current.subscription_status)
  ) {
    return { action: "contest", otherSubscriptionId: current.payproc_subscription_id };
  }
  return { action: "write" };
}

/** Two live subscriptions for one user: re-read the stored one and keep the better. */
async function contest(
  ctx: Context,
  incoming: Stripe.Subscription,
  otherId: string,
): Promise<WriteDecision> {
  const other = await orNullIfMissing(ctx.payproc.subscriptions.retrieve(otherId));
  if (other === null || chooseSubscription([other, incoming]) === incoming) {
    return { action: "write" };
  }
  return { action: "skip", result: "kept", reason: `subscription "${otherId}" outranks it` };
}

/** The user a subscription belongs to: by its customer's row, then our metadata. */
async function userOfSubscription(
  ctx: Context,
  sql: Sql,
  subscription: Stripe.Subscription,
  state: SubscriptionState,
): Promise<string | null> {
  const byCustomer = await sql.maybeOne<{ user_id: string }>(
    "select user_id from public.subscriptions where payproc_customer_id = $1",
    [state.customerId],
  );
  if (byCustomer) return byCustomer.user_id;
  const fromSubscription = await existingUserId(sql, subscription.metadata?.user_id);
  if (fromSubscription) return fromSubscription;
  const customer = typeof subscription.customer === "string"
    ? await orNullIfMissing(ctx.payproc.customers.retrieve(subscription.customer))
    : subscription.customer;
  if (customer === null || customer.deleted) return null;
  return await existingUserId(sql, customer.metadata?.user_id);
}

function skip(
  result: "stale" | "kept",
  userId: string | null,
  reason: string,
): SyncResult {
  return { result, userId, reason };
}

function rowValues(userId: string, state: SubscriptionState, options: SyncOptions) {
  return [
    userId,
    state.level,
    state.status,
    state.customerId,
    state.subscriptionId,
    state.priceId,
    state.interval,
    state.periodStart,
    state.periodEnd,
    state.cancelAtPeriodEnd,
    options.readAt,
    options.eventCreated === undefined ? null : new Date(options.eventCreated * 1000),
  ];
}

/** SQL (on alias `a`): the state in $2..$9 is what the row holds for subscription $1 / customer $4. */
const sameAs = (a: string) => `
  (${a}.subscription_level, ${a}.subscription_status, ${a}.source, ${a}.payproc_customer_id,
   ${a}.payproc_price_id, ${a}.billing_interval, ${a}.current_period_start,
   ${a}.current_period_end, ${a}.cancel_at_period_end)
  is not distinct from
    ($2::text, $3::text, 'payproc'::text, $4::text, $5::text, $6::text, $7::timestamptz,
     $8::timestamptz, $9::boolean)`;

/**
 * SQL (on alias `a`): the rules of {@linkcode decideWrite} for the same
 * subscription — a read ($10) not older than the stored read; without one,
 * an event ($11) not older than the stored event, a tie going to an ended
 * status ($13).
 */
const freshFor = (a: string) => `
  case
    when $10::timestamptz is not null then
      ${a}.payproc_synced_at is null or ${a}.payproc_synced_at <= $10::timestamptz
    else
      $11::timestamptz is null or ${a}.payproc_event_created is null
      or ${a}.payproc_event_created < $11::timestamptz
      or (${a}.payproc_event_created = $11::timestamptz and $13::boolean)
  end`;

/** SQL (on alias `a`): the row's customer is $4 and its user is $12 when given. */
const matchesFor = (a: string) =>
  `(${a}.payproc_customer_id is not distinct from $4::text
    and ($12::uuid is null or ${a}.user_id = $12::uuid))`;

/**
 * Updates the row mirroring subscription $1 when it matches, the state is
 * fresh and something differs; returns its user then.
 */
const FAST_UPDATE = `
  update public.subscriptions s set
    subscription_level = $2,
    subscription_status = $3,
    source = 'payproc',
    payproc_price_id = $5,
    billing_interval = $6,
    current_period_start = $7,
    current_period_end = $8,
    cancel_at_period_end = $9,
    payproc_synced_at = greatest(s.payproc_synced_at, $10::timestamptz),
    payproc_event_created = greatest(s.payproc_event_created, $11::timestamptz)
  where s.payproc_subscription_id = $1
    and ${matchesFor("s")}
    and ${freshFor("s")}
    and not ${sameAs("s")}
  returning s.user_id`;

/** Why {@linkcode FAST_UPDATE} changed nothing (same parameters). */
const FAST_CHECK = `
  select s.user_id, ${matchesFor("s")} as matches, ${freshFor("s")} as fresh,
         ${sameAs("s")} as same
  from public.subscriptions s
  where s.payproc_subscription_id = $1`;

const INSERT = `
  insert into public.subscriptions (
    user_id, subscription_level, subscription_status, source, payproc_customer_id,
    payproc_subscription_id, payproc_price_id, billing_interval, current_period_start,
    current_period_end, cancel_at_period_end, payproc_synced_at, payproc_event_created
  ) values ($1, $2, $3, 'payproc', $4, $5, $6, $7, $8, $9, $10, $11, $12)
  on conflict do nothing
  returning id`;

const UPDATE = `
  update public.subscriptions set
    subscription_level = $2,
    subscription_status = $3,
    source = 'payproc',
    payproc_customer_id = $4,
    payproc_subscription_id = $5,
    payproc_price_id = $6,
    billing_interval = $7,
    current_period_start = $8,
    current_period_end = $9,
    cancel_at_period_end = $10,
    payproc_synced_at = greatest(payproc_synced_at, $11::timestamptz),
    payproc_event_created = greatest(payproc_event_created, $12::timestamptz)
  where user_id = $1
    and (subscription_level, subscription_status, source, payproc_customer_id,
         payproc_subscription_id, payproc_price_id, billing_interval, current_period_start,
         current_period_end, cancel_at_period_end)
      is distinct from
        ($2::text, $3::text, 'payproc'::text, $4::text, $5::text, $6::text, $7::text,
         $8::timestamptz, $9::timestamptz, $10::boolean)
  returning id`;
