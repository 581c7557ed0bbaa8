/**
 * Notices to a seller about a sponsored placement of their listing
 * (`send-sponsored-notifications`): it has started, and it ends within a
 * day. Each is an in-app notice and an e-mail that say the same thing.
 *
 * @module
 */
import type { EmailContent } from "../render.ts";
import { formatUtc } from "../../lib/format.ts";

/** A placement as its notices describe it. */
export interface SponsoredPlacement {
  listingId: string;
  /** The listing's title. */
  title: string;
  startsAt: Date;
  endsAt: Date;
}

/** One notice: the in-app title and body, and the e-mail. */
export interface SponsoredNotice {
  title: string;
  /** Plain text. */
  body: string;
  email: EmailContent;
}

/** Where the notices lead: the listing's page. */
export function sponsoredLink(placement: SponsoredPlacement): string {
  return `/listings/${placement.listingId}`;
}

const FOOTER =
  "You receive this e-mail about your sponsored placements. Switch these notices off in your notification settings.";

/** The notice that `placement` has started. */
export function sponsoredStartedNotice(placement: SponsoredPlacement): SponsoredNotice {
  const body = `"${placement.title}" is sponsored: it is shown first on the explore page until ${
    formatUtc(placement.endsAt)
  }.`;
  return {
    title: "Your sponsored placement has started",
    body,
    email: {
      subject: `Your listing "${placement.title}" is now sponsored`,
      heading: "Your sponsored placement has started",
      paragraphs: [
        body,
        `The placement runs from ${formatUtc(placement.startsAt)} to ${
          formatUtc(placement.endsAt)
        }.`,
      ],
      action: { label: "View your listing", url: sponsoredLink(placement) },
      footer: FOOTER,
    },
  };
}

/** The notice that `placement` ends within a day. */
export function sponsoredEndingNotice(placement: SponsoredPlacement): SponsoredNotice {
  const body = `The sponsored placement of "${placement.title}" ends at ${
    formatUtc(placement.endsAt)
  }; after that it is listed in the usual order.`;
  return {
    title: "Your sponsored placement ends soon",
    body,
    email: {
      subject: `The sponsored placement of "${placement.title}" ends soon`,
      heading: "Your sponsored placement ends soon",
      paragraphs: [body, "Contact us to extend it or to schedule another one."],
      action: { label: "View your listing", url: sponsoredLink(placement) },
      footer: FOOTER,
    },
  };
}
