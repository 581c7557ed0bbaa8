/**
 * Our plans' lookup keys by price id: recognises a subscription's price when
 * the price lost its lookup key (keys move to the newest price of a plan).
 *
 * @module
 */
import type { Context } from "../context.ts";
import { planPrices } from "../plan_prices.ts";
import type { PlanKeysByPrice } from "./subscription_state.ts";

/** Lookup keys of our plans' current prices, by price id (cached with the prices). */
export async function planKeysByPrice(ctx: Context): Promise<PlanKeysByPrice> {
  const byKey = await planPrices(ctx);
  return new Map([...byKey].map(([key, priceId]) => [priceId, key]));
}
