/**
 * Notices of a deal's end game and its dispute cases (`send-queued-notices`;
 * the SQL that queues them is the escrow release migration's): to the
 * seller, the buyer's acceptance of the delivery; to both sides, a case
 * opened, escalated and resolved; to the other side, a settlement proposal;
 * to each admin, an escalated case to decide. Each is an in-app notice and
 * an e-mail that say the same thing, under the `handover` preference ("Your
 * deals"), the admin's under `admin_alerts`. They name the listing by its
 * title only; the opener's details are user text, quoted (escaped by the
 * renderer like every value).
 *
 * @module
 */
import { countOf, formatMoney, formatUtc } from "../../lib/format.ts";
import type { EmailContent } from "../render.ts";
import { adminDealLink } from "./deal_alerts.ts";
import { dealLink, type DealSide, otherSide } from "./letters_of_intent.ts";

export type { DealSide } from "./letters_of_intent.ts";

/** Why a case is opened (`deal_cases.reason`), as a reader would put it. */
export const CASE_REASON_LABELS = {
  not_as_described: "the business is not as described",
  not_delivered: "something was not handed over",
  access_problem: "access to an account or asset does not work",
  misrepresentation: "figures or facts were misrepresented",
  payment_terms: "a disagreement about the payment terms",
  other: "another problem",
} as const;

/** A `deal_cases.reason`. */
export type CaseReason = keyof typeof CASE_REASON_LABELS;

/** What {@linkcode CASE_REASON_LABELS} says of `reason` (the code itself for an unknown one). */
export function caseReasonLabel(reason: string): string {
  return Object.hasOwn(CASE_REASON_LABELS, reason)
    ? CASE_REASON_LABELS[reason as CaseReason]
    : reason.replaceAll("_", " ");
}

/** How a case ends (`deal_cases.outcome`, and each side's proposal). */
export type CaseOutcome = "release" | "refund" | "partial_refund";

/** Who resolved a case (`deal_cases.resolution`). */
export type CaseResolution = "settled" | "admin" | "deal_refunded" | "deal_completed";

/** Who escalated a case (`deal_cases.escalated_by`). */
export type CaseEscalatedBy = DealSide | "deadline";

/** A deal as these notices describe it. */
export interface CaseDealFacts {
  dealId: string;
  /** The listing's title. */
  title: string;
  /** The deal's amount, major units as stored ("1000.00"). */
  amount: string;
  currency: string;
}

/** A case as its notices describe it. */
export interface CaseFacts extends CaseDealFacts {
  caseId: string;
  openedBy: DealSide;
  /** `deal_cases.reason` (a code). */
  reason: string;
  /** The opener's account of it (plain text). */
  details: string;
  /** Until when the two sides may settle before an admin decides. */
  negotiateUntil: Date;
}

/** A side's proposal of how to settle. */
export interface CaseProposal {
  outcome: CaseOutcome;
  /** With `partial_refund`: what the buyer gets back, major units. */
  refundAmount: string | null;
}

/** One notice: the in-app title and body, its link, and the e-mail. */
export interface CaseNotice {
  title: string;
  /** Plain text. */
  body: string;
  link: string;
  email: EmailContent;
}

const FOOTER =
  "You receive this e-mail about a deal you take part in. Switch deal notices off in your notification settings.";

const ADMIN_FOOTER = "You receive this e-mail as an admin of the marketplace.";

/** `amount` in `currency`, as the notices write money. */
function money(amount: string, currency: string): string {
  return formatMoney(amount, currency);
}

/** "The buyer", "the seller". */
function theSide(side: DealSide): string {
  return `the ${side}`;
}

