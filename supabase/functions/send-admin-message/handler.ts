/**
 * `send-admin-message` (admin): `{ userIds (1..500), subject, message }` →
 * an e-mail and an in-app notice to each user (type `messages`, honouring
 * their preferences), one result per recipient; ids that name no user are
 * listed in `unknownUserIds`. The same admin sending the same message to
 * the same user again on the same day sends nothing twice (a retried curl).
 *
 * @module
 */
import { adminMessageEmail } from "../_shared/email/templates/messages.ts";
import { defineFunction } from "../_shared/platform/function.ts";
import { sha256Hex } from "../_shared/lib/hex.ts";
import { queueNotice, withDelivery } from "../_shared/notifications/notify.ts";

async function messageKey(senderId: string, subject: string, message: string): Promise<string> {
  const day = new Date().toISOString().slice(0, 10);
  const hex = await sha256Hex(JSON.stringify([senderId, subject, message]));
  return `admin_message:${day}:${hex.slice(0, 32)}`;
}

export default defineFunction({
  name: "send-admin-message",
  access: "admin",
  group: "notifications",
  summary: "E-mails and notifies chosen users from an admin",
  input: () =>
    import("../../../shared/notification_schemas.ts").then((schemas) =>
      schemas.SendAdminMessageInput
    ),
  output: "SendAdminMessageOutput",
  async handle({ input, caller, ctx }) {
    const wanted = [...new Set(input.userIds)];
    const key = await messageKey(caller.id, input.subject, input.message);
    const content = adminMessageEmail(input.subject, input.message);
    const written = await ctx.db.tx(async (sql) => {
      const known = new Set(
        (await sql.query<{ id: string }>("select id from auth.users where id = any($1::uuid[])", [
          wanted,
        ])).map((row) => row.id),
      );
      const results = [];
      for (const userId of wanted.filter((id) => known.has(id))) {
        results.push(
          await queueNotice(ctx, sql, {
            userId,
            type: "messages",
            title: input.subject,
            body: input.message,
            data: { from: "admin" },
            key,
            email: { emailType: "admin_message", content },
          }),
        );
      }
      return { results, unknownUserIds: wanted.filter((id) => !known.has(id)) };
    });
    return {
      results: await withDelivery(ctx, written.results),
      unknownUserIds: written.unknownUserIds,
    };
  },
});
