/**
 * `send-admin-listing-notification` (scheduled, and admins): the review
 * digest. Listings submitted for review since the last digest go to every
 * admin as one in-app notice and one e-mail; answers `{ type, sent, items,
 * lastSentAt, results }` (`sent: 0` when nothing new arrived). The
 * scheduler and the service key may run it only while
 * `admin_notification_types.cron_schedule` is set for `listing_review`
 * (403 otherwise); an admin may always.
 *
 * @module
 */
import { defineFunction } from "../_shared/platform/function.ts";
import { sendAdminDigest } from "../_shared/notifications/admin_digest.ts";

export default defineFunction({
  name: "send-admin-listing-notification",
  access: "admin",
  scheduler: true,
  group: "notifications",
  summary: "Digest of listings awaiting review, to admins",
  output: "AdminDigestOutput",
  handle({ ctx, caller }) {
    return sendAdminDigest(ctx, "listing_review", caller);
  },
});
