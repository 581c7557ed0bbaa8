/**
 * The daily digest of new listings (opt-in, `send-listing-notifications`):
 * the listings approved since the user's last digest, newest first, as an
 * in-app notice and an e-mail that say the same thing.
 *
 * @module
 */
import type { EmailContent } from "../render.ts";
import { countOf, formatMoney, namesOf } from "../../format.ts";

/** A digest as one recipient gets it: the in-app title and body, and the e-mail. */
export interface DigestNotice {
  title: string;
  /** Plain text (clipped to the in-app limit by the notifications module). */
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

/**
 * The digest of `total` new listings, of which `listings` (newest first,
 * at most the shown cap) are listed.
 */
export function newListingsDigest(listings: DigestListing[], total: number): DigestNotice {
  const count = countOf(total, "new listing");
  const more = total - listings.length;
  const title = `${count} on the marketplace`;
  const body = `Approved since your last digest: ${namesOf(listings.map((l) => l.title), total)}.`;
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
        detail: `${listing.category} · ${formatMoney(listing.askingPrice, listing.currency)}`,
      })),
      action: { label: "Explore all listings", url: "/explore" },
      footer:
        "You receive this daily digest because you switched it on. Switch it off in your notification settings.",
    },
  };
}
