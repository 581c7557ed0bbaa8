/**
 * Test-side subscription changes: seed one, change it as the processor would
 * (status, period, price, cancellation), or roll it into its next period.
 *
 * @module
 */
import type Stripe from "stripe";
import type { PayprocStore } from "./store.ts";
import type { PayprocInvoice, PayprocPrice, PayprocSubscription } from "./types.ts";
import { planFromPrice } from "./resources/prices.ts";
import {
  addInterval,
  cancelNow,
  createSubscription,
  currentPeriod,
  firstInvoice,
} from "./resources/subscriptions.ts";

/** Input of {@linkcode seedSubscription}: one item, by price id or lookup key. */
export interface SubscriptionSeed {
  customer: string;
  priceId?: string;
  lookupKey?: string;
  quantity?: number;
  status?: Stripe.Subscription.Status;
  periodStart?: number;
  periodEnd?: number;
  cancelAtPeriodEnd?: boolean;
  metadata?: Record<string, string>;
  trialEnd?: number | null;
  created?: number;
  /** Also create the period's invoice as `latest_invoice` (default true). */
  withInvoice?: boolean;
}

/** A processor-side change to a subscription (see {@linkcode patchSubscription}). */
export interface SubscriptionPatch {
  status?: Stripe.Subscription.Status;
  cancelAtPeriodEnd?: boolean;
  cancelAt?: number | null;
  canceledAt?: number | null;
  /** New current period on every item. */
  periodStart?: number;
  periodEnd?: number;
  /** Switch the first item to this price (by id or lookup key). */
  priceId?: string;
  lookupKey?: string;
  quantity?: number;
  /** Merged into the metadata. */
  metadata?: Record<string, string>;
  trialEnd?: number | null;
}

/** The price with `id`, or with `lookupKey`; throws when neither finds one. */
export function findPrice(store: PayprocStore, id?: string, lookupKey?: string): PayprocPrice {
  const price = id
    ? store.get("price", id)
    : store.all("price").find((p) => lookupKey !== undefined && p.lookup_key === lookupKey);
  if (!price) {
    throw new Error(
      `no price ${id ?? `with lookup key ${lookupKey}`} in the double (addPrice first)`,
    );
  }
  return price;
}

/** Creates a subscription directly (as if made elsewhere), with its invoice unless `withInvoice` is false. */
export function seedSubscription(store: PayprocStore, seed: SubscriptionSeed): PayprocSubscription {
  const price = findPrice(store, seed.priceId, seed.lookupKey);
  const subscription = createSubscription(store, {
    customer: seed.customer,
    items: [{ price, quantity: seed.quantity }],
    status: seed.status,
    periodStart: seed.periodStart,
    periodEnd: seed.periodEnd,
    cancelAtPeriodEnd: seed.cancelAtPeriodEnd,
    metadata: seed.metadata,
    trialEnd: seed.trialEnd,
    created: seed.created,
  });
  if (seed.withInvoice ?? true) firstInvoice(store, subscription, "subscription_create");
  return subscription;
}

/** Applies a processor-side change; canceling stamps `canceled_at`/`ended_at`. */
export function patchSubscription(
  store: PayprocStore,
  id: string,
  patch: SubscriptionPatch,
): PayprocSubscription {
  const subscription = store.require("subscription", id);
  const items = subscription.items.data;
  if (patch.priceId !== undefined || patch.lookupKey !== undefined) {
    const price = findPrice(store, patch.priceId, patch.lookupKey);
    const first = items[0];
    if (first) {
      first.price = structuredClone(price);
      first.plan = planFromPrice(price);
    }
  }
  if (patch.quantity !== undefined && items[0]) items[0].quantity = patch.quantity;
  for (const item of items) {
    if (patch.periodStart !== undefined) item.current_period_start = patch.periodStart;
    if (patch.periodEnd !== undefined) item.current_period_end = patch.periodEnd;
  }
  if (patch.cancelAtPeriodEnd !== undefined) {
    subscription.cancel_at_period_end = patch.cancelAtPeriodEnd;
    subscription.cancel_at = patch.cancelAtPeriodEnd ? currentPeriod(subscription).end : null;
  }
  if (patch.cancelAt !== undefined) subscription.cancel_at = patch.cancelAt;
  if (patch.metadata) subscription.metadata = { ...subscription.metadata, ...patch.metadata };
  if (patch.trialEnd !== undefined) subscription.trial_end = patch.trialEnd;
  if (patch.canceledAt !== undefined) subscription.canceled_at = patch.canceledAt;
  if (patch.status === "canceled") cancelNow(store, subscription);
  else if (patch.status !== undefined) subscription.status = patch.status;
  return subscription;
}

/**
 * Moves a subscription into its next period as the processor does at period
 * end: a paid `subscription_cycle` invoice, or cancellation when
 * `cancel_at_period_end` was set.
 */
export function renewSubscription(
  store: PayprocStore,
  id: string,
): { subscription: PayprocSubscription; invoice: PayprocInvoice | null } {
  const subscription = store.require("subscription", id);
  if (subscription.cancel_at_period_end) {
    return { subscription: cancelNow(store, subscription), invoice: null };
  }
  for (const item of subscription.items.data) {
    const recurring = item.price.recurring;
    item.current_period_start = item.current_period_end;
    item.current_period_end = addInterval(
      item.current_period_end,
      recurring?.interval ?? "month",
      recurring?.interval_count ?? 1,
    );
  }
  if (subscription.status === "trialing") subscription.status = "active";
  const invoice = firstInvoice(store, subscription, "subscription_cycle");
  return { subscription, invoice };
}
