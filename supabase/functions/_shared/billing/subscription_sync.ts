/**
 * `syncSubscription`: the one way a processor subscription reaches
 * `public.subscriptions`. Used by the webhook, check-subscription,
 * create-checkout, the sync jobs and fix-user-subscription.
 *
 * It works in two phases, so no transaction, lock or pooled connection is
 * ever held across a call to the processor:
 *
 * 1. Read ({@linkcode readForSync}, {@linkcode readContenders}): the
 *    subscription (read by the caller, with the time of the read), our plans,
 *    and — only when the row may hold another live subscription — that one
 *    too. Processor calls and plain reads, no transaction.
 * 2. Write ({@linkcode mirrorInPlace}, {@linkcode writeSync}): one call of
 *    `public.mirror_subscription()` when the row already mirrors the
 *    subscription (the common case), else a
 *    short transaction that finds the user, settles which of two
 *    subscriptions the row mirrors, and writes only when something changed
 *    (so `updated_at` moves on every change and only then).
 *
 * Ordering comes from the reads, not from event order: a write carrying a
 * read older than the stored one (`payproc_synced_at`, or by the processor's
 * clock `payproc_state_at`) is refused, so a slow reader never overwrites a
 * fresher state. Each write keeps `payproc_state_at`, the processor time the
 * row is known current at (the `Date` of the read's answer; cleared by a
 * read that has none), which lets the webhook write a later event's own
 * copy without a read (`public.apply_subscription_event`, see its
 * migration). A subscription the processor does not have is never mirrored
 * from anyone's copy of it.
 *
 * @module
 */
import type Stripe from "stripe";
import type { Context } from "../platform/context.ts";
import type { Db, Sql, SqlParam } from "../platform/db.ts";
import { type OurPlans, ourPlans } from "./plan_prices.ts";
import { lockProcessorObject } from "./processor_locks.ts";
import { answeredAt, orNullIfMissing, RereadNeeded } from "../platform/payproc_calls.ts";
import {
  MIRRORED_NAMES,
  MIRRORED_PARAMS,
  MIRRORED_SET,
  mirroredObject,
  mirroredValues,
  mirrorsValues,
  type SubscriptionRow,
  subscriptionRow,
} from "./subscription_rows.ts";
import {
  chooseSubscription,
  ENDED_STATUSES,
  ENTITLED_STATUSES,
  type SubscriptionState,
  subscriptionState,
} from "./subscription_state.ts";
import { existingUserId } from "./users.ts";
import { isUuid } from "../lib/uuid.ts";
import { payprocFor } from "../platform/payproc.ts";

/** Where the subscription was read and whom it is for. */
export interface SyncOptions {
  /** The user to link it to (checkout's `client_reference_id`); else found from our rows and metadata. */
  userId?: string;
  /** When the subscription was read from the processor (taken before the request). */
  readAt: Date;
  /**
   * The processor's time of its answer (`Date`), when known: the row is then
   * known current at it. Absent (a page of a list): the row's stamp is cleared.
   */
  stateAt?: Date | null;
  /** `created` of the webhook event being applied, if any (recorded on the row). */
  eventCreated?: number;
}

/** A subscription as read from the processor, with what writing it needs. */
export interface SubscriptionRead {
  subscription: Stripe.Subscription;
  state: SubscriptionState;
  plans: OurPlans;
  options: SyncOptions;
  /** Subscriptions a user's row may mirror instead, read in the same phase (null: gone). */
  others: ReadonlyMap<string, Stripe.Subscription | null>;
}

/** What a sync did. */
export type SyncResult =
  | { result: "changed" | "unchanged"; userId: string }
  | { result: "stale" | "kept" | "unlinked"; userId: string | null; reason: string };

/** The verdict of comparing a subscription with the user's row. */
export type WriteDecision =
  | { action: "write" }
  | { action: "contest"; otherSubscriptionId: string }
  | { action: "skip"; result: "stale" | "kept"; reason: string };

/** How often a sync reads again after meeting a subscription it had not read. */
const MAX_READS = 3;

