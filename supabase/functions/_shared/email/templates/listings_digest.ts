/**
 * The daily digest of new listings (opt-in, `send-listing-notifications`):
 * the listings approved since the user's last digest, newest first, as an
 * in-app notice and an e-mail that say the same thing.
 *
 * @module
 */
import { fieldPresentation } from "../../../../../shared/blur.ts";
import type { EmailContent } from "../render.ts";
import { countOf, formatMoney, namesOf } from "../../lib/format.ts";

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
  /** Null when the asking price is hidden from the recipient (the blur rule). */
  askingPrice: string | null;
  /**
   * Why a hidden price is hidden: the recipient's plan, or the listing's
   * confidentiality (an nda listing they have no approved access to; it
   * wins when both hide it, as only access can show it then).
   */
  priceHiddenBy?: "plan" | "confidential";
  currency: string;
}

/** What stands for an asking price the recipient's plan hides (the UI blurs it). */
export const HIDDEN_PRICE = "price hidden on your plan";

/** What stands for an asking price a confidential listing keeps from the recipient. */
export const CONFIDENTIAL_PRICE = "price shared once the seller approves your access";

/**
 * The price part of a listing's line: its price; for a hidden one the
 * placeholder, or nothing if the blur policy leaves the field out
 * (`fieldPresentation`, as the frontend shows it).
 */
function priceOf(listing: DigestListing): string | null {
  if (listing.askingPrice !== null) return formatMoney(listing.askingPrice, listing.currency);
  if (fieldPresentation("asking_price", ["asking_price"]) !== "placeholder") return null;
  return listing.priceHiddenBy === "confidential" ? CONFIDENTIAL_PRICE : HIDDEN_PRICE;
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
        detail: [listing.category, priceOf(listing)].filter((part) => part !== null).join(" · "),
      })),
      action: { label: "Explore all listings", url: "/explore" },
      footer:
        "You receive this daily digest because you switched it on. Switch it off in your notification settings.",
    },
  };
}
