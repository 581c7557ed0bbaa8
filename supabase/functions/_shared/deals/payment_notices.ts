/**
 * The payment notices of a deal (`send-payment-email` kinds), written in
 * the caller's transaction: in-app rows now, e-mails into the request's
 * outbox (sent after the commit). Idempotent per deal, kind and recipient.
 * Amounts use the commission frozen on the deal when it has one.
 *
 * @module
 */
import type { EmailType, PaymentEmailKind } from "../../../../shared/notifications.ts";
import type { Context } from "../platform/context.ts";
import type { Sql } from "../platform/db.ts";
import type { DealAlertNotice } from "../email/templates/deal_alerts.ts";
import { paymentNotices } from "../email/templates/payments.ts";
import { type NoticeOutcome, queueNotice } from "../notifications/notify.ts";

/** Writes the `kind` notices of deal `dealId`; null when the deal does not exist. */
export async function queuePaymentNotices(
  ctx: Context,
  sql: Sql,
  dealId: string,
  kind: PaymentEmailKind,
): Promise<NoticeOutcome[] | null> {
  const deal = await sql.maybeOne<{
    id: string;
    buyer_id: string;
    seller_id: string;
    amount: string;
    currency: string;
    commission: string;
    listing_title: string;
    paid_payout: string | null;
    plain_payout: boolean;
    holdback: string | null;
    holdback_release_at: Date | null;
  }>(
    `select d.id, d.buyer_id, d.seller_id, d.amount::text as amount, d.currency,
            coalesce(d.commission, public.deal_commission(d.amount, d.currency, d.seller_id))::text
              as commission,
            l.title as listing_title, p.amount::text as paid_payout,
            p.amount is not distinct from d.amount - d.commission as plain_payout,
            case when p.amount is not null then public.deal_transfer_amount(d.id, 'holdback')::text
            end as holdback,
            d.holdback_release_at
     from public.deals d join public.listings l on l.id = d.listing_id
       left join public.deal_settlements p
         on p.deal_id = d.id and p.kind = 'payout' and p.status in ('succeeded', 'reversed')
     where d.id = $1`,
    [dealId],
  );
  if (!deal) return null;
  // A payout other than amount − commission (a holdback follows, or a case
  // refunded part) says what it paid.
  const paid = deal.paid_payout !== null && !deal.plain_payout
    ? {
      payout: deal.paid_payout,
      holdback: deal.holdback,
      holdbackReleaseAt: deal.holdback_release_at,
    }
    : undefined;
  const notices = paymentNotices(kind, {
    id: deal.id,
    listingTitle: deal.listing_title,
    amount: deal.amount,
    commission: deal.commission,
    currency: deal.currency,
    ...(paid ? { paid } : {}),
  });
  const results: NoticeOutcome[] = [];
  for (const notice of notices) {
    results.push(
      await queueNotice(ctx, sql, {
        userId: notice.role === "buyer" ? deal.buyer_id : deal.seller_id,
        type: "payments",
        title: notice.title,
        body: notice.body,
        link: `/deals/${deal.id}`,
        data: { dealId: deal.id, kind, role: notice.role },
        key: `payment:${kind}:${deal.id}`,
        email: { emailType: kind, content: notice.email },
      }),
    );
  }
  return results;
}

/** What {@linkcode queueSideNotices} writes to each side of a deal. */
export interface SideNotices {
  /** The notice's kind, in its `data`. */
  kind: string;
  /** Its dedupe key (per user). */
  key: string;
  emailType: EmailType;
  /** More of its `data`. */
  data: Record<string, unknown>;
  /** The side's notice, given the listing's title. */
  build(side: "buyer" | "seller", listingTitle: string): DealAlertNotice;
}

/**
 * Writes a `payments` notice to the buyer and the seller of `deal`, in the
 * caller's transaction, once each per key: what money moved for both.
 */
export async function queueSideNotices(
  ctx: Context,
  sql: Sql,
  deal: { id: string; listing_id: string; buyer_id: string; seller_id: string },
  notices: SideNotices,
): Promise<NoticeOutcome[]> {
  const { title } = await sql.one<{ title: string }>(
    "select title from public.listings where id = $1",
    [deal.listing_id],
  );
  const outcomes: NoticeOutcome[] = [];
  for (const side of ["buyer", "seller"] as const) {
    const notice = notices.build(side, title);
    outcomes.push(
      await queueNotice(ctx, sql, {
        userId: side === "buyer" ? deal.buyer_id : deal.seller_id,
        type: "payments",
        title: notice.title,
        body: notice.body,
        link: `/deals/${deal.id}`,
        data: { dealId: deal.id, kind: notices.kind, ...notices.data },
        key: notices.key,
        email: { emailType: notices.emailType, content: notice.email },
      }),
    );
  }
  return outcomes;
}
