/**
 * The payment e-mails of a deal: who hears about each event, and what they
 * read, with amounts formatted in the deal's currency.
 *
 * @module
 */
import type { PaymentEmailKind } from "../../../../../shared/notifications.ts";
import { fromMinorUnits, toMinorUnits } from "../../lib/money.ts";
import type { EmailContent } from "../render.ts";
import { formatMoney } from "../../lib/format.ts";

/** A deal as the payment e-mails describe it (amounts in major units, as stored). */
export interface PaymentDeal {
  id: string;
  listingTitle: string;
  amount: string;
  /** Our commission on the amount. */
  commission: string;
  currency: string;
  /**
   * What the payout paid when it differs from amount − commission: a letter
   * of intent's holdback comes later (`holdback`, paid at
   * `holdbackReleaseAt`), or a dispute case refunded part.
   */
  paid?: { payout: string; holdback: string | null; holdbackReleaseAt: Date | null };
}

/** The seller's payout: amount minus commission, in major units. */
export function payoutAmount(deal: PaymentDeal): string {
  const minor = toMinorUnits(deal.amount, deal.currency) -
    toMinorUnits(deal.commission, deal.currency);
  return fromMinorUnits(minor, deal.currency);
}

/** One recipient's notice of a payment event. */
export interface PaymentNotice {
  role: "buyer" | "seller";
  title: string;
  body: string;
  email: EmailContent;
}

/** The notices of `kind` for `deal`: the right party or parties. */
export function paymentNotices(kind: PaymentEmailKind, deal: PaymentDeal): PaymentNotice[] {
  const price = formatMoney(deal.amount, deal.currency);
  const title = deal.listingTitle;
  const link = `/deals/${deal.id}`;
  const notice = (
    role: PaymentNotice["role"],
    subject: string,
    body: string,
    action: string,
  ): PaymentNotice => ({
    role,
    title: subject,
    body,
    email: { subject, heading: subject, paragraphs: [body], action: { label: action, url: link } },
  });
  switch (kind) {
    case "payment_received":
      return [
        notice(
          "buyer",
          "Payment received",
          `We received your payment of ${price} for "${title}". It is held in escrow until the handover is complete.`,
          "View the deal",
        ),
        notice(
          "seller",
          "The buyer has paid",
          `The buyer paid ${price} for "${title}" into escrow. Start the handover now.`,
          "Start the handover",
        ),
      ];
    case "payout_released": {
      if (deal.paid) {
        const paid = formatMoney(deal.paid.payout, deal.currency);
        const later = deal.paid.holdback && deal.paid.holdbackReleaseAt
          ? ` The holdback of ${formatMoney(deal.paid.holdback, deal.currency)} follows on ${
            deal.paid.holdbackReleaseAt.toISOString().slice(0, 10)
          }, unless a dispute case is open then.`
          : "";
        return [
          notice(
            "seller",
            "Payout released",
            `Your payout of ${paid} for "${title}" (after our fee of ${
              formatMoney(deal.commission, deal.currency)
            }) is on its way to your payout account.${later}`,
            "View the deal",
          ),
          notice(
            "buyer",
            later ? "Seller paid" : "Deal complete",
            later
              ? `The inspection of "${title}" is over and the seller has been paid; the holdback stays in escrow until ${
                deal.paid.holdbackReleaseAt!.toISOString().slice(0, 10)
              }.`
              : `The deal for "${title}" is complete and the seller has been paid. Thank you!`,
            "View the deal",
          ),
        ];
      }
      const payout = formatMoney(payoutAmount(deal), deal.currency);
      return [
        notice(
          "seller",
          "Payout released",
          `Your payout of ${payout} for "${title}" (${price} less our fee of ${
            formatMoney(deal.commission, deal.currency)
          }) is on its way to your payout account.`,
          "View the deal",
        ),
        notice(
          "buyer",
          "Deal complete",
          `The deal for "${title}" is complete and the seller has been paid. Thank you!`,
          "View the deal",
        ),
      ];
    }
    case "refund_issued":
      return [
        notice(
          "buyer",
          "Refund issued",
          `We refunded your payment of ${price} for "${title}". Depending on your bank it may take 5 to 10 days to show.`,
          "View the deal",
        ),
        notice(
          "seller",
          "Deal refunded",
          `The buyer's payment of ${price} for "${title}" was refunded; the deal is closed.`,
          "View the deal",
        ),
      ];
    case "payment_failed":
      return [
        notice(
          "buyer",
          "Payment failed",
          `Your payment of ${price} for "${title}" did not go through. No money was taken; please try again.`,
          "Try again",
        ),
      ];
  }
}
