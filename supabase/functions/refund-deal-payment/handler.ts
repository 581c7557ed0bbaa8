/**
 * `refund-deal-payment` (admin) `{ dealId, reason?, reverseTransfer? }`:
 * refunds the buyer's payment in full (idempotency key `refund:<dealId>`)
 * and marks the deal refunded. While a payout is being released: 409. After
 * the payout: 409 unless `reverseTransfer: true`, which takes the transfer
 * back from the seller first. Disputed deals: 409 (the dispute decides).
 * Repeating it answers the same result (`_shared/deals/refunds.ts`).
 * Answers the deal's state, payout and refund.
 *
 * @module
 */
import { refundDeal } from "../_shared/deals/refunds.ts";
import { defineFunction } from "../_shared/platform/function.ts";

export default defineFunction({
  name: "refund-deal-payment",
  access: "admin",
  group: "deals",
  summary: "Refunds a deal's payment (reversing a released payout when asked)",
  input: () =>
    import("../../../shared/deal_schemas.ts").then((schemas) => schemas.RefundDealPaymentInput),
  output: "DealSettlementOutput",
  async handle({ input, caller, ctx }) {
    return await refundDeal(ctx, {
      dealId: input.dealId,
      reason: input.reason,
      reverseTransfer: input.reverseTransfer,
      actor: caller.id,
    });
  },
});
