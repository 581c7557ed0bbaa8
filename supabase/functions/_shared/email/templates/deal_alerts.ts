/**
 * Notices of deal money that needs attention: a payment the platform
 * returned on its own (to the buyer and to admins), could not return, or
 * whose refund failed after it was made (to admins), a dispute after the
 * money left escrow, a transfer to the seller of a refunded deal, and funds held in escrow close to the
 * processor's limit (to admins). Each is an in-app notice and an e-mail that
 * say the same thing.
 *
 * @module
 */
import { formatMoney, formatUtc } from "../../lib/format.ts";
import type { EmailContent } from "../render.ts";

/** One notice: the in-app title and body, and the e-mail. */
export interface DealAlertNotice {
  title: string;
  /** Plain text. */
  body: string;
  email: EmailContent;
}

/** Where a deal's admin page is. */
export function adminDealLink(dealId: string): string {
  return `/admin/deals/${dealId}`;
}

/** Why a payment could not be taken, as a reader would put it. */
const STRAY_REASONS: Record<string, string> = {
  deal_cancelled: "the deal had been cancelled when the payment went through",
  deal_already_paid: "the deal had already been paid by another payment",
  not_the_deal_payment: "the payment was not the deal's current payment (it had been replaced)",
  amount_mismatch: "the payment's amount was not the deal's price",
};

/** What {@linkcode strayReason} explains. */
export function strayReason(reason: string): string {
  return STRAY_REASONS[reason] ?? reason;
}

/** A stray payment: its deal and what was paid. */
export interface StrayPaymentFacts {
  dealId: string;
  listingTitle: string;
  amount: string;
  currency: string;
  reason: string;
  paymentIntentId: string;
}

const notice = (
  title: string,
  body: string,
  email: Omit<EmailContent, "heading" | "paragraphs"> & { paragraphs?: string[] },
): DealAlertNotice => ({
  title,
  body,
  email: { heading: title, ...email, paragraphs: [body, ...(email.paragraphs ?? [])] },
});

/** To the buyer: their payment was returned. */
export function paymentReturnedNotice(facts: StrayPaymentFacts): DealAlertNotice {
  const paid = formatMoney(facts.amount, facts.currency);
  return notice(
    "Your payment was refunded",
    `We refunded your payment of ${paid} for "${facts.listingTitle}": ${
      strayReason(facts.reason)
    }. Depending on your bank, the money is back on your card or account within 5 to 10 business days.`,
    {
      subject: `Refund of ${paid} for "${facts.listingTitle}"`,
      action: { label: "View the deal", url: `/deals/${facts.dealId}` },
      footer: "You receive this e-mail about a payment you made. No action is needed.",
    },
  );
}

/** To admins: a stray payment was returned automatically. */
export function adminPaymentReturnedNotice(
  facts: StrayPaymentFacts & { refundId: string },
): DealAlertNotice {
  const paid = formatMoney(facts.amount, facts.currency);
  return notice(
    "A payment was returned automatically",
    `A payment of ${paid} for "${facts.listingTitle}" was refunded to the buyer: ${
      strayReason(facts.reason)
    }.`,
    {
      subject: `Payment returned: ${paid} for "${facts.listingTitle}"`,
      items: [
        { title: `Payment ${facts.paymentIntentId}` },
        { title: `Refund ${facts.refundId}` },
      ],
      action: { label: "Open the deal", url: adminDealLink(facts.dealId) },
    },
  );
}

/** To admins: the processor refused to return a stray payment. */
export function adminPaymentReturnFailedNotice(
  facts: StrayPaymentFacts & { error: string },
): DealAlertNotice {
  const paid = formatMoney(facts.amount, facts.currency);
  return notice(
    "A payment could not be returned",
    `A payment of ${paid} for "${facts.listingTitle}" must go back to the buyer (${
      strayReason(facts.reason)
    }), but the payment processor refused the refund. Refund it in the processor's dashboard.`,
    {
      subject: `Action needed: refund ${paid} for "${facts.listingTitle}" by hand`,
      quote: facts.error,
      items: [{ title: `Payment ${facts.paymentIntentId}` }],
      action: { label: "Open the deal", url: adminDealLink(facts.dealId) },
    },
  );
}

/** To admins: a refund of a stray payment failed (or was cancelled) after it was made. */
export function adminPaymentReturnReversedNotice(
  facts: StrayPaymentFacts & {
    refundId: string;
    /** The refund's amount, in major units of the payment's currency. */
    refundAmount: string;
    /** `failed` or `canceled`. */
    refundStatus: string;
    /** The processor's `failure_reason`, if it gave one. */
    failureReason: string | null;
    /** Whether the buyer had been told the payment was refunded. */
    buyerWasTold: boolean;
  },
): DealAlertNotice {
  const paid = formatMoney(facts.amount, facts.currency);
  const refunded = formatMoney(facts.refundAmount, facts.currency);
  const why = facts.failureReason ? ` (${facts.failureReason.replaceAll("_", " ")})` : "";
  const what = facts.refundStatus === "canceled" ? "was cancelled" : `failed${why}`;
  return notice(
    "A returned payment came back",
    `The refund of ${refunded} to the buyer of "${facts.listingTitle}" ${what} after it was made, so the money is on the platform's balance again. The payment of ${paid} must go back to the buyer (${
      strayReason(facts.reason)
    }): the daily run refunds it again.`,
    {
      subject: `Refund failed: ${paid} for "${facts.listingTitle}" is back on the balance`,
      paragraphs: [
        facts.buyerWasTold
          ? "The buyer was told the payment was refunded. If the new refund fails too (a closed card or account), contact the buyer and return the money another way."
          : "If the new refund fails too (a closed card or account), contact the buyer and return the money another way.",
      ],
      items: [
        { title: `Payment ${facts.paymentIntentId}` },
        { title: `Refund ${facts.refundId}` },
      ],
      action: { label: "Open the deal", url: adminDealLink(facts.dealId) },
    },
  );
}