/**
 * Mirrors `subscription` (read at `options.readAt`) into its user's row:
 * both phases, reading again when the write meets a subscription it has not
 * read.
 */
export async function syncSubscription(
  ctx: Context,
  subscription: Stripe.Subscription,
  options: SyncOptions,
): Promise<SyncResult> {
  let read = await readForSync(ctx, subscription, options);
  const quick = await mirrorInPlace(ctx.db, read);
  if (quick) return quick;
  read = await readContenders(ctx, read);
  for (let attempt = 1;; attempt++) {
    try {
      return await ctx.db.tx((sql) => writeSync(sql, read));
    } catch (error) {
      if (!(error instanceof RereadNeeded) || attempt >= MAX_READS) throw error;
      read = await readContenders(ctx, read, [error.objectId]);
    }
  }
}

/**
 * Reads subscription `id`, with our time before the request and the
 * processor's time of its answer; null when the processor does not have it.
 * (Its customer is read only if the full write needs it, see
 * {@linkcode readContenders}.)
 */
export async function readSubscription(
  ctx: Context,
  id: string,
): Promise<{ subscription: Stripe.Subscription; readAt: Date; stateAt: Date | null } | null> {
  const payproc = await payprocFor(ctx);
  const readAt = new Date();
  const subscription = await orNullIfMissing(payproc.subscriptions.retrieve(id));
  return subscription ? { subscription, readAt, stateAt: answeredAt(subscription) } : null;
}

/** Phase 1: our plans (cached) and what `subscription` means for a row. No database. */
export async function readForSync(
  ctx: Context,
  subscription: Stripe.Subscription,
  options: SyncOptions,
): Promise<SubscriptionRead> {
  const plans = await ourPlans(ctx);
  return {
    subscription,
    state: subscriptionState(subscription, plans),
    plans,
    options,
    others: new Map(),
  };
}

/**
 * Phase 1, for the full write: reads the live subscriptions other rows that
 * the write may meet hold (the row of the subscription's customer, of the
 * users it may belong to), plus `also`. Plain reads and processor calls.
 */
export async function readContenders(
  ctx: Context,
  read: SubscriptionRead,
  also: Iterable<string> = [],
): Promise<SubscriptionRead> {
  const { state, options } = read;
  const payproc = await payprocFor(ctx);
  let subscription = read.subscription;
  if (typeof subscription.customer === "string") {
    // Its metadata may name the user: read the customer too, unless a listing expanded it.
    const customer = await orNullIfMissing(payproc.customers.retrieve(subscription.customer));
    if (customer) subscription = { ...subscription, customer };
  }
  const candidates = [options.userId, subscription.metadata?.user_id, customerUserId(subscription)]
    .filter(isUuid);
  const rows = await ctx.db.query<{ payproc_subscription_id: string }>(
    `select payproc_subscription_id from public.subscriptions
     where (payproc_customer_id = $1 or user_id = any($2::uuid[]))
       and payproc_subscription_id is not null and payproc_subscription_id <> $3
       and subscription_status <> all($4::text[])`,
    [state.customerId, candidates, state.subscriptionId, ENDED_STATUSES],
  );
  const wanted = new Set([...rows.map((r) => r.payproc_subscription_id), ...also]);
  const others = new Map(read.others);
  for (const id of wanted) {
    if (!others.has(id)) others.set(id, await orNullIfMissing(payproc.subscriptions.retrieve(id)));
  }
  return { ...read, subscription, others };
}

/** The `user_id` our metadata puts on the subscription's customer, when it is expanded. */
function customerUserId(subscription: Stripe.Subscription): string | null {
  const customer = subscription.customer;
  if (typeof customer === "string" || customer.deleted) return null;
  return customer.metadata?.user_id ?? null;
}

/** When the event being applied was created, if there is one. */
function eventCreatedAt(read: SubscriptionRead): Date | null {
  const created = read.options.eventCreated;
  return created === undefined ? null : new Date(created * 1000);
}

