/**
 * `create-deal-payment` (the deal's buyer; the seller gets 403): the client
 * secret of the deal's escrow payment intent for the client payment form
 * (see `docs/deals.md#paying-a-deal-buyer`) — the existing intent while it can still be paid,
 * else a new one for the deal's amount and currency, with the deal's
 * `transfer_group` and `metadata.deal_id`. 409 once the deal is paid or
 * cancelled. The webhook (or payment-status) funds the deal when it succeeds.
 *
 * @module
 */
import { buyersPendingDeal, ensurePaymentIntent } from "../_shared/deals/escrow.ts";
import { defineFunction } from "../_shared/platform/function.ts";

export default defineFunction({
  name: "create-deal-payment",
  access: "deal-participant",
  group: "deals",
  summary: "Creates the escrow payment of a deal",
  input: () =>
    import("../../../shared/schemas.ts").then((schemas) => schemas.CreateDealPaymentInput),
  output: "CreateDealPaymentOutput",
  rateLimit: { limit: 30, windowSeconds: 60 },
  async handle({ input, caller, ctx }) {
    const deal = await buyersPendingDeal(ctx, input.dealId, caller.id);
    return { client_secret: await ensurePaymentIntent(ctx, deal) };
  },
});
