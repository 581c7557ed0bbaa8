/**
 * `get-price-id` (public): maps a plan-interval key (e.g. `starter_monthly`)
 * to the payment processor's price id through the prices' lookup keys.
 *
 * @module
 */
import { PLAN_INTERVAL_KEYS } from "../../../shared/plans.ts";
import { invalidInput } from "../_shared/errors.ts";
import { defineFunction } from "../_shared/function.ts";
import { ourPlans } from "../_shared/plan_prices.ts";

export default defineFunction("get-price-id", {
  async handle({ input, ctx }) {
    if (!(PLAN_INTERVAL_KEYS as readonly string[]).includes(input.plan)) {
      throw invalidInput(`Cannot find a price: plan "${input.plan}" is not one of our plans`, {
        plans: PLAN_INTERVAL_KEYS,
      });
    }
    const priceId = (await ourPlans(ctx)).priceIdByKey.get(input.plan);
    if (!priceId) {
      throw invalidInput(`Cannot find a price: plan "${input.plan}" has no active price`);
    }
    return { priceId };
  },
});