/** `text` with its first letter capitalized. */
function cap(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** `side` as `to` reads it: "you", or "the buyer" / "the seller". */
function who(side: DealSide, to: DealSide): string {
  return side === to ? "you" : theSide(side);
}

/**
 * A proposal in words: release, a full refund of what is still `held`, or a
 * partial refund of its amount.
 */
export function proposalText(
  proposal: CaseProposal,
  deal: CaseDealFacts,
  held: string | null,
): string {
  switch (proposal.outcome) {
    case "release":
      return "release (the money goes on to the seller as the deal's terms say)";
    case "refund":
      return held
        ? `a full refund (the buyer gets back the ${money(held, deal.currency)} still held)`
        : "a full refund (the buyer gets back what is still held)";
    case "partial_refund":
      return `a partial refund of ${
        money(proposal.refundAmount ?? "0", deal.currency)
      } to the buyer (the seller receives the rest)`;
  }
}

/**
 * To the seller: the buyer accepted the delivery, ending the inspection
 * window; `payoutAmount` (what the seller receives at the release:
 * `deal_transfer_amount(deal, 'payout')`) is released shortly, and a
 * holdback (`holdbackAmount`, paid `holdbackDays` after the release) later.
 */
export function deliveryAcceptedNotice(
  deal: CaseDealFacts & {
    payoutAmount: string | null;
    holdbackAmount: string | null;
    holdbackDays: number;
  },
): CaseNotice {
  const price = money(deal.amount, deal.currency);
  const lead = `The buyer of "${deal.title}" accepted the delivery, ending the inspection period.`;
  const payout = deal.payoutAmount
    ? `Your payout of ${money(deal.payoutAmount, deal.currency)} (${price} less ${
      deal.holdbackAmount ? "the holdback and " : ""
    }our fee) is released to your payout account shortly.`
    : "Your payout is released to your payout account shortly.";
  const holdback = deal.holdbackAmount
    ? `As the terms say, ${money(deal.holdbackAmount, deal.currency)} is held back for ${
      countOf(deal.holdbackDays, "day")
    } after the release and then paid to you, unless the buyer opens a case before.`
    : null;
  const body = [lead, payout, ...(holdback ? [holdback] : [])].join(" ");
  return {
    title: "The buyer accepted the delivery",
    body,
    link: dealLink(deal.dealId),
    email: {
      subject: `The buyer accepted the delivery of "${deal.title}"`,
      heading: "The buyer accepted the delivery",
      paragraphs: [lead, payout, ...(holdback ? [holdback] : [])],
      action: { label: "Open the deal", url: dealLink(deal.dealId) },
      footer: FOOTER,
    },
  };
}

/** How the two sides settle, and what happens when they do not (the same in every case notice). */
function settleHow(c: CaseFacts): string {
  return `Each of you proposes release, a full refund or a partial refund; the case is settled as soon as you both propose the same. If you have not settled by ${
    formatUtc(c.negotiateUntil)
  }, an admin decides.`;
}

/**
 * To the buyer or the seller: a case was opened. The opener reads that they
 * opened it; the other side who opened it, why, and the details.
 */
export function caseOpenedNotice(c: CaseFacts, to: DealSide): CaseNotice {
  const reason = caseReasonLabel(c.reason);
  const until = formatUtc(c.negotiateUntil);
  const yours = c.openedBy === to;
  const lead = yours
    ? `You opened a case about "${c.title}": ${reason}. The ${
      otherSide(to)
    } has until ${until} to settle it with you.`
    : `${
      cap(theSide(c.openedBy))
    } of "${c.title}" opened a case: ${reason}. You have until ${until} to settle it with them.`;
  const hold = "No money is released to the seller while the case is open.";
  const how = settleHow(c);
  const title = yours ? "You opened a case" : `${cap(theSide(c.openedBy))} opened a case`;
  return {
    title,
    body: `${lead} ${how} ${hold} ${yours ? "Your" : "Their"} details: "${c.details}"`,
    link: dealLink(c.dealId),
    email: {
      subject: yours
        ? `You opened a case about "${c.title}"`
        : `${cap(theSide(c.openedBy))} opened a case about "${c.title}"`,
      heading: title,
      paragraphs: [lead, how, hold, `${yours ? "Your" : "Their"} details:`],
      quote: c.details,
      action: { label: yours ? "Open the case" : "Answer the case", url: dealLink(c.dealId) },
      footer: FOOTER,
    },
  };
}

/**
 * To the other side of an open case: `by` proposes `proposal` (`held` is
 * what the deal still holds, which a full refund returns); `yours` is the
 * reader's own proposal so far, if any.
 */
export function caseSettlementProposedNotice(
  c: CaseFacts,
  by: DealSide,
  proposal: CaseProposal,
  held: string | null,
  yours: CaseProposal | null,
): CaseNotice {
  const lead = `${cap(theSide(by))} proposes to settle the case about "${c.title}" with ${
    proposalText(proposal, c, held)
  }.`;
  const next =
    `To settle on it, propose the same. You may also propose something else, or ask an admin to decide now. If you have not settled by ${
      formatUtc(c.negotiateUntil)
    }, an admin decides.`;
  const own = yours ? `Your proposal so far: ${proposalText(yours, c, held)}.` : null;
  const title = `${cap(theSide(by))} proposes a settlement`;
  return {
    title,
    body: [lead, ...(own ? [own] : []), next].join(" "),
    link: dealLink(c.dealId),
    email: {
      subject: `${cap(theSide(by))} proposes a settlement of the case about "${c.title}"`,
      heading: title,
      paragraphs: [lead, ...(own ? [own] : []), next],
      action: { label: "Answer the proposal", url: dealLink(c.dealId) },
      footer: FOOTER,
    },
  };
}

/** Why a case went to the admins, as `to` reads it. */
function escalatedBecause(by: CaseEscalatedBy, to: DealSide | null): string {
  if (by === "deadline") return "the time to settle it ended without a settlement";
  if (to === null) return `${theSide(by)} asked an admin to decide`;
  return by === to ? "you asked an admin to decide" : `${theSide(by)} asked an admin to decide`;
}

/** To the buyer or the seller: the case was escalated; an admin decides it. */
export function caseEscalatedNotice(
  c: CaseFacts,
  by: CaseEscalatedBy,
  to: DealSide,
): CaseNotice {
  const lead = `The case about "${c.title}" goes to an admin: ${escalatedBecause(by, to)}.`;
  const next =
    "An admin reviews the case and decides: release the money to the seller, refund the buyer, or refund part of it. No money is released to the seller until then, and you are told the decision.";
  return {
    title: "An admin will decide the case",
    body: `${lead} ${next}`,
    link: dealLink(c.dealId),
    email: {
      subject: `An admin will decide the case about "${c.title}"`,
      heading: "An admin will decide the case",
      paragraphs: [lead, next],
      action: { label: "Open the deal", url: dealLink(c.dealId) },
      footer: FOOTER,
    },
  };
}

/** What an admin needs to decide an escalated case. */
export interface EscalatedCaseFacts extends CaseFacts {
  escalatedBy: CaseEscalatedBy;
  openedAt: Date;
  /** What the deal still holds for the buyer (the most a refund returns), major units. */
  held: string;
  buyerProposal: CaseProposal | null;
  sellerProposal: CaseProposal | null;
}

/**
 * To each admin: a case was escalated and needs a decision, with how to
 * give it (`resolve-deal-case`).
 */
export function adminCaseEscalatedNotice(c: EscalatedCaseFacts): CaseNotice {
  const held = money(c.held, c.currency);
  const lead = `A dispute case on "${c.title}" (${money(c.amount, c.currency)}) needs a decision: ${
    escalatedBecause(c.escalatedBy, null)
  }. ${cap(theSide(c.openedBy))} opened it on ${formatUtc(c.openedAt)}: ${
    caseReasonLabel(c.reason)
  }. ${held} is still held.`;
  const proposals = `Proposals so far: buyer — ${
    c.buyerProposal ? proposalText(c.buyerProposal, c, c.held) : "none"
  }; seller — ${c.sellerProposal ? proposalText(c.sellerProposal, c, c.held) : "none"}.`;
  const how =
    `Resolve it with resolve-deal-case, body { "caseId": "${c.caseId}", "outcome": "release" | "refund" | "partial_refund", "refundAmount": "…" } (refundAmount only with partial_refund, less than ${held}). A refund is made at once; a release follows the deal's terms.`;
  return {
    title: "A deal case needs a decision",
    body: `${lead} ${proposals} ${how} The opener's details: "${c.details}"`,
    link: adminDealLink(c.dealId),
    email: {
      subject: `Decide the case on "${c.title}"`,
      heading: "A deal case needs a decision",
      paragraphs: [lead, proposals, how, "The opener's details:"],
      quote: c.details,
      items: [{ title: `Case ${c.caseId}` }, { title: `Deal ${c.dealId}` }],
      action: { label: "Open the deal", url: adminDealLink(c.dealId) },
      footer: ADMIN_FOOTER,
    },
  };
}

/** A resolved case's outcome and the money it moves, as its notice tells it. */
export interface CaseResolutionFacts {
  outcome: CaseOutcome;
  /** With `partial_refund`: what the buyer gets back. */
  refundAmount: string | null;
  resolution: CaseResolution;
  /** escrow: nothing had been paid out; holdback: the payout had, the holdback not. */
  phase: "escrow" | "holdback";
  /** What the seller receives at the release now (`deal_transfer_amount(deal, 'payout')`). */
  payoutAmount: string | null;
  /** What the seller receives of the holdback now (`deal_transfer_amount(deal, 'holdback')`). */
  holdbackAmount: string | null;
  /** The part of the amount the terms hold back ("0.00" without one). */
  heldBack: string;
  holdbackDays: number;
  /** When the payout is released (the inspection window's end); null before the handover completes. */
  inspectionEndsAt: Date | null;
  /** When the holdback is paid, if known. */
  holdbackReleaseAt: Date | null;
  /** The database's now, to tell a date still ahead from one passed. */
  now: Date;
}

/** "on <date>" while `at` is ahead, else "shortly". */
function when(at: Date | null, now: Date): string {
  return at && at > now ? `on ${formatUtc(at)}` : "shortly";
}

/** What happens to the money after `r`, as `to` reads it. */
function moneyNext(c: CaseFacts, r: CaseResolutionFacts, to: DealSide): string {
  const m = (amount: string) => money(amount, c.currency);
  const buyer = who("buyer", to);
  const seller = who("seller", to);
  const gets = (side: string) => (side === "you" ? "you get" : `${side} gets`);
  const receives = (side: string) => (side === "you" ? "you receive" : `${side} receives`);
  const hasHoldback = r.heldBack !== "0.00" && Number(r.heldBack) > 0;
  switch (r.outcome) {
    case "release":
      if (r.phase === "holdback") {
        return `The money goes on to the seller as the terms say: ${
          r.holdbackAmount ? `the holdback of ${m(r.holdbackAmount)}` : "the holdback"
        } is paid to ${seller} ${when(r.holdbackReleaseAt, r.now)}.`;
      }
      return `The money goes on to the seller as the terms say: ${
        r.payoutAmount ? `the payout of ${m(r.payoutAmount)}` : "the payout"
      } is released to ${seller} ${
        r.inspectionEndsAt === null
          ? "once the handover is complete and the inspection period after it has ended"
          : r.inspectionEndsAt > r.now
          ? `when the inspection period ends (${formatUtc(r.inspectionEndsAt)})`
          : "shortly"
      }${
        hasHoldback
          ? `, and the holdback of ${m(r.heldBack)} ${countOf(r.holdbackDays, "day")} after that`
          : ""
      }.`;
    case "refund":
      if (r.phase === "holdback") {
        return `The holdback goes back to the buyer: ${gets(buyer)} back ${
          m(r.heldBack)
        } shortly; the payout already made stays with the seller, and the deal completes.`;
      }
      return `${cap(gets(buyer))} back the whole ${m(c.amount)} shortly, and the deal is refunded.`;
    case "partial_refund": {
      const refund = m(r.refundAmount ?? "0");
      if (r.phase === "holdback") {
        return `${cap(gets(buyer))} back ${refund} of the holdback shortly; ${receives(seller)} ${
          r.holdbackAmount ? `the rest of it, ${m(r.holdbackAmount)}` : "the rest of it"
        }, and the deal completes.`;
      }
      return `${cap(gets(buyer))} back ${refund} shortly; ${receives(seller)} ${
        r.payoutAmount ? m(r.payoutAmount) : "the rest"
      } (the rest, less our fee on it), and the deal completes.`;
    }
  }
}

/** The outcome in a few words. */
function outcomeWords(c: CaseFacts, r: CaseResolutionFacts): string {
  switch (r.outcome) {
    case "release":
      return "release to the seller";
    case "refund":
      return r.phase === "holdback" ? "refund of the holdback" : "full refund";
    case "partial_refund":
      return `partial refund of ${money(r.refundAmount ?? "0", c.currency)}`;
  }
}

/**
 * To the buyer or the seller: the case is resolved — settled by both sides,
 * decided by an admin, or closed because the deal was refunded or completed
 * first — and what happens to the money next.
 */
export function caseResolvedNotice(
  c: CaseFacts,
  r: CaseResolutionFacts,
  to: DealSide,
): CaseNotice {
  const link = dealLink(c.dealId);
  if (r.resolution === "deal_refunded" || r.resolution === "deal_completed") {
    const body = r.resolution === "deal_refunded"
      ? `The case about "${c.title}" is closed: the deal was refunded to the buyer, so there is nothing left to decide.`
      : `The case about "${c.title}" is closed: the deal completed and the seller was paid, so there is nothing left to decide.`;
    return {
      title: "The case is closed",
      body,
      link,
      email: {
        subject: `The case about "${c.title}" is closed`,
        heading: "The case is closed",
        paragraphs: [body],
        action: { label: "Open the deal", url: link },
        footer: FOOTER,
      },
    };
  }
  const words = outcomeWords(c, r);
  const lead = r.resolution === "settled"
    ? `You and the ${otherSide(to)} settled the case about "${c.title}": ${words}.`
    : `An admin decided the case about "${c.title}": ${words}.`;
  const next = moneyNext(c, r, to);
  const title = r.resolution === "settled" ? "The case is settled" : "An admin decided the case";
  return {
    title,
    body: `${lead} ${next}`,
    link,
    email: {
      subject: r.resolution === "settled"
        ? `The case about "${c.title}" is settled: ${words}`
        : `The case about "${c.title}" was decided: ${words}`,
      heading: title,
      paragraphs: [
        lead,
        next,
        ...(r.outcome !== "release"
          ? [
            "A refund can take 5 to 10 business days to show on the card or account it was paid from.",
          ]
          : []),
      ],
      action: { label: "Open the deal", url: link },
      footer: FOOTER,
    },
  };
}
