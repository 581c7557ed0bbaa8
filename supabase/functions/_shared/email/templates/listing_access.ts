/**
 * Notices about access to a confidential listing: to its seller, a buyer's
 * request (with the NDA they accepted and their note); to the buyer, each
 * answer — approved, declined, revoked — and a request that lapsed
 * unanswered. Each is an in-app notice and an e-mail that say the same
 * thing. They name the listing by its title only, which every viewer sees:
 * nothing confidential reaches a buyer who has no access.
 *
 * @module
 */
import { ACCESS_REQUEST_EXPIRY_DAYS } from "../../../../../shared/listing_access.ts";
import { formatUtc } from "../../lib/format.ts";
import type { EmailContent } from "../render.ts";

/** A request as its notices describe it. */
export interface AccessRequestFacts {
  requestId: string;
  listingId: string;
  /** The listing's title. */
  title: string;
  /** The NDA version the buyer accepted. */
  ndaVersion: string;
  /** The buyer's note, if any. */
  message: string | null;
  /** When the request lapses unanswered. */
  expiresAt: Date;
  /** The seller's or admin's reason for a decision or a revocation, if any. */
  reason: string | null;
}

/** One notice: the in-app title and body, its link, and the e-mail. */
export interface AccessNotice {
  title: string;
  /** Plain text. */
  body: string;
  link: string;
  email: EmailContent;
}

/** The seller's page of a request. */
export function accessRequestLink(facts: Pick<AccessRequestFacts, "requestId">): string {
  return `/seller/access-requests/${facts.requestId}`;
}

/** The listing's page. */
export function listingLink(facts: Pick<AccessRequestFacts, "listingId">): string {
  return `/listings/${facts.listingId}`;
}

const SELLER_FOOTER =
  "You receive this e-mail because a buyer asked for access to your confidential listing. Switch these notices off in your notification settings.";
const BUYER_FOOTER =
  "You receive this e-mail about your access request. Switch these notices off in your notification settings.";

/** To the seller: a buyer accepted the NDA and asks for access. */
export function accessRequestedNotice(facts: AccessRequestFacts): AccessNotice {
  const body =
    `A buyer accepted NDA version ${facts.ndaVersion} and asks to see the confidential details of "${facts.title}". Answer by ${
      formatUtc(facts.expiresAt)
    }; the request lapses after that.`;
  return {
    title: `Access request for "${facts.title}"`,
    body: facts.message ? `${body} Their note: "${facts.message}"` : body,
    link: accessRequestLink(facts),
    email: {
      subject: `A buyer asks for access to "${facts.title}"`,
      heading: "A buyer asks for access",
      paragraphs: [
        body,
        ...(facts.message ? ["Their note:"] : []),
      ],
      quote: facts.message ?? undefined,
      action: { label: "Review the request", url: accessRequestLink(facts) },
      footer: SELLER_FOOTER,
    },
  };
}

/** "The seller wrote:" and the reason, when there is one. */
function reasonOf(facts: AccessRequestFacts): Pick<EmailContent, "paragraphs" | "quote"> {
  return facts.reason
    ? { paragraphs: ["The seller wrote:"], quote: facts.reason }
    : { paragraphs: [] };
}

/** To the buyer: the seller approved their access. */
export function accessApprovedNotice(facts: AccessRequestFacts): AccessNotice {
  const body =
    `The seller of "${facts.title}" approved your request: its confidential details are now visible to you, and you can message the seller.`;
  const reason = reasonOf(facts);
  return {
    title: `You have access to "${facts.title}"`,
    body,
    link: listingLink(facts),
    email: {
      subject: `You have access to "${facts.title}"`,
      heading: "Your access request was approved",
      paragraphs: [
        body,
        `You accepted NDA version ${facts.ndaVersion}: keep what you learn confidential.`,
        ...reason.paragraphs,
      ],
      quote: reason.quote,
      action: { label: "View the listing", url: listingLink(facts) },
      footer: BUYER_FOOTER,
    },
  };
}

/** To the buyer: the seller declined their request. */
export function accessDeclinedNotice(facts: AccessRequestFacts): AccessNotice {
  const body = `The seller of "${facts.title}" declined your access request.`;
  const reason = reasonOf(facts);
  return {
    title: `Access to "${facts.title}" declined`,
    body: facts.reason ? `${body} They wrote: "${facts.reason}"` : body,
    link: listingLink(facts),
    email: {
      subject: `Your access request for "${facts.title}" was declined`,
      heading: "Your access request was declined",
      paragraphs: [body, ...reason.paragraphs],
      quote: reason.quote,
      action: { label: "Explore other listings", url: "/explore" },
      footer: BUYER_FOOTER,
    },
  };
}

/** To the buyer: the seller revoked their access. */
export function accessRevokedNotice(facts: AccessRequestFacts): AccessNotice {
  const body =
    `The seller of "${facts.title}" revoked your access: its confidential details are hidden from you again. The NDA you accepted still binds what you learned.`;
  const reason = reasonOf(facts);
  return {
    title: `Access to "${facts.title}" revoked`,
    body: facts.reason ? `${body} They wrote: "${facts.reason}"` : body,
    link: listingLink(facts),
    email: {
      subject: `Your access to "${facts.title}" was revoked`,
      heading: "Your access was revoked",
      paragraphs: [body, ...reason.paragraphs],
      quote: reason.quote,
      action: { label: "Explore other listings", url: "/explore" },
      footer: BUYER_FOOTER,
    },
  };
}

/** To the buyer: the request lapsed unanswered. */
export function accessExpiredNotice(facts: AccessRequestFacts): AccessNotice {
  const body = `Your access request for "${facts.title}" lapsed on ${
    formatUtc(facts.expiresAt)
  }: the seller did not answer within ${ACCESS_REQUEST_EXPIRY_DAYS} days. You may ask again.`;
  return {
    title: `Access request for "${facts.title}" expired`,
    body,
    link: listingLink(facts),
    email: {
      subject: `Your access request for "${facts.title}" expired`,
      heading: "Your access request expired",
      paragraphs: [body],
      action: { label: "View the listing", url: listingLink(facts) },
      footer: BUYER_FOOTER,
    },
  };
}
