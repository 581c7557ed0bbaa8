/**
 * `send-payment-email` (system): the payment e-mails of a deal, `{ dealId,
 * kind }` with kind `payment_received`, `payout_released`, `refund_issued`
 * or `payment_failed` — to the party or parties concerned, amounts in the
 * deal's currency, each also as an in-app notice. Idempotent per deal, kind
 * and recipient: a repeated call sends nothing again. Answers one result
 * per recipient.
 *
 * @module
 */
import { type PaymentDeal, paymentNotices } from "../_shared/email/templates/payments.ts";
import { notFound } from "../_shared/errors.ts";
import { defineFunction } from "../_shared/function.ts";
import { sendNotices } from "../_shared/notifications/notify.ts";

export default defineFunction("send-payment-email", {
  async handle({ input, ctx }) {
    const deal = await ctx.db.maybeOne<{
      id: string;
      buyer_id: string;
      seller_id: string;
      amount: string;
      currency: string;
      commission: string;
      listing_title: string;
    }>(
      `select d.id, d.buyer_id, d.seller_id, d.amount::text as amount, d.currency,
              public.calculate_commission(d.amount, d.seller_id)::text as commission,
              l.title as listing_title
       from public.deals d join public.listings l on l.id = d.listing_id
       where d.id = $1`,
      [input.dealId],
    );
    if (!deal) throw notFound(`Deal "${input.dealId}" does not exist`);
    const described: PaymentDeal = {
      id: deal.id,
      listingTitle: deal.listing_title,
      amount: deal.amount,
      commission: deal.commission,
      currency: deal.currency,
    };
    const results = await sendNotices(
      ctx,
      paymentNotices(input.kind, described).map((notice) => ({
        userId: notice.role === "buyer" ? deal.buyer_id : deal.seller_id,
        type: "payments" as const,
        title: notice.title,
        body: notice.body,
        link: `/deals/${deal.id}`,
        data: { dealId: deal.id, kind: input.kind, role: notice.role },
        key: `payment:${input.kind}:${deal.id}`,
        email: { emailType: input.kind, content: notice.email },
      })),
    );
    return { results };
  },
});
