/**
 * The admins' digests (`admin_notification_types`): listings waiting for
 * review, and messages sent through the contact form, since the last
 * digest. Contact messages are user input: like every value, they are
 * escaped by the renderer, never interpolated into markup here.
 *
 * @module
 */
import { countOf, formatMoney, formatUtc, namesOf } from "../../lib/format.ts";
import type { DigestNotice } from "./listings_digest.ts";

/** A listing waiting for review, as the review digest lists it. */
export interface PendingListing {
  id: string;
  title: string;
  category: string;
  askingPrice: string;
  currency: string;
  submittedAt: Date;
}

/** A contact message as the contact digest lists it. */
export interface ContactMessageSummary {
  name: string;
  email: string;
  subject: string | null;
  message: string;
  createdAt: Date;
}

/** A window in which the contact form reached its ceiling (`contact_ceiling_hits`). */
export interface ContactCeilingHit {
  /** Messages the window took. */
  ceiling: number;
  /** When the last accepted message was sent. */
  reachedAt: Date;
  /** Until when further messages were refused. */
  windowEndsAt: Date;
}

/** The sentence telling that the contact form was full. */
function ceilingNote(hit: ContactCeilingHit): string {
  return `The contact form reached its ceiling of ${countOf(hit.ceiling, "message")} at ${
    formatUtc(hit.reachedAt)
  }; messages after that were refused until ${formatUtc(hit.windowEndsAt)}.`;
}

/** The longest excerpt of a contact message the digest shows. */
export const MESSAGE_EXCERPT_CHARS = 300;

/** `text` on one line, cut to `max` characters. */
function excerpt(text: string, max: number): string {
  const line = text.replace(/\s+/g, " ").trim();
  return line.length <= max ? line : `${line.slice(0, max - 1)}…`;
}

/** "The oldest 50 are listed below." when the list is cut, else nothing. */
function shownNote(shown: number, total: number, which: string): string[] {
  return shown < total ? [`The ${which} ${shown} are listed below.`] : [];
}

/**
 * The review digest: `total` listings submitted for review since the last
 * one, `listings` (oldest first, at most the shown cap) listed.
 */
export function adminListingDigest(listings: PendingListing[], total: number): DigestNotice {
  const count = countOf(total, "listing");
  const title = `${count} waiting for review`;
  return {
    title,
    body: `Submitted for review since the last digest: ${
      namesOf(listings.map((l) => l.title), total)
    }.`,
    email: {
      subject: `Review queue: ${count} submitted`,
      heading: "Listings waiting for review",
      paragraphs: [
        `${count} ${total === 1 ? "was" : "were"} submitted for review since the last digest.`,
        ...shownNote(listings.length, total, "oldest"),
      ],
      items: listings.map((listing) => ({
        title: listing.title,
        detail: `${listing.category} · ${formatMoney(listing.askingPrice, listing.currency)} · ` +
          `submitted ${formatUtc(listing.submittedAt)}`,
      })),
      action: { label: "Open the review queue", url: "/admin/listings" },
      footer: "You receive this digest because you are an admin of the marketplace.",
    },
  };
}

/**
 * The contact digest: `total` messages sent through the contact form since
 * the last one, `messages` (oldest first, at most the shown cap) listed
 * with an excerpt, and the times the form reached its ceiling meanwhile
 * (`hits`, oldest first).
 */
export function adminContactDigest(
  messages: ContactMessageSummary[],
  total: number,
  hits: ContactCeilingHit[] = [],
): DigestNotice {
  const count = countOf(total, "contact message");
  const title = `${count} received`;
  const ceiling = hits.map(ceilingNote);
  return {
    title,
    body: [
      `New through the contact form since the last digest, from ${
        namesOf(messages.map((m) => m.name), total)
      }.`,
      ...ceiling,
    ].join(" "),
    email: {
      subject: `Contact form: ${count}`,
      heading: "New contact messages",
      paragraphs: [
        `${count} ${
          total === 1 ? "was" : "were"
        } sent through the contact form since the last digest.`,
        ...ceiling,
        ...shownNote(messages.length, total, "oldest"),
      ],
      items: messages.map((m) => ({
        title: `${m.subject ?? "(no subject)"} — ${m.name} <${m.email}>`,
        detail: `${formatUtc(m.createdAt)}: ${excerpt(m.message, MESSAGE_EXCERPT_CHARS)}`,
      })),
      action: { label: "Read the messages", url: "/admin/messages" },
      footer: "You receive this digest because you are an admin of the marketplace.",
    },
  };
}
