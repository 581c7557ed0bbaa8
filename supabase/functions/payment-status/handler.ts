/**
 * `payment-status` (the deal's buyer, its seller, or an admin reading any
 * deal) `{ dealId }`: the deal's state and
 * money — amount, commission (frozen once funded, else what it would be
 * now), the seller's payout amount, the processor's payment status, and the
 * payout and refund. A deal still pending payment is first reconciled with
 * the processor, so a payment whose webhook is late shows (and funds the
 * deal) at once; with the processor down, the stored state is answered.
 * An admin's call changes nothing the processor has not already decided:
 * reconciling only records a payment that happened.
 *
 * @module
 */
import type { Sql } from "../_shared/platform/db.ts";
import { DEAL_COLUMNS, type DealRow } from "../_shared/deals/deal_rows.ts";
import { reconcilePayment } from "../_shared/deals/escrow.ts";
import { settlementReport, settlementsOf } from "../_shared/deals/settlements.ts";
import { defineFunction } from "../_shared/platform/function.ts";
import { isPayprocError } from "../_shared/platform/payproc.ts";

/** The deal with its commission as it is (frozen) or would be now, and the seller's share. */
type StatusRow = DealRow & { commission_now: string; seller_payout: string };

function statusRow(db: Sql, dealId: string): Promise<StatusRow> {
  return db.one<StatusRow>(
    `select ${DEAL_COLUMNS}, c.commission::text as commission_now,
            (d.amount - c.commission)::text as seller_payout
     from public.deals d,
          lateral (select coalesce(d.commission,
                     public.deal_commission(d.amount, d.currency, d.seller_id)) as commission) c
     where d.id = $1`,
    [dealId],
  );
}

export default defineFunction({
  name: "payment-status",
  access: "deal-participant-or-admin",
  group: "deals",
  summary:
    "Returns a deal's payment status, reconciled with the processor (its buyer, its seller or an admin)",
  input: () =>
    import("../../../shared/schemas.ts").then((schemas) => schemas.CreateDealPaymentInput),
  output: "PaymentStatusOutput",
  rateLimit: { limit: 60, windowSeconds: 60 },
  async handle({ input, ctx }) {
    // The access rule found the deal; it exists.
    let deal = await statusRow(ctx.db, input.dealId);
    if (deal.status === "pending_payment") {
      // Reconciling is a courtesy: with the processor down, the stored state
      // is still the answer.
      try {
        const reconciled = await reconcilePayment(ctx, deal);
        if (reconciled.updated_at.getTime() !== deal.updated_at.getTime()) {
          deal = await statusRow(ctx.db, input.dealId);
        }
      } catch (error) {
        if (!isPayprocError(error)) throw error;
        ctx.log.warn("payment not reconciled: the processor failed", { deal_id: input.dealId });
      }
    }
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
