/**
 * `get-price-id` (public): maps a plan-interval key (e.g. `starter_monthly`)
 * to the payment processor's price id through the prices' lookup keys.
 *
 * @module
 */
import { PLAN_INTERVAL_KEYS } from "../../../shared/plans.ts";
import { invalidInput } from "../_shared/platform/errors.ts";
import { defineFunction } from "../_shared/platform/function.ts";
import { ourPlans } from "../_shared/billing/plan_prices.ts";

export default defineFunction({
  name: "get-price-id",
  access: "public",
  group: "billing",
  summary: "Maps a plan-interval key to a price id",
  input: () => import("../../../shared/schemas.ts").then((schemas) => schemas.GetPriceIdInput),
  output: "GetPriceIdOutput",
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