/** A dispute as the processor has it. */
export interface DisputeFacts {
  dealId: string;
  listingTitle: string;
  disputeId: string;
  amount: string;
  currency: string;
  reason: string;
  status: string;
  /** When evidence is due, if the dispute still takes some. */
  dueBy: Date | null;
  /** Where the deal's money had gone: the seller's payout or the buyer's refund. */
  after: "payout" | "refund" | "returned_payment";
  /** Whether the payout was taken back already. */
  payoutReversed: boolean;
}

/** To admins: a dispute opened (or was first seen) after the money left escrow. */
export function adminDisputeAfterPayoutNotice(facts: DisputeFacts): DealAlertNotice {
  const amount = formatMoney(facts.amount, facts.currency);
  const where = {
    payout: "after the seller was paid out",
    refund: "after the buyer was refunded",
    returned_payment: "on a payment the platform had already returned",
  }[facts.after];
  const due = facts.dueBy ? ` Evidence is due by ${formatUtc(facts.dueBy)}.` : "";
  const options = facts.after === "payout"
    ? facts.payoutReversed
      ? "The payout was already taken back from the seller."
      : "Either take the payout back from the seller (refund-deal-payment with reverseTransfer: true reverses the transfer; the dispute decides the buyer's money), or answer the dispute and accept the loss if it is lost."
    : "Answer the dispute in the processor's dashboard with the refund as evidence.";
  return notice(
    "Dispute after the money left escrow",
    `The buyer's bank disputed ${amount} for "${facts.listingTitle}" ${where} (reason: ${facts.reason}, status: ${facts.status}).${due}`,
    {
      subject: `Dispute on "${facts.listingTitle}" ${where}`,
      paragraphs: [options],
      items: [{ title: `Dispute ${facts.disputeId}` }],
      action: { label: "Open the deal", url: adminDealLink(facts.dealId) },
    },
  );
}

/** To admins: the payout went out while a dispute opened on the deal. */
export function adminPayoutDuringDisputeNotice(
  facts: { dealId: string; listingTitle: string; transferId: string },
): DealAlertNotice {
  return notice(
    "Payout released while a dispute opened",
    `The payout of "${facts.listingTitle}" reached the seller in the moment the buyer's bank opened a dispute. If the dispute is won the deal completes; if it is lost, the platform pays the buyer back unless the payout is taken back (refund-deal-payment with reverseTransfer: true).`,
    {
      subject: `Dispute on "${facts.listingTitle}" after its payout`,
      items: [{ title: `Transfer ${facts.transferId}` }],
      action: { label: "Open the deal", url: adminDealLink(facts.dealId) },
    },
  );
}

/** A transfer to the seller of a deal that is refunded: the buyer has the money back too. */
export interface PayoutAfterRefundFacts {
  dealId: string;
  listingTitle: string;
  transferId: string;
  /** What the seller still holds of the transfer (not reversed), in major units. */
  amount: string;
  currency: string;
  /** What the transfer was: the payout, the holdback or a repayout. */
  kind: string;
}

/** To admins: money reached the seller of a deal that is refunded. */
export function adminPayoutAfterRefundNotice(facts: PayoutAfterRefundFacts): DealAlertNotice {
  const amount = formatMoney(facts.amount, facts.currency);
  return notice(
    "Seller paid for a refunded deal",
    `The ${facts.kind} of ${amount} for "${facts.listingTitle}" reached the seller (transfer ${facts.transferId}), but the deal is refunded: the buyer has the money back too. Take the transfer back at the processor (reverse it) or settle with the seller.`,
    {
      subject: `Seller paid for refunded deal "${facts.listingTitle}"`,
      items: [{ title: `Transfer ${facts.transferId}`, detail: amount }],
      action: { label: "Open the deal", url: adminDealLink(facts.dealId) },
    },
  );
}

/** A deal whose money is held in escrow. */
export interface EscrowHoldFacts {
  dealId: string;
  listingTitle: string;
  amount: string;
  currency: string;
  status: string;
  fundedAt: Date;
  daysHeld: number;
  daysLeft: number;
  /** How long the processor holds a charge's funds. */
  holdDays: number;
}

/** To admins: a deal's funds are close to the processor's holding limit. */
export function adminEscrowHoldNotice(facts: EscrowHoldFacts): DealAlertNotice {
  const amount = formatMoney(facts.amount, facts.currency);
  return notice(
    "Escrow funds held too long",
    `${amount} for "${facts.listingTitle}" has been held in escrow for ${facts.daysHeld} days (since ${
      formatUtc(facts.fundedAt)
    }; the deal is ${
      facts.status.replace("_", " ")
    }). The processor holds funds for at most ${facts.holdDays} days: ${facts.daysLeft} days left to release the payout or refund the buyer.`,
    {
      subject: `Escrow: ${facts.daysLeft} days left for "${facts.listingTitle}"`,
      action: { label: "Open the deal", url: adminDealLink(facts.dealId) },
    },
  );
}
