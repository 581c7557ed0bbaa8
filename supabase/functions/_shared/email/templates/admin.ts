/**
 * The admins' digests (`admin_notification_types`): listings waiting for
 * review, and messages sent through the contact form, since the last
 * digest, with the count of contact messages held for review (arrived past
 * the form's ceiling; never listed until an admin releases them). Contact
 * messages are user input: like every value, they are escaped by the
 * renderer, never interpolated into markup here.
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
  /** When an admin released it from the held queue; null or absent when it was never held. */
  releasedAt?: Date | null;
}

/** The contact messages held for review (`review_status` held). */
export interface ContactHeldCount {
  /** Held messages waiting for an admin now. */
  waiting: number;
  /** Of those, the ones that arrived since the last digest. */
  arrived: number;
}

/** A window in which the contact form reached its ceiling (`contact_ceiling_hits`). */
export interface ContactCeilingHit {
  /** Messages the window took. */
  ceiling: number;
  /** When the last accepted message was sent. */
  reachedAt: Date;
  /** Until when further messages were held for review. */
  windowEndsAt: Date;
}

/** The sentence telling that the contact form was full. */
function ceilingNote(hit: ContactCeilingHit): string {
  return `The contact form reached its ceiling of ${countOf(hit.ceiling, "message")} at ${
    formatUtc(hit.reachedAt)
  }; messages after that were held for review until ${formatUtc(hit.windowEndsAt)}.`;
}

/** The sentences telling how many messages wait for review, or none when none does. */
function heldNote(held: ContactHeldCount): string[] {
  if (held.waiting === 0) return [];
  return [
    `${countOf(held.waiting, "message")} ${
      held.waiting === 1 ? "waits" : "wait"
    } for review, held because the contact form was past its ceiling (${held.arrived} new since the last digest). Held messages are not listed here: release or discard them on the messages page.`,
  ];
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
 * The contact digest: `total` messages that entered the inbox since the
 * last one (sent within the ceiling, or released by an admin from the held
 * queue), `messages` (oldest first, at most the shown cap) listed with an
 * excerpt, the times the form reached its ceiling meanwhile (`hits`, oldest
 * first), and the messages held for review (`held`: counted, not listed).
 */
export function adminContactDigest(
  messages: ContactMessageSummary[],
  total: number,
  hits: ContactCeilingHit[] = [],
  held: ContactHeldCount = { waiting: 0, arrived: 0 },
): DigestNotice {
  const count = countOf(total, "contact message");
  const waiting = held.waiting > 0 ? `${held.waiting} held for review` : null;
  const title = total === 0 && waiting !== null
    ? `${countOf(held.waiting, "contact message")} held for review`
    : [`${count} received`, waiting].filter((part) => part !== null).join("; ");
  const ceiling = hits.map(ceilingNote);
  const heldLines = heldNote(held);
  return {
    title,
    body: [
      total === 0
        ? "Nothing new in the contact inbox since the last digest."
        : `New through the contact form since the last digest, from ${
          namesOf(messages.map((m) => m.name), total)
        }.`,
      ...ceiling,
      ...heldLines,
    ].join(" "),
    email: {
      subject: ["Contact form: " + count, waiting].filter((part) => part !== null).join(", "),
      heading: total === 0 ? "Contact messages held for review" : "New contact messages",
      paragraphs: [
        total === 0
          ? "No new message was sent through the contact form since the last digest."
          : `${count} ${
            total === 1 ? "was" : "were"
          } sent through the contact form since the last digest (or released from review).`,
        ...ceiling,
        ...heldLines,
        ...shownNote(messages.length, total, "oldest"),
      ],
      items: messages.map((m) => ({
        title: `${m.subject ?? "(no subject)"} — ${m.name} <${m.email}>`,
        detail: `${formatUtc(m.createdAt)}${
          m.releasedAt ? ` (held, released ${formatUtc(m.releasedAt)})` : ""
        }: ${excerpt(m.message, MESSAGE_EXCERPT_CHARS)}`,
      })),
      action: { label: "Read the messages", url: "/admin/messages" },
      footer: "You receive this digest because you are an admin of the marketplace.",
    },
  };
}
