/**
 * Our plans at the payment processor: the active price of each plan-interval
 * key (found by lookup key, the keys of `shared/plans.ts`), and which plan a
 * price sells — only ever one of our own prices or another price of the same
 * product (a plan's older price, after its lookup key moved to a new one).
 * A price's own lookup key is never trusted: anyone can name a price
 * `pro_monthly` on their own account. Looked up in one call and cached
 * briefly in the isolate.
 *
 * @module
 */
import type Stripe from "stripe";
import {
  type PaidPlan,
  parsePlanIntervalKey,
  PLAN_INTERVAL_KEYS,
} from "../../../../shared/plans.ts";
import type { Context } from "../platform/context.ts";
import { TtlCache } from "../lib/ttl_cache.ts";
import { payprocFor } from "../platform/payproc.ts";

/** How long looked-up prices stay cached. */
export const PRICE_CACHE_MS = 5 * 60_000;

/** A price as subscriptions carry it. */
export type PriceRef = Pick<Stripe.Price, "id" | "product">;

/** Our plans' prices, and the plan of a price. */
export interface OurPlans {
  /** Active price id of each plan-interval key that has one. */
  readonly priceIdByKey: ReadonlyMap<string, string>;
  /** The plan `price` sells; null when it is not one of ours. */
  planOf(price: PriceRef): PaidPlan | null;
}

/** Builds {@linkcode OurPlans} from the prices listed by our lookup keys. */
export function plansFromPrices(prices: readonly Stripe.Price[]): OurPlans {
  const priceIdByKey = new Map<string, string>();
  const planByPrice = new Map<string, PaidPlan>();
  const planByProduct = new Map<string, PaidPlan | null>();
  for (const price of prices) {
    const plan = price.lookup_key ? parsePlanIntervalKey(price.lookup_key)?.plan : undefined;
    if (!plan || !price.lookup_key) continue;
    priceIdByKey.set(price.lookup_key, price.id);
    planByPrice.set(price.id, plan);
    const product = productId(price);
    if (product === null) continue;
    // A product selling two plans cannot tell its other prices apart.
    const known = planByProduct.get(product);
    planByProduct.set(product, known === undefined || known === plan ? plan : null);
  }
  return {
    priceIdByKey,
    planOf(price) {
      const product = productId(price);
      return planByPrice.get(price.id) ??
        (product === null ? null : planByProduct.get(product) ?? null);
    },
  };
}

function productId(price: PriceRef): string | null {
  const product = price.product;
  if (typeof product === "string") return product;
  return product && !("deleted" in product && product.deleted) ? product.id : null;
}

/** Our plans (one processor call, then cached for {@linkcode PRICE_CACHE_MS}). */
export async function ourPlans(ctx: Context): Promise<OurPlans> {
  const cache = ctx.runtime.cache("plan-prices", () => new TtlCache<OurPlans>(PRICE_CACHE_MS));
  const cached = cache.get("all");
  if (cached) return cached;
  const payproc = await payprocFor(ctx);
  const list = await payproc.prices.list({
    lookup_keys: [...PLAN_INTERVAL_KEYS],
    active: true,
    limit: 100,
  });
  const plans = plansFromPrices(list.data);
  cache.set("all", plans);
  return plans;
}
