/**
 * Notices of offers with letter-of-intent terms and of their deals' due
 * diligence (`send-queued-notices`): to the other side, a counter-offer; to
 * the author of a version, its acceptance; to the seller, the buyer's
 * confirmation of due diligence; to the other side, a withdrawal during due
 * diligence; to the buyer, an extended exclusivity; to both sides, the
 * exclusivity ending in 48 hours and its lapse. Each is an in-app notice and
 * an e-mail that say the same thing, under the `handover` preference ("Your
 * deals"). They name the listing by its title only, which every viewer sees.
 *
 * @module
 */
import { countOf, formatMoney, formatUtc } from "../../lib/format.ts";
import { holdbackOf, type OfferTerms } from "../../../../../shared/offer_terms.ts";
import type { EmailContent } from "../render.ts";

/** A side of an offer or a deal. */
export type DealSide = "buyer" | "seller";

/** An offer version as its notices describe it. */
export interface OfferFacts {
  offerId: string;
  listingId: string;
  /** The listing's title. */
  title: string;
  /** Who wrote this version. */
  by: DealSide;
  /** Major units, as stored: "1000.00". */
  amount: string;
  currency: string;
  /** As stored (`offers.terms`: normalized by the database), or null for a plain offer. */
  terms: OfferTerms | null;
  /** The author's note, if any. */
  message: string | null;
  /** When the version lapses unanswered. */
  expiresAt: Date;
}

/** A deal as its notices describe it. */
export interface LoiDealFacts {
  dealId: string;
  listingId: string;
  /** The listing's title. */
  title: string;
  /** Major units, as stored. */
  amount: string;
  currency: string;
  /** `deals.status` now. */
  status: string;
  /** When the buyer's exclusivity ends (ended); null for a deal that never was in due diligence. */
  exclusiveUntil: Date | null;
}

/** One notice: the in-app title and body, its link, and the e-mail. */
export interface LoiNotice {
  title: string;
  /** Plain text. */
  body: string;
  link: string;
  email: EmailContent;
}

/** An offer version's page. */
export function offerLink(offerId: string): string {
  return `/offers/${offerId}`;
}

/** A deal's page. */
export function dealLink(dealId: string): string {
  return `/deals/${dealId}`;
}

const FOOTER =
  "You receive this e-mail about an offer or a deal you take part in. Switch deal notices off in your notification settings.";

/** The other side. */
export function otherSide(side: DealSide): DealSide {
  return side === "buyer" ? "seller" : "buyer";
}

/** `amount` in `currency`, as the notices write money. */
function money(amount: string, currency: string): string {
  return formatMoney(amount, currency);
}

/**
 * The terms, one line each: cash at close, the holdback and its days,
 * inspection, exclusivity, the proposed close date and the conditions.
 */
export function termLines(amount: string, currency: string, terms: OfferTerms): string[] {
  const lines = [`Cash at close: ${money(terms.cash_at_close, currency)}`];
  lines.push(
    terms.holdback_days > 0
      ? `Holdback: ${money(holdbackOf(amount, terms), currency)}, released after ${
        countOf(terms.holdback_days, "day")
      }`
      : "Holdback: none",
  );
  lines.push(`Inspection period: ${countOf(terms.inspection_days, "day")}`);
  lines.push(
    terms.exclusivity_days > 0
      ? `Exclusivity for due diligence: ${countOf(terms.exclusivity_days, "day")}`
      : "Exclusivity for due diligence: none (straight to payment)",
  );
  lines.push(`Proposed close date: ${terms.proposed_close_date ?? "not set"}`);
  lines.push(`Conditions: ${terms.conditions.length === 0 ? "none" : terms.conditions.length}`);
  return lines;
}

/** The terms as one paragraph of the e-mail: a line each, then each condition. */
function termsParagraph(amount: string, currency: string, terms: OfferTerms): string {
  return [
    "The terms:",
    ...termLines(amount, currency, terms).map((line) => `- ${line}`),
    ...terms.conditions.map((condition, i) =>
      `- Condition ${i + 1}: ${condition.replace(/\s*\n\s*/g, " ")}`
    ),
  ].join("\n");
}

