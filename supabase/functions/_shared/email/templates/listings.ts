/**
 * E-mails about a seller's listing under review: approved (live), or sent
 * back with the reviewer's reason.
 *
 * @module
 */
import type { EmailContent } from "../render.ts";

/** A listing as the review e-mails name it. */
export interface ReviewedListing {
  id: string;
  title: string;
}

/** "Your listing is live". */
export function listingApprovedEmail(listing: ReviewedListing): EmailContent {
  return {
    subject: `Your listing "${listing.title}" is live`,
    heading: "Your listing is live",
    paragraphs: [
      `"${listing.title}" was approved and buyers can now find it on the marketplace.`,
      "Editing its content sends it back to review before the change is public.",
    ],
    action: { label: "View your listing", url: `/listings/${listing.id}` },
  };
}

/** "Please update and resubmit", with the reason. */
export function listingResubmissionEmail(listing: ReviewedListing, reason: string): EmailContent {
  return {
    subject: `Please update your listing "${listing.title}"`,
    heading: "Your listing needs changes",
    paragraphs: [
      `We reviewed "${listing.title}" and could not publish it yet. The reviewer wrote:`,
    ],
    quote: reason,
    action: { label: "Edit and resubmit", url: `/listings/${listing.id}/edit` },
    footer: "Reply to this e-mail if something is unclear.",
  };
}
