/**
 * The daily digest of new listings (opt-in, `send-listing-notifications`):
 * the listings approved since the user's last digest, newest first, as an
 * in-app notice and an e-mail that say the same thing. Also the helpers the
 * digest templates share (counted nouns, prices, times).
 *
 * @module
 */
import type { EmailContent } from "../render.ts";

/** A digest as one recipient gets it: the in-app title and body, and the e-mail. */
export interface DigestNotice {
  title: string;
  /** Plain text (at most 5000 characters, the in-app limit). */
  body: string;
  email: EmailContent;
}

/** A listing as the new-listings digest shows it (prices in major units, as stored). */
export interface DigestListing {
  id: string;
  title: string;
  category: string;
  askingPrice: string;
  currency: string;
}

/** The longest in-app body (`notifications.body` allows 5000 characters). */
const MAX_BODY_CHARS = 5000;

/** How many titles an in-app body names before "and N more". */
const TITLES_IN_BODY = 5;

/** `3, "listing"` → "3 listings"; `1, "message"` → "1 message". */
export function countOf(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? "" : "s"}`;
}

/** `"40000.17", "USD"` → "$40,000.17"; falls back to "40000.17 XYZ" for unknown codes. */
export function formatPrice(amount: string, currency: string): string {
  try {
    return new Intl.NumberFormat("en-US", { style: "currency", currency }).format(Number(amount));
  } catch {
    return `${amount} ${currency}`;
  }
}

/** A time as "2026-11-23 08:05 UTC". */
export function formatUtc(at: Date): string {
  return `${at.toISOString().slice(0, 16).replace("T", " ")} UTC`;
}

/** `"A", "B" and 3 more`: the first few quoted names of `total`. */
export function namesOf(names: string[], total: number): string {
  const shown = names.slice(0, TITLES_IN_BODY).map((name) => `"${name}"`);
  const rest = total - shown.length;
  if (rest <= 0) {
    return shown.length <= 1
      ? shown.join("")
      : `${shown.slice(0, -1).join(", ")} and ${shown.at(-1)}`;
  }
  return `${shown.join(", ")} and ${rest} more`;
}

/** `text` cut to the in-app limit. */
export function clipBody(text: string): string {
  return text.length <= MAX_BODY_CHARS ? text : `${text.slice(0, MAX_BODY_CHARS - 1)}…`;
}

/**
 * The digest of `total` new listings, of which `listings` (newest first,
 * at most the shown cap) are listed.
 */
export function newListingsDigest(listings: DigestListing[], total: number): DigestNotice {
  const count = countOf(total, "new listing");
  const more = total - listings.length;
  const title = `${count} on the marketplace`;
  const body = clipBody(
    `Approved since your last digest: ${namesOf(listings.map((l) => l.title), total)}.`,
  );
  return {
    title,
    body,
    email: {
      subject: title,
      heading: "New listings for you",
      paragraphs: [
        `${count} ${total === 1 ? "was" : "were"} approved since your last digest${
          more > 0 ? `; here are the newest ${listings.length}` : ""
        }.`,
      ],
      items: listings.map((listing) => ({
        title: listing.title,
        url: `/listings/${listing.id}`,
        detail: `${listing.category} · ${formatPrice(listing.askingPrice, listing.currency)}`,
      })),
      action: { label: "Explore all listings", url: "/explore" },
      footer:
        "You receive this daily digest because you switched it on. Switch it off in your notification settings.",
    },
  };
}