/** To the other side: the buyer or the seller countered with a new version. */
export function offerCounteredNotice(offer: OfferFacts): LoiNotice {
  const price = money(offer.amount, offer.currency);
  const who = offer.by === "seller" ? "The seller" : "The buyer";
  const what = offer.terms ? "a letter of intent" : "an offer";
  const lead = `${who} of "${offer.title}" countered with ${what} of ${price}.`;
  const answer = `Accept it, decline it or counter it by ${
    formatUtc(offer.expiresAt)
  }; it lapses after that.`;
  const summary = offer.terms
    ? ` Terms: ${termLines(offer.amount, offer.currency, offer.terms).join("; ")}.`
    : "";
  const body = `${lead}${summary} ${answer}`;
  const subject = `Counter-offer of ${price} for "${offer.title}"`;
  return {
    title: subject,
    body: offer.message ? `${body} Their note: "${offer.message}"` : body,
    link: offerLink(offer.offerId),
    email: {
      subject,
      heading: `${who} countered`,
      paragraphs: [
        lead,
        ...(offer.terms ? [termsParagraph(offer.amount, offer.currency, offer.terms)] : []),
        answer,
        ...(offer.message ? ["Their note:"] : []),
      ],
      quote: offer.message ?? undefined,
      action: { label: "Review the offer", url: offerLink(offer.offerId) },
      footer: FOOTER,
    },
  };
}

/**
 * To the author of the accepted version: the other side accepted it, and the
 * deal is in due diligence (with the exclusivity's end) or awaits payment.
 */
export function offerAcceptedNotice(offer: OfferFacts, deal: LoiDealFacts): LoiNotice {
  const price = money(offer.amount, offer.currency);
  const accepter = offer.by === "buyer" ? "The seller" : "The buyer";
  const yours = offer.by === "buyer" ? "offer" : "counter-offer";
  const lead = `${accepter} of "${offer.title}" accepted your ${yours} of ${price}.`;
  let next: string;
  if (deal.status === "in_diligence" && deal.exclusiveUntil) {
    next = offer.by === "buyer"
      ? `You have exclusivity for due diligence until ${
        formatUtc(deal.exclusiveUntil)
      }: the listing is off the market and the seller's data is open to you. Confirm due diligence before then to proceed to payment, or the deal lapses.`
      : `The buyer has exclusivity for due diligence until ${
        formatUtc(deal.exclusiveUntil)
      }: the listing is off the market while they review it. If they do not confirm by then, the deal lapses.`;
  } else if (deal.status === "pending_payment") {
    next = offer.by === "buyer"
      ? "The deal awaits your payment into escrow."
      : "The deal awaits the buyer's payment into escrow.";
  } else {
    next = `The deal is now ${deal.status.replaceAll("_", " ")}.`;
  }
  const subject = `Your ${yours} for "${offer.title}" was accepted`;
  return {
    title: subject,
    body: `${lead} ${next}`,
    link: dealLink(deal.dealId),
    email: {
      subject,
      heading: `Your ${yours} was accepted`,
      paragraphs: [lead, next, `Deal ${deal.dealId}`],
      action: { label: "Open the deal", url: dealLink(deal.dealId) },
      footer: FOOTER,
    },
  };
}

/** To the seller: the buyer confirmed due diligence and proceeds to payment. */
export function diligenceConfirmedNotice(deal: LoiDealFacts): LoiNotice {
  const body = `The buyer of "${deal.title}" confirmed due diligence and proceeds to payment of ${
    money(deal.amount, deal.currency)
  } into escrow. The handover starts once the payment clears.`;
  const subject = `The buyer of "${deal.title}" confirmed due diligence`;
  return {
    title: "Due diligence confirmed",
    body,
    link: dealLink(deal.dealId),
    email: {
      subject,
      heading: "Due diligence confirmed",
      paragraphs: [body],
      action: { label: "Open the deal", url: dealLink(deal.dealId) },
      footer: FOOTER,
    },
  };
}

/** Who withdrew from a deal (`deal_events.detail.by` of the withdrawal). */
export type WithdrawnBy = DealSide | "service";

