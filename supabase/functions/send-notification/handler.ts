/**
 * `send-notification` (system: the service-role key or an admin): one
 * in-app notice to a user `{ userId, type, title, body, link?, data?,
 * email? }` — broadcast live on the user's topic — and, when `email` is
 * true and the user's preference for `type` allows, the same as an e-mail.
 * Answers what was written: `{ userId, notificationId, inApp, email }`.
 *
 * @module
 */
import { noticeEmail } from "../_shared/email/templates/messages.ts";
import { defineFunction } from "../_shared/platform/function.ts";
import { sendNotices } from "../_shared/notifications/notify.ts";
import { requireUser } from "../_shared/notifications/subjects.ts";

export default defineFunction({
  name: "send-notification",
  access: "system",
  group: "notifications",
  summary: "Writes an in-app notice and, when asked and allowed, e-mails it",
  input: () =>
    import("../../../shared/notification_schemas.ts").then((schemas) =>
      schemas.SendNotificationInput
    ),
  output: "NoticeResult",
  async handle({ input, ctx }) {
    await requireUser(ctx.db, input.userId);
    const [result] = await sendNotices(ctx, [{
      userId: input.userId,
      type: input.type,
      title: input.title,
      body: input.body,
      link: input.link,
      data: input.data,
      email: input.email
        ? { emailType: "notification", content: noticeEmail(input.title, input.body, input.link) }
        : undefined,
    }]);
    return result!;
  },
});
