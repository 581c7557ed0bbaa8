/**
 * `cancel-deal` (the deal's buyer, its seller, or an admin) `{ dealId,
 * reason? }`: cancels a deal still pending payment. A deal whose payment was
 * started is stopped at the processor first — its payment intent cancelled,
 * its hosted checkout expired — and only then cancelled; a payment that
 * already succeeded funds the deal instead and answers 409 `already_paid`.
 * Answers `{ dealId, status: "cancelled", alreadyCancelled, payment }`.
 *
 * @module
 */
import { cancelDeal } from "../_shared/deals/cancel.ts";
import { defineFunction } from "../_shared/platform/function.ts";

export default defineFunction({
  name: "cancel-deal",
  access: "deal-participant-or-admin",
  group: "deals",
  summary:
    "Cancels a deal before it is paid, stopping its payment at the processor first (its buyer, its seller or an admin)",
  // Beyond the interface: stopping a started payment at the processor before
  // the deal is cancelled is something SQL (the cancel_deal RPC) cannot do.
  beyondInterface: "a cancel must not race the buyer's payment",
  input: () => import("../../../shared/deal_schemas.ts").then((schemas) => schemas.CancelDealInput),
  output: "CancelDealOutput",
  rateLimit: { limit: 10, windowSeconds: 60 },
  async handle({ input, caller, ctx }) {
    // The access rule found the deal and checked the caller is its buyer,
    // its seller or an admin.
    return await cancelDeal(ctx, { dealId: input.dealId, actor: caller.id, reason: input.reason });
  },
});