/** The parameters of the statements below: mirrored values, the read, the event, a user, the stamp. */
function params(read: SubscriptionRead, userId: string | null): SqlParam[] {
  return [
    ...mirroredValues(read.state),
    read.options.readAt,
    eventCreatedAt(read),
    userId,
    read.options.stateAt ?? null,
  ];
}

/** A row's verdict from `public.mirror_subscription()`. */
export interface MirrorRow {
  user_id: string;
  /** The row's customer (and user, when one is asked for) are the subscription's. */
  matches: boolean;
  /** The read is not older than the stored one. */
  fresh: boolean;
  /** The row already holds the values. */
  same: boolean;
  /** This statement changed it. */
  changed: boolean;
}

/**
 * SQL: the fast path (`public.mirror_subscription`, see its migration),
 * recording the event `$5` when one is given.
 */
export const MIRROR_IN_PLACE = `select * from public.mirror_subscription(
  $1::jsonb, $2::timestamptz, $3::timestamptz, $4::uuid, $5::jsonb, $6::timestamptz)`;

/** The parameters of {@linkcode MIRROR_IN_PLACE} for `read` and the ledger fields of its event, if any. */
export function mirrorArgs(read: SubscriptionRead, event: string | null = null): SqlParam[] {
  return [
    JSON.stringify(mirroredObject(read.state)),
    read.options.readAt,
    eventCreatedAt(read),
    read.options.userId ?? null,
    event,
    read.options.stateAt ?? null,
  ];
}

/** What a judged row means, when it settles the sync. */
export function settledBy(row: MirrorRow | null): SyncResult | null {
  if (row === null || !row.matches) return null;
  if (row.changed) return { result: "changed", userId: row.user_id };
  if (!row.fresh) {
    return { result: "stale", userId: row.user_id, reason: "a newer read is already stored" };
  }
  if (row.same) return { result: "unchanged", userId: row.user_id };
  return null;
}

/** Phase 2, common case: one call, when the row already mirrors the subscription. Null: not settled. */
async function mirrorInPlace(db: Db, read: SubscriptionRead): Promise<SyncResult | null> {
  const row = await db.maybeOne<MirrorRow>(MIRROR_IN_PLACE, mirrorArgs(read));
  return settledBy(row);
}

/**
 * Phase 2, full path, inside the caller's transaction: serialised per
 * subscription (advisory lock) and per row (`for update`). Throws
 * {@linkcode RereadNeeded} when the row holds a live subscription the read
 * phase did not read.
 */
export async function writeSync(sql: Sql, read: SubscriptionRead): Promise<SyncResult> {
  const { state, options } = read;
  await lockProcessorObject(sql, state.subscriptionId);
  const linked = await sql.maybeOne<SubscriptionRow>(
    "select * from public.subscriptions where payproc_subscription_id = $1 for update",
    [state.subscriptionId],
  );
  if (linked && options.userId && linked.user_id !== options.userId) {
    return skip("kept", linked.user_id, "the subscription is linked to another user");
  }
  const userId = linked?.user_id ?? options.userId ?? await userOfSubscription(sql, read);
  if (userId === null) {
    return { result: "unlinked", userId: null, reason: "no user is linked to its customer" };
  }

  for (let attempt = 0; attempt < 3; attempt++) {
    const current = linked?.user_id === userId
      ? linked
      : await subscriptionRow(sql, userId, { lock: true });
    let decision = decideWrite(current, state, options);
    if (decision.action === "contest") decision = contest(read, decision.otherSubscriptionId);
    if (decision.action === "skip") return skip(decision.result, userId, decision.reason);
    if (current?.payproc_customer_id !== state.customerId) {
      const owner = await sql.maybeOne<{ user_id: string }>(
        "select user_id from public.subscriptions where payproc_customer_id = $1 and user_id <> $2",
        [state.customerId, userId],
      );
      if (owner) return skip("kept", userId, "its customer is linked to another user");
    }
    if (current === null) {
      const inserted = await sql.maybeOne(INSERT, params(read, userId));
      if (inserted) return { result: "changed", userId };
      continue; // a concurrent first write (same user or customer): decide again against it
    }
    const updated = await sql.maybeOne(UPDATE, params(read, userId));
    if (!updated) await sql.query(STAMP, [userId, options.readAt, options.stateAt ?? null]);
    return { result: updated ? "changed" : "unchanged", userId };
  }
  throw new Error(`Cannot sync subscription "${state.subscriptionId}": its row keeps changing`);
}

