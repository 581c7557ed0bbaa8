/**
 * Plans and the plan-interval keys used to look up prices.
 *
 * @module
 */

/** Viewer plans of the blur policy, from least to most access. */
export const PLANS = ["unauth", "free", "starter", "pro"] as const;
/** A viewer plan. */
export type Plan = (typeof PLANS)[number];

/** Plans a user can subscribe to. */
export const PAID_PLANS = ["starter", "pro"] as const;
/** A paid plan. */
export type PaidPlan = (typeof PAID_PLANS)[number];

/** Billing intervals, as keys use them. */
export const BILLING_INTERVALS = ["monthly", "yearly"] as const;
/** A billing interval. */
export type BillingInterval = (typeof BILLING_INTERVALS)[number];

/** Plan-interval keys: the payment processor's price lookup keys. */
export const PLAN_INTERVAL_KEYS = [
  "starter_monthly",
  "starter_yearly",
  "pro_monthly",
  "pro_yearly",
] as const;
/** A plan-interval key such as `starter_monthly`. */
export type PlanIntervalKey = (typeof PLAN_INTERVAL_KEYS)[number];

/** Splits `pro_yearly` into `{ plan: "pro", interval: "yearly" }`; null for other strings. */
export function parsePlanIntervalKey(
  key: string,
): { plan: PaidPlan; interval: BillingInterval } | null {
  if (!(PLAN_INTERVAL_KEYS as readonly string[]).includes(key)) return null;
  const [plan, interval] = key.split("_") as [PaidPlan, BillingInterval];
  return { plan, interval };
}