/** To the other side: the buyer or the seller withdrew during due diligence, with their reason. */
export function dealWithdrawnNotice(
  deal: LoiDealFacts,
  withdrawal: { by: WithdrawnBy; reason: string | null },
  to: DealSide,
): LoiNotice {
  const who = withdrawal.by === "buyer"
    ? "The buyer"
    : withdrawal.by === "seller"
    ? "The seller"
    : "The marketplace";
  const lead = `${who} withdrew from the deal for "${deal.title}" (${
    money(deal.amount, deal.currency)
  }) during due diligence: the deal is cancelled.`;
  const after = to === "seller"
    ? "The listing is back on the market and takes offers again."
    : "Your exclusivity has ended.";
  const body = `${lead} ${after}`;
  const subject = `${who} withdrew from the deal for "${deal.title}"`;
  return {
    title: subject,
    body: withdrawal.reason ? `${body} The reason: "${withdrawal.reason}"` : body,
    link: dealLink(deal.dealId),
    email: {
      subject,
      heading: "The deal was withdrawn",
      paragraphs: [lead, after, ...(withdrawal.reason ? ["The reason given:"] : [])],
      quote: withdrawal.reason ?? undefined,
      action: { label: "Open the deal", url: dealLink(deal.dealId) },
      footer: FOOTER,
    },
  };
}

/** `deal`'s exclusivity end; throws for a deal that never had one. */
function exclusiveUntilOf(deal: LoiDealFacts): Date {
  if (!deal.exclusiveUntil) {
    throw new Error(`Deal ${deal.dealId} has no exclusivity window`);
  }
  return deal.exclusiveUntil;
}

/** To the buyer: the seller extended their exclusivity. */
export function exclusivityExtendedNotice(deal: LoiDealFacts): LoiNotice {
  const until = formatUtc(exclusiveUntilOf(deal));
  const body =
    `The seller of "${deal.title}" extended your exclusivity for due diligence: it now ends at ${until}. Confirm due diligence before then to proceed to payment, or the deal lapses.`;
  const subject = `Your exclusivity for "${deal.title}" now ends at ${until}`;
  return {
    title: "Exclusivity extended",
    body,
    link: dealLink(deal.dealId),
    email: {
      subject,
      heading: "Your exclusivity was extended",
      paragraphs: [body],
      action: { label: "Open the deal", url: dealLink(deal.dealId) },
      footer: FOOTER,
    },
  };
}

/** To the buyer or the seller: the exclusivity ends in 48 hours. */
export function exclusivityEndingNotice(deal: LoiDealFacts, to: DealSide): LoiNotice {
  const until = formatUtc(exclusiveUntilOf(deal));
  const body = to === "buyer"
    ? `Your exclusivity for due diligence on "${deal.title}" ends at ${until}. Confirm due diligence (confirm_diligence) before then to proceed to payment; otherwise the deal lapses and the listing goes back on the market.`
    : `The buyer's exclusivity for due diligence on "${deal.title}" ends at ${until}. If they have not confirmed due diligence by then, the deal lapses and the listing goes back on the market. You may extend the exclusivity, up to 45 days from acceptance.`;
  const subject = to === "buyer"
    ? `Confirm due diligence on "${deal.title}" by ${until}`
    : `The exclusivity on "${deal.title}" ends at ${until}`;
  return {
    title: "Exclusivity ends in 48 hours",
    body,
    link: dealLink(deal.dealId),
    email: {
      subject,
      heading: "The exclusivity ends in 48 hours",
      paragraphs: [body],
      action: {
        label: to === "buyer" ? "Confirm due diligence" : "Open the deal",
        url: dealLink(deal.dealId),
      },
      footer: FOOTER,
    },
  };
}

/** To the buyer or the seller: the exclusivity ended without confirmation; the deal is cancelled. */
export function exclusivityLapsedNotice(deal: LoiDealFacts, to: DealSide): LoiNotice {
  const until = formatUtc(exclusiveUntilOf(deal));
  const lead =
    `The exclusivity for due diligence on "${deal.title}" ended at ${until} without the buyer confirming it: the deal was cancelled, and the listing is back on the market.`;
  const after = to === "buyer"
    ? "You may make a new offer while the listing is on sale."
    : "The listing takes offers again.";
  const body = `${lead} ${after}`;
  const subject = `The deal for "${deal.title}" lapsed`;
  return {
    title: subject,
    body,
    link: dealLink(deal.dealId),
    email: {
      subject,
      heading: "The deal lapsed",
      paragraphs: [lead, after],
      action: { label: "Open the deal", url: dealLink(deal.dealId) },
      footer: FOOTER,
    },
  };
}
