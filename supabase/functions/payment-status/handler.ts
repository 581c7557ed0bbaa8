/**
 * `payment-status` (either participant) `{ dealId }`: the deal's state and
 * money — amount, commission (frozen once funded, else what it would be
 * now), the seller's payout amount, the processor's payment status, and the
 * payout and refund. A deal still pending payment is first reconciled with
 * the processor, so a payment whose webhook is late shows (and funds the
 * deal) at once; with the processor down, the stored state is answered.
 *
 * @module
 */
import { DEAL_COLUMNS, type DealRow, findDeal } from "../_shared/deals/deal_rows.ts";
import { reconcilePayment } from "../_shared/deals/escrow.ts";
import { settlementReport, settlementsOf } from "../_shared/deals/settlements.ts";
import { defineFunction } from "../_shared/function.ts";
import { isPayprocError } from "../_shared/payproc.ts";

export default defineFunction("payment-status", {
  rateLimit: { limit: 60, windowSeconds: 60 },
  async handle({ input, ctx }) {
    // The access rule found the deal; it exists. Reconciling is a courtesy:
    // with the processor down, the stored state is still the answer.
    try {
      await reconcilePayment(ctx, (await findDeal(ctx.db, input.dealId))!);
    } catch (error) {
      if (!isPayprocError(error)) throw error;
      ctx.log.warn("payment not reconciled: the processor failed", { deal_id: input.dealId });
    }
    const deal = await ctx.db.one<DealRow & { commission_now: string; seller_payout: string }>(
      `select ${DEAL_COLUMNS},
              coalesce(d.commission, public.deal_commission(d.amount, d.currency, d.seller_id))::text
                as commission_now,
              (d.amount - coalesce(d.commission, public.deal_commission(d.amount, d.currency, d.seller_id)))
                ::text as seller_payout
       from public.deals d where d.id = $1`,
      [input.dealId],
    );
    const { payout, refund } = await settlementsOf(ctx.db, deal.id);
    return {
      dealId: deal.id,
      status: deal.status,
      amount: deal.amount,
      currency: deal.currency,
      commission: deal.commission_now,
      commissionFrozen: deal.commission !== null,
      sellerPayout: deal.seller_payout,
      payment: {
        status: deal.payment_status,
        paymentIntentId: deal.payproc_payment_intent_id,
        checkoutSessionId: deal.payproc_checkout_session_id,
        fundedAt: deal.funded_at?.toISOString() ?? null,
      },
      payout: settlementReport(payout),
      refund: settlementReport(refund),
    };
  },
});
