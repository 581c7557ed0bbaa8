/**
 * Notices of the escrow that closes itself, written by the money code as it
 * moves (the escrow release migration's money plan): to the buyer, the
 * inspection window that starts when the handover completes; to the seller,
 * a payout waiting for their payout account (and to admins, one that waited
 * 3 days); to both sides, the holdback paid and a case's partial refund; to
 * admins, a payout paid again after a chargeback the platform won. Each is
 * an in-app notice and an e-mail that say the same thing
 * ({@linkcode DealAlertNotice}, as `deal_alerts.ts`'); the caller sets the
 * link (the e-mail's button already has it: the deal's page, or its admin
 * page for admins).
 *
 * {@linkcode ESCROW_EMAIL_TYPES} names the e-mail type each writes; its
 * notification type (the in-app notice's, and the preference both honour)
 * is that type's in `EMAIL_TYPES` (`shared/notifications.ts`):
 * `inspection_started` is `handover`, `payout_waiting`, `holdback_released`
 * and `partial_refund_issued` are `payments`, the `admin_*` ones
 * `admin_alerts`.
 *
 * @module
 */
import type { EmailType } from "../../../../../shared/notifications.ts";
import { countOf, formatMoney, formatUtc } from "../../lib/format.ts";
import type { EmailContent } from "../render.ts";
import { adminDealLink, type DealAlertNotice } from "./deal_alerts.ts";

export type { DealAlertNotice } from "./deal_alerts.ts";

/** A deal as these notices name it. */
export interface EscrowDealFacts {
  dealId: string;
  listingTitle: string;
  currency: string;
}

/** Where the seller finishes their payout account (the seller verification notices' page). */
export const PAYOUT_SETTINGS_LINK = "/dashboard/payouts";

/** A deal's page. */
function dealLink(dealId: string): string {
  return `/deals/${dealId}`;
}

const FOOTER = "You receive this e-mail about a deal you take part in.";
const ADMIN_FOOTER = "You receive this e-mail as an admin of the marketplace.";

/** One notice whose in-app body is the e-mail's first paragraph. */
function notice(
  title: string,
  body: string,
  email: Omit<EmailContent, "heading" | "paragraphs"> & { paragraphs?: string[] },
): DealAlertNotice {
  return {
    title,
    body: [body, ...(email.paragraphs ?? [])].join(" "),
    email: { heading: title, ...email, paragraphs: [body, ...(email.paragraphs ?? [])] },
  };
}

/**
 * To the buyer: the handover is complete and the inspection window runs
 * until `inspectionEndsAt`; accept the delivery or open a case before then,
 * else the seller's payout (`payoutAmount`) is released automatically, and
 * a holdback (`holdbackAmount`) `holdbackDays` later.
 */
export function inspectionStartedNotice(
  f: EscrowDealFacts & {
    inspectionEndsAt: Date;
    payoutAmount: string;
    holdbackAmount: string | null;
    holdbackDays: number;
  },
): DealAlertNotice {
  const until = formatUtc(f.inspectionEndsAt);
  const payout = formatMoney(f.payoutAmount, f.currency);
  const lead =
    `The handover of "${f.listingTitle}" is complete. Your inspection period runs until ${until}: check that everything works as described.`;
  const choose =
    `If it does, accept the delivery (accept_delivery) to release the payment now. If something is wrong, open a case (open_deal_case) before ${until}: no money is released while a case is open. If you do neither, the seller's payout of ${payout} is released automatically at ${until}.`;
  const holdback = f.holdbackAmount
    ? `As the terms say, ${formatMoney(f.holdbackAmount, f.currency)} is held back for ${
      countOf(f.holdbackDays, "day")
    } after the release; you can still open a case until it is paid.`
    : null;
  return notice("Your inspection period has started", lead, {
    subject: `Inspect "${f.listingTitle}" by ${until}`,
    paragraphs: [choose, ...(holdback ? [holdback] : [])],
    action: { label: "Review the delivery", url: dealLink(f.dealId) },
    footer: FOOTER,
  });
}

/** Why a payout cannot be sent yet: as the seller reads it, what they finish, as an admin reads it. */
const WAITING_REASONS: Record<
  "no_account" | "payouts_disabled" | "requirements_past_due",
  { why: string; nextStep: string; admin: string }
> = {
  no_account: {
    why: "you have no payout account yet",
    nextStep:
      "Set up your payout account (your identity and your bank account) in your payout settings.",
    admin: "the seller has no payout account",
  },
  payouts_disabled: {
    why: "the payment processor has switched payouts to your account off",
    nextStep:
      "Open your payout settings and complete what the payment processor asks for (usually identity or bank details).",
    admin: "the payment processor has switched payouts to the seller's account off",
  },
  requirements_past_due: {
    why: "the payment processor needs more information from you, and its deadline has passed",
    nextStep:
      "Open your payout settings and provide the missing information (identity documents, business or bank details).",
    admin: "the seller's account has requirements past due at the payment processor",
  },
};

/** `disabledReason` as the processor writes it ("requirements.past_due"), made readable. */
function processorSays(disabledReason: string | null): string | null {
  return disabledReason ? disabledReason.replace(/[._]+/g, " ") : null;
}

/**
 * To the seller: their payout (`amount`) is ready, but their payout account
 * must be finished first (`reason`; `disabledReason` as the processor gives
 * it, if any).
 */
