/**
 * `send-admin-contact-notification` (scheduled, and admins): the contact
 * digest. Messages sent through the contact form since the last digest go
 * to every admin as one in-app notice and one e-mail; answers `{ type,
 * sent, items, lastSentAt, results }` (`sent: 0` when nothing new arrived).
 * The scheduler and the service key may run it only while
 * `admin_notification_types.cron_schedule` is set for `contact_messages`
 * (403 otherwise); an admin may always.
 *
 * @module
 */
import { defineFunction } from "../_shared/platform/function.ts";
import { sendAdminDigest } from "../_shared/notifications/admin_digest.ts";

export default defineFunction({
  name: "send-admin-contact-notification",
  access: "admin",
  scheduler: true,
  group: "notifications",
  summary: "Digest of new contact messages, to admins",
  output: "AdminDigestOutput",
  handle({ ctx, caller }) {
    return sendAdminDigest(ctx, "contact_messages", caller);
  },
});
