/**
 * Our plans' prices at the payment processor, found by lookup key (the
 * plan-interval keys of `shared/plans.ts`) in one call and cached briefly in
 * the isolate.
 *
 * @module
 */
import { PLAN_INTERVAL_KEYS } from "../../../shared/plans.ts";
import type { Context } from "./context.ts";
import { TtlCache } from "./ttl_cache.ts";

/** How long looked-up price ids stay cached. */
export const PRICE_CACHE_MS = 5 * 60_000;

/** Active price ids of our plans by lookup key. */
export async function planPrices(ctx: Context): Promise<ReadonlyMap<string, string>> {
  const cache = ctx.runtime.cache(
    "plan-prices",
    () => new TtlCache<ReadonlyMap<string, string>>(PRICE_CACHE_MS),
  );
  const cached = cache.get("all");
  if (cached) return cached;
  const list = await ctx.payproc.prices.list({
    lookup_keys: [...PLAN_INTERVAL_KEYS],
    active: true,
    limit: 100,
  });
  const prices = new Map<string, string>();
  for (const price of list.data) if (price.lookup_key) prices.set(price.lookup_key, price.id);
  cache.set("all", prices);
  return prices;
}
