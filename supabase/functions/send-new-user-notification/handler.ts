/**
 * `send-new-user-notification` (scheduled: the scheduler, the service-role
 * key or an admin; the anon key locally with `LOCAL_DEV=true`):
 *
 * - no body (every minute, from its `job_schedules` row): drains the
 *   new-user welcome queue that a trigger on `auth.users` fills for every
 *   sign-up — each queued user gets a welcome e-mail and in-app notice, and
 *   each admin an in-app notice — and answers the job counts (guarded job:
 *   a start while a run is in progress answers 200 `skipped`);
 * - `{ userId }` (the service-role key or an admin only; 403 for the
 *   scheduler token and the anon key, which start the drain and nothing
 *   else): welcomes that user now, the same way.
 *
 * Once per user either way: a second call, a second run or both at once
 * send nothing more, and a call for a user welcomed before answers
 * `welcomed: false` (`_shared/notifications/welcome.ts`).
 *
 * @module
 */
import { forbidden } from "../_shared/platform/errors.ts";
import { defineFunction } from "../_shared/platform/function.ts";
import { withDelivery } from "../_shared/notifications/notify.ts";
import { runWelcomeQueue, writeWelcome } from "../_shared/notifications/welcome.ts";

export default defineFunction({
  name: "send-new-user-notification",
  access: "scheduled",
  group: "notifications",
  summary:
    "Welcomes new users and tells the admins: every minute the queue of sign-ups, or one user by id",
  input: () =>
    import("../../../shared/notification_schemas.ts").then((schemas) =>
      schemas.SendNewUserNotificationInput
    ),
  output: "SendNewUserNotificationOutput",
  async handle({ input, caller, ctx }) {
    const userId = input.userId;
    if (userId === undefined) return await runWelcomeQueue(ctx);
    if (caller.kind === "scheduler" || caller.kind === "anon") {
      throw forbidden(
        "Welcoming a named user is for the system and admins; the scheduler starts the queue drain, with no body",
      );
    }
    const written = await ctx.db.tx((sql) => writeWelcome(ctx, sql, userId));
    const [welcome, ...admins] = await withDelivery(ctx, [written.welcome, ...written.admins]);
    return { welcomed: written.welcomed, welcome: welcome!, admins };
  },
});
