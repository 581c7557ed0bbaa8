/**
 * Notices of a deal's handover (`apa-auto-handover`): the daily reminder to
 * the party who is late — the seller with steps to deliver, or the buyer
 * with deliveries to confirm — and "ready for payout" to the seller and to
 * admins once every step is confirmed. Each is an in-app notice and an
 * e-mail that say the same thing.
 *
 * @module
 */
import { countOf, formatMoney, formatUtc } from "../../lib/format.ts";
import type { EmailContent } from "../render.ts";

/** One notice: the in-app title and body, and the e-mail. */
export interface HandoverNotice {
  title: string;
  /** Plain text. */
  body: string;
  email: EmailContent;
}

/** Where the notices lead: the deal's page. */
export function handoverLink(dealId: string): string {
  return `/deals/${dealId}`;
}

const FOOTER =
  "You receive this e-mail about a deal you take part in. Switch handover notices off in your notification settings.";

/** The seller has steps to deliver (pending or disputed). */
export function sellerReminderNotice(deal: {
  id: string;
  listingTitle: string;
  /** Titles of the steps waiting for the seller. */
  openSteps: string[];
}): HandoverNotice {
  const body = `The buyer of "${deal.listingTitle}" is waiting for ${
    countOf(deal.openSteps.length, "handover step")
  }: mark each one delivered when it is done.`;
  return {
    title: "Handover steps are waiting for you",
    body,
    email: {
      subject: `Handover of "${deal.listingTitle}": ${
        countOf(deal.openSteps.length, "step")
      } to deliver`,
      heading: "Handover steps are waiting for you",
      paragraphs: [body, "The payout is released once the buyer has confirmed every step."],
      items: deal.openSteps.map((title) => ({ title })),
      action: { label: "Open the deal", url: handoverLink(deal.id) },
      footer: FOOTER,
    },
  };
}

/** The buyer has deliveries to confirm or dispute before `deadline`. */
export function buyerReminderNotice(deal: {
  id: string;
  listingTitle: string;
  /** How many delivered steps wait for the buyer. */
  delivered: number;
  /** When they are confirmed automatically. */
  deadline: Date;
}): HandoverNotice {
  const body = `The seller of "${deal.listingTitle}" delivered ${
    countOf(deal.delivered, "handover step")
  }. Check each one and confirm it, or dispute it, by ${
    formatUtc(deal.deadline)
  }; after that they are confirmed automatically.`;
  return {
    title: "Please confirm the handover",
    body,
    email: {
      subject: `Handover of "${deal.listingTitle}": please confirm by ${formatUtc(deal.deadline)}`,
      heading: "Please confirm the handover",
      paragraphs: [body],
      action: { label: "Review the handover", url: handoverLink(deal.id) },
      footer: FOOTER,
    },
  };
}

/** Why a handover completed, as its notices put it. */
export type HandoverCompletion = "buyer_confirmed" | "inspection_lapsed";

/** A completed handover, as its notices describe it. */
export interface CompletedHandover {
  id: string;
  listingTitle: string;
  /** What the seller is paid at release, in major units (a holdback follows later). */
  sellerNet: string;
  currency: string;
  completion: HandoverCompletion;
  /** When the buyer's inspection window ends and the payout is released. */
  inspectionEndsAt: Date;
}

const HOW: Record<HandoverCompletion, string> = {
  buyer_confirmed: "the buyer confirmed every handover step",
  inspection_lapsed:
    "every handover step is confirmed (some automatically: the buyer's inspection period lapsed)",
};

/** To the seller: the handover is complete and the payout comes next. */
export function handoverCompleteSellerNotice(deal: CompletedHandover): HandoverNotice {
  const body = `The handover of "${deal.listingTitle}" is complete: ${
    HOW[deal.completion]
  }. Your payout of ${
    formatMoney(deal.sellerNet, deal.currency)
  } is released automatically when the buyer's inspection window ends on ${
    deal.inspectionEndsAt.toISOString().slice(0, 10)
  } (sooner if the buyer accepts the delivery), unless the buyer opens a dispute case.`;
  return {
    title: "Handover complete",
    body,
    email: {
      subject: `Handover of "${deal.listingTitle}" complete`,
      heading: "Handover complete",
      paragraphs: [body],
      action: { label: "Open the deal", url: handoverLink(deal.id) },
      footer: FOOTER,
    },
  };
}
