/**
 * `send-resubmission-notification` (admin): `{ listingId, reason }` of a
 * rejected listing → its seller is asked to update and resubmit it, with
 * the reason (e-mail and in-app notice). Once per rejection: a repeated
 * call sends nothing. 409 when the listing is not rejected.
 *
 * @module
 */
import { listingResubmissionEmail } from "../_shared/email/templates/listings.ts";
import { conflict } from "../_shared/platform/errors.ts";
import { defineFunction } from "../_shared/platform/function.ts";
import { sendNotices } from "../_shared/notifications/notify.ts";
import { requireListing } from "../_shared/notifications/subjects.ts";

export default defineFunction({
  name: "send-resubmission-notification",
  access: "admin",
  group: "notifications",
  summary: "Asks a seller to resubmit a listing, with the reason",
  input: () =>
    import("../../../shared/notification_schemas.ts").then((schemas) =>
      schemas.SendResubmissionNotificationInput
    ),
  output: "NoticesOutput",
  async handle({ input, ctx }) {
    const listing = await requireListing(ctx.db, input.listingId);
    if (listing.reviewStatus !== "rejected") {
      throw conflict(
        `Cannot ask for a resubmission of listing "${listing.id}": it is "${listing.reviewStatus}", not rejected`,
        { reviewStatus: listing.reviewStatus },
      );
    }
    const results = await sendNotices(ctx, [{
      userId: listing.sellerId,
      type: "listing_review",
      title: "Your listing needs changes",
      body: `"${listing.title}" was not published. Reason: ${input.reason}`,
      link: `/listings/${listing.id}/edit`,
      data: { listingId: listing.id, reviewStatus: "rejected", reason: input.reason },
      key: `listing_resubmission:${listing.id}:${listing.reviewedAt ?? 0}`,
      email: {
        emailType: "listing_resubmission",
        content: listingResubmissionEmail(listing, input.reason),
      },
    }]);
    return { results };
  },
});
