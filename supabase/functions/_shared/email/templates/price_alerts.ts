/**
 * The notice of price-alert matches (`run-price-alerts`): the listings that
 * matched a user's listing alerts and saved searches, each with its price
 * and a link, as an in-app notice and an e-mail that say the same thing.
 *
 * @module
 */
import type { EmailContent } from "../render.ts";
import { countOf, formatMoney } from "../../lib/format.ts";

/** Listings one notice lists at most (it counts them all). */
export const PRICE_ALERT_LISTINGS_SHOWN = 20;

/** Where a notice about several matches leads (the user's alerts page). */
export const PRICE_ALERTS_PAGE = "/price-alerts";

/** Which alert a listing matched, as the notice explains it. */
export type MatchedAlert =
  | { kind: "listing"; targetPrice: string }
  | { kind: "search"; category: string; maxPrice: string };

/** A listing that matched one of the user's alerts, at the price it matched (major units). */
export interface PriceAlertMatch {
  listingId: string;
  title: string;
  price: string;
  currency: string;
  alert: MatchedAlert;
}

/** A notice as one user gets it: the in-app title, body and link, and the e-mail. */
export interface PriceAlertNotice {
  title: string;
  /** Plain text (clipped to the in-app limit by the notifications module). */
  body: string;
  link: string;
  /** The listings listed (at most {@linkcode PRICE_ALERT_LISTINGS_SHOWN}). */
  listingIds: string[];
  /** Distinct listings matched. */
  total: number;
  email: EmailContent;
}

/** The same listing matched by two alerts is told once (its first match). */
function distinctListings(matches: PriceAlertMatch[]): PriceAlertMatch[] {
  const seen = new Set<string>();
  return matches.filter((match) => !seen.has(match.listingId) && seen.add(match.listingId));
}

/** Why the listing matched: "at or below your target of $2,000.00", "saas, up to $2,000.00". */
function reasonOf(match: PriceAlertMatch): string {
  return match.alert.kind === "listing"
    ? `at or below your target of ${formatMoney(match.alert.targetPrice, match.currency)}`
    : `your search in ${match.alert.category}, up to ${
      formatMoney(match.alert.maxPrice, match.currency)
    }`;
}

/** How many listings the in-app body names before "and N more". */
const NAMES_SHOWN = 5;

/** `"A" at $1.00, "B" at $2.00 and 3 more`. */
function pricedNames(listings: PriceAlertMatch[], total: number): string {
  const named = listings.slice(0, NAMES_SHOWN).map((l) =>
    `"${l.title}" at ${formatMoney(l.price, l.currency)}`
  );
  const rest = total - named.length;
  if (rest > 0) return `${named.join(", ")} and ${rest} more`;
  return named.length <= 1
    ? named.join("")
    : `${named.slice(0, -1).join(", ")} and ${named.at(-1)}`;
}

/** The notice of `matches`, listed in their order; the same listing twice is listed once. */
export function priceAlertNotice(matches: PriceAlertMatch[]): PriceAlertNotice {
  const listings = distinctListings(matches);
  const total = listings.length;
  const shown = listings.slice(0, PRICE_ALERT_LISTINGS_SHOWN);
  const first = shown[0];
  const title = total === 1 && first
    ? `"${first.title}" is now ${formatMoney(first.price, first.currency)}`
    : `${countOf(total, "listing")} match your price alerts`;
  const body = total === 1 && first
    ? `It matches ${reasonOf(first)}.`
    : `Matching your price alerts: ${pricedNames(shown, total)}.`;
  const link = total === 1 && first ? `/listings/${first.listingId}` : PRICE_ALERTS_PAGE;
  const more = total - shown.length;
  return {
    title,
    body,
    link,
    listingIds: shown.map((l) => l.listingId),
    total,
    email: {
      subject: title,
      heading: "Your price alerts",
      paragraphs: [
        `${countOf(total, "listing")} ${total === 1 ? "matches" : "match"} your price alerts${
          more > 0 ? `; here are the first ${shown.length}` : ""
        }.`,
      ],
      items: shown.map((l) => ({
        title: l.title,
        url: `/listings/${l.listingId}`,
        detail: `${formatMoney(l.price, l.currency)} · ${reasonOf(l)}`,
      })),
      action: { label: "See your price alerts", url: PRICE_ALERTS_PAGE },
      footer:
        "You receive this because you saved these price alerts. Switch an alert off, or price-alert e-mails in your notification settings.",
    },
  };
}