/**
 * Whether `state` (read at `readAt`) may overwrite `current`: the same
 * subscription unless the read is older than the stored one; another
 * subscription unless the row's is still live (then the better of the two
 * wins, see {@linkcode contest}) or an active grant meets a subscription
 * that gives no access.
 */
export function decideWrite(
  current: SubscriptionRow | null,
  state: SubscriptionState,
  read: Pick<SyncOptions, "readAt" | "stateAt">,
  now: Date = new Date(),
): WriteDecision {
  if (current === null) return { action: "write" };
  if (current.payproc_subscription_id === state.subscriptionId) {
    if (
      (current.payproc_synced_at && read.readAt < current.payproc_synced_at) ||
      (read.stateAt && current.payproc_state_at && read.stateAt < current.payproc_state_at)
    ) {
      return { action: "skip", result: "stale", reason: "a newer read is already stored" };
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

/** Two live subscriptions for one user: keep the better of the two (both read in phase 1). */
function contest(read: SubscriptionRead, otherId: string): WriteDecision {
  const other = read.others.get(otherId);
  if (other === undefined) throw new RereadNeeded(otherId);
  if (other === null || chooseSubscription([other, read.subscription], read.plans) !== other) {
    return { action: "write" };
  }
  return { action: "skip", result: "kept", reason: `subscription "${otherId}" outranks it` };
}

/** The user a subscription belongs to: by its customer's row, then our metadata. */
async function userOfSubscription(sql: Sql, read: SubscriptionRead): Promise<string | null> {
  const byCustomer = await sql.maybeOne<{ user_id: string }>(
    "select user_id from public.subscriptions where payproc_customer_id = $1",
    [read.state.customerId],
  );
  if (byCustomer) return byCustomer.user_id;
  return await existingUserId(sql, read.subscription.metadata?.user_id) ??
    await existingUserId(sql, customerUserId(read.subscription));
}

function skip(result: "stale" | "kept", userId: string | null, reason: string): SyncResult {
  return { result, userId, reason };
}

/** Inserts the user's first row ($13) unless a row of the user, customer or subscription exists. */
const INSERT = `
  insert into public.subscriptions (${MIRRORED_NAMES}, payproc_synced_at, payproc_event_created,
                                    user_id, payproc_state_at)
  values (${MIRRORED_PARAMS}, $11::timestamptz, $12::timestamptz, $13::uuid, $14::timestamptz)
  on conflict do nothing
  returning id`;

/**
 * The row's stamp after a read answered at `$n` (null: the read has no
 * processor time, so the stamp is cleared), as `public.mirror_subscription`
 * keeps it.
 */
const stampAfter = (n: number) =>
  `case when $${n}::timestamptz is null then null
        else greatest(s.payproc_state_at, $${n}::timestamptz) end`;

/** Overwrites user $13's row with the mirrored values when something differs. */
const UPDATE = `
  update public.subscriptions s set ${MIRRORED_SET},
    payproc_synced_at = greatest(s.payproc_synced_at, $11::timestamptz),
    payproc_event_created = greatest(s.payproc_event_created, $12::timestamptz),
    payproc_state_at = ${stampAfter(14)}
  where s.user_id = $13::uuid and not ${mirrorsValues("s")}
  returning s.id`;

/**
 * Bookkeeping only, when user $1's row already held the values: it is
 * current as of this read (the row's triggers skip such an update).
 */
const STAMP = `
  update public.subscriptions s set
    payproc_synced_at = greatest(s.payproc_synced_at, $2::timestamptz),
    payproc_state_at = ${stampAfter(3)}
  where s.user_id = $1::uuid
    and (s.payproc_state_at is distinct from ${stampAfter(3)}
         or s.payproc_synced_at is distinct from greatest(s.payproc_synced_at, $2::timestamptz))`;
