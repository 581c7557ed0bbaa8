/**
 * What a processor subscription means for us: the plan (only from our own
 * prices, see `plan_prices.ts`), the billing period (on the items, in the
 * pinned API version), the status and the cancellation flag. Pure;
 * `subscription_sync.ts` writes it.
 *
 * @module
 */
import type Stripe from "stripe";
import type { PaidPlan } from "../../../../shared/plans.ts";
import type { OurPlans } from "./plan_prices.ts";

/** A subscription level as `subscriptions.subscription_level` stores it. */
export type SubscriptionLevel = "free" | PaidPlan;

/** A processor subscription status (all of them fit `subscriptions.subscription_status`). */
export type SubscriptionStatus = Stripe.Subscription.Status;

/** Statuses that give the subscription's level (with the period not over). */
export const ENTITLED_STATUSES: readonly SubscriptionStatus[] = ["active", "trialing"];

/** Statuses of a subscription that still exists and may bill or recover. */
export const LIVE_STATUSES: readonly SubscriptionStatus[] = [
  "active",
  "trialing",
  "past_due",
  "unpaid",
  "paused",
  "incomplete",
];

/** Statuses a subscription never leaves. */
export const ENDED_STATUSES: readonly SubscriptionStatus[] = ["canceled", "incomplete_expired"];

/** Our row's view of a processor subscription. */
export interface SubscriptionState {
  subscriptionId: string;
  customerId: string;
  level: SubscriptionLevel;
  status: SubscriptionStatus;
  priceId: string | null;
  interval: "month" | "year" | null;
  periodStart: Date | null;
  periodEnd: Date | null;
  cancelAtPeriodEnd: boolean;
  /** When the processor created the subscription (ranks two live ones). */
  created: number;
}

/** The processor id of an expandable field. */
export function idOf(value: string | { id: string }): string {
  return typeof value === "string" ? value : value.id;
}

const PLAN_RANK: Record<SubscriptionLevel, number> = { free: 0, starter: 1, pro: 2 };

/** Orders levels: pro above starter above free. */
export function planRank(level: SubscriptionLevel): number {
  return PLAN_RANK[level];
}

/** Orders statuses by how much they are worth keeping: entitled, recoverable, starting, ended. */
export function statusRank(status: SubscriptionStatus): number {
  if (ENTITLED_STATUSES.includes(status)) return 3;
  if (status === "incomplete") return 1;
  if (LIVE_STATUSES.includes(status)) return 2;
  return 0;
}

function toDate(seconds: number | null | undefined): Date | null {
  return typeof seconds === "number" && seconds > 0 ? new Date(seconds * 1000) : null;
}

/** Maps a processor subscription to our row's values. */
export function subscriptionState(
  subscription: Stripe.Subscription,
  plans: OurPlans,
): SubscriptionState {
  const items = subscription.items.data;
  let chosen: Stripe.SubscriptionItem | undefined;
  let level: SubscriptionLevel = "free";
  for (const item of items) {
    const plan = plans.planOf(item.price);
    if (plan !== null && (chosen === undefined || planRank(plan) > planRank(level))) {
      chosen = item;
      level = plan;
    }
  }
  chosen ??= items[0];
  const interval = chosen?.price.recurring?.interval;
  let periodStart = toDate(chosen?.current_period_start);
  const periodEnd = toDate(chosen?.current_period_end);
  if (periodStart && periodEnd && periodEnd < periodStart) periodStart = periodEnd;
  const cancelAt = subscription.cancel_at;
  return {
    subscriptionId: subscription.id,
    customerId: idOf(subscription.customer),
    level,
    status: subscription.status,
    priceId: chosen?.price.id ?? null,
    interval: interval === "month" ? "month" : interval === "year" ? "year" : null,
    periodStart,
    periodEnd,
    cancelAtPeriodEnd: subscription.cancel_at_period_end ||
      (cancelAt !== null && periodEnd !== null && cancelAt * 1000 <= periodEnd.getTime()),
    created: subscription.created,
  };
}

/** The subscription most worth mirroring: best status, then plan, then newest. */
export function chooseSubscription(
  subscriptions: readonly Stripe.Subscription[],
  plans: OurPlans,
): Stripe.Subscription | null {
  let best: { subscription: Stripe.Subscription; key: [number, number, number] } | null = null;
  for (const subscription of subscriptions) {
    const state = subscriptionState(subscription, plans);
    const key: [number, number, number] = [
      statusRank(state.status),
      planRank(state.level),
      state.created,
    ];
    if (best === null || compareKeys(key, best.key) > 0) best = { subscription, key };
  }
  return best?.subscription ?? null;
}

function compareKeys(a: readonly number[], b: readonly number[]): number {
  for (let i = 0; i < a.length; i++) {
    const d = (a[i] ?? 0) - (b[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}
