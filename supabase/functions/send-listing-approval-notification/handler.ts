/**
 * `send-listing-approval-notification` (admin): `{ listingId }` of an
 * approved listing → its seller learns it is live (e-mail and in-app
 * notice). Once per approval: a repeated call sends nothing; a later
 * approval (after an edit went back to review) is a new one. 409 when the
 * listing is not approved.
 *
 * @module
 */
import { listingApprovedEmail } from "../_shared/email/templates/listings.ts";
import { conflict } from "../_shared/platform/errors.ts";
import { defineFunction } from "../_shared/platform/function.ts";
import { sendNotices } from "../_shared/notifications/notify.ts";
import { requireListing } from "../_shared/notifications/subjects.ts";

export default defineFunction({
  name: "send-listing-approval-notification",
  access: "admin",
  group: "notifications",
  summary: "Tells a seller their listing is live",
  input: () =>
    import("../../../shared/notification_schemas.ts").then((schemas) => schemas.ListingIdInput),
  output: "NoticesOutput",
  async handle({ input, ctx }) {
    const listing = await requireListing(ctx.db, input.listingId);
    if (listing.reviewStatus !== "approved") {
      throw conflict(
        `Cannot announce listing "${listing.id}": it is "${listing.reviewStatus}", not approved`,
        { reviewStatus: listing.reviewStatus },
      );
    }
    const email = listingApprovedEmail(listing);
    const results = await sendNotices(ctx, [{
      userId: listing.sellerId,
      type: "listing_review",
      title: "Your listing is live",
      body: `"${listing.title}" was approved and is now public.`,
      link: `/listings/${listing.id}`,
      data: { listingId: listing.id, reviewStatus: "approved" },
      key: `listing_approved:${listing.id}:${listing.reviewedAt ?? 0}`,
      email: { emailType: "listing_approved", content: email },
    }]);
    return { results };
  },
});