export function payoutWaitingNotice(
  f: EscrowDealFacts & {
    amount: string;
    reason: "no_account" | "payouts_disabled" | "requirements_past_due";
    disabledReason: string | null;
  },
): DealAlertNotice {
  const amount = formatMoney(f.amount, f.currency);
  const reason = WAITING_REASONS[f.reason];
  const says = processorSays(f.disabledReason);
  const lead =
    `Your payout of ${amount} for "${f.listingTitle}" is ready, but we cannot send it yet: ${reason.why}${
      says ? ` (the processor says: ${says})` : ""
    }.`;
  const next =
    "It stays safe in escrow and goes out automatically once your payout account can receive it.";
  return notice("Your payout is waiting for your payout account", lead, {
    subject: `Action needed: finish your payout account to receive ${amount}`,
    paragraphs: [reason.nextStep, next],
    action: { label: "Open your payout settings", url: PAYOUT_SETTINGS_LINK },
    footer: FOOTER,
  });
}

/** To admins: a payout (`amount`) has waited since `since` for the seller's payout account. */
export function adminPayoutWaitingNotice(
  f: EscrowDealFacts & { amount: string; reason: string; since: Date },
): DealAlertNotice {
  const amount = formatMoney(f.amount, f.currency);
  const why = Object.hasOwn(WAITING_REASONS, f.reason)
    ? WAITING_REASONS[f.reason as keyof typeof WAITING_REASONS].admin
    : f.reason.replaceAll("_", " ");
  return notice(
    "A payout is waiting for the seller's payout account",
    `The payout of ${amount} for "${f.listingTitle}" has been ready since ${
      formatUtc(f.since)
    }, but it cannot be sent: ${why}. The seller was told what to finish when it became due.`,
    {
      subject: `Payout waiting for the seller's account: "${f.listingTitle}"`,
      paragraphs: [
        "The money stays in escrow and goes out automatically once the seller's payout account can receive it. Contact the seller if it stays stuck; the processor holds a payment's funds for 90 days at most.",
      ],
      items: [{ title: `Reason: ${f.reason}` }],
      action: { label: "Open the deal", url: adminDealLink(f.dealId) },
      footer: ADMIN_FOOTER,
    },
  );
}

/** To the seller or the buyer: the holdback (`amount`) was paid to the seller; the deal is complete. */
export function holdbackReleasedNotice(
  f: EscrowDealFacts & { amount: string; transferId: string; side: "seller" | "buyer" },
): DealAlertNotice {
  const amount = formatMoney(f.amount, f.currency);
  if (f.side === "seller") {
    return notice(
      "Holdback released",
      `The holdback of ${amount} for "${f.listingTitle}" is on its way to your payout account. You have now been paid everything the deal owes you, and the deal is complete.`,
      {
        subject: `Holdback of ${amount} released for "${f.listingTitle}"`,
        items: [{ title: `Transfer ${f.transferId}` }],
        action: { label: "View the deal", url: dealLink(f.dealId) },
        footer: FOOTER,
      },
    );
  }
  return notice(
    "The holdback period has ended",
    `The holdback period of "${f.listingTitle}" has ended: the held-back ${amount} was paid to the seller, and the deal is complete. Thank you!`,
    {
      subject: `The deal for "${f.listingTitle}" is complete`,
      action: { label: "View the deal", url: dealLink(f.dealId) },
      footer: FOOTER,
    },
  );
}

/**
 * To the buyer or the seller: part of the payment (`amount`: a case's
 * partial refund, or the holdback a case refunded) went back to the buyer.
 */
export function partialRefundNotice(
  f: EscrowDealFacts & { amount: string; refundId: string; side: "seller" | "buyer" },
): DealAlertNotice {
  const amount = formatMoney(f.amount, f.currency);
  if (f.side === "buyer") {
    return notice(
      "Partial refund issued",
      `We refunded ${amount} of your payment for "${f.listingTitle}", as the dispute case decided. Depending on your bank, it shows on your card or account within 5 to 10 business days.`,
      {
        subject: `Refund of ${amount} for "${f.listingTitle}"`,
        items: [{ title: `Refund ${f.refundId}` }],
        action: { label: "View the deal", url: dealLink(f.dealId) },
        footer: FOOTER,
      },
    );
  }
  return notice(
    "Part of the payment was refunded",
    `${amount} of the buyer's payment for "${f.listingTitle}" was refunded to them, as the dispute case decided. You receive the rest as the case says.`,
    {
      subject: `${amount} refunded to the buyer of "${f.listingTitle}"`,
      action: { label: "View the deal", url: dealLink(f.dealId) },
      footer: FOOTER,
    },
  );
}

/**
 * To admins: the platform won a chargeback (`disputeId`) after reversing
 * the seller's payout for it; the seller is being paid again (`amount`).
 */
export function adminRepayoutNotice(
  f: EscrowDealFacts & { amount: string; disputeId: string },
): DealAlertNotice {
  const amount = formatMoney(f.amount, f.currency);
  return notice(
    "A reversed payout is paid again",
    `The platform won the chargeback on "${f.listingTitle}". The seller's payout had been taken back for it, so the seller is being paid again: ${amount}.`,
    {
      subject: `Chargeback won: paying the seller of "${f.listingTitle}" again`,
      paragraphs: [
        "Nothing to do unless the transfer fails; check the deal if the seller asks about it.",
      ],
      items: [{ title: `Dispute ${f.disputeId}` }],
      action: { label: "Open the deal", url: adminDealLink(f.dealId) },
      footer: ADMIN_FOOTER,
    },
  );
}

/** The e-mail type each notice of this module writes (`EMAIL_TYPES` gives its notification type). */
export const ESCROW_EMAIL_TYPES = {
  inspectionStartedNotice: "inspection_started",
  payoutWaitingNotice: "payout_waiting",
  adminPayoutWaitingNotice: "admin_payout_waiting",
  holdbackReleasedNotice: "holdback_released",
  partialRefundNotice: "partial_refund_issued",
  adminRepayoutNotice: "admin_repayout",
} as const satisfies Record<string, EmailType>;
