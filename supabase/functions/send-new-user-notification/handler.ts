/**
 * `send-new-user-notification` (system; e.g. a database webhook on new
 * users with the service-role key): `{ userId }` → a welcome e-mail and
 * in-app notice to the user, and one in-app notice to each admin. Guarded
 * per user: a second call for the same user sends nothing and answers
 * `welcomed: false`.
 *
 * @module
 */
import { welcomeEmail } from "../_shared/email/templates/account.ts";
import { defineFunction } from "../_shared/function.ts";
import {
  adminIds,
  queueNotice,
  wasNotified,
  withDelivery,
} from "../_shared/notifications/notify.ts";
import { requireUser } from "../_shared/notifications/subjects.ts";

/** The welcome's notice key: one per user. */
const WELCOME_KEY = "welcome";

export default defineFunction("send-new-user-notification", {
  async handle({ input, ctx }) {
    const written = await ctx.db.tx(async (sql) => {
      const user = await requireUser(sql, input.userId);
      // Concurrent calls for one user queue here; the first writes, the
      // others find its rows (and the writes are idempotent regardless).
      await sql.query("select pg_advisory_xact_lock(hashtextextended($1, 0))", [
        `${WELCOME_KEY}:${user.id}`,
      ]);
      const welcomedBefore = await wasNotified(sql, user.id, WELCOME_KEY);
      const welcome = await queueNotice(ctx, sql, {
        userId: user.id,
        type: "account",
        title: "Welcome to the marketplace",
        body: "Your account is ready. Explore listings or list your own project.",
        link: "/explore",
        key: WELCOME_KEY,
        email: { emailType: "welcome", content: welcomeEmail(user.fullName) },
      });
      const admins = [];
      for (const adminId of await adminIds(sql)) {
        if (adminId === user.id) continue;
        admins.push(
          await queueNotice(ctx, sql, {
            userId: adminId,
            type: "admin_digest",
            title: "New user",
            body: `${user.email ?? "A user without an address"} joined the marketplace.`,
            link: `/admin/users/${user.id}`,
            data: { userId: user.id },
            key: `new_user:${user.id}`,
          }),
        );
      }
      return { welcomed: !welcomedBefore, welcome, admins };
    });
    const [welcome, ...admins] = await withDelivery(ctx, [written.welcome, ...written.admins]);
    return { welcomed: written.welcomed, welcome: welcome!, admins };
  },
});
