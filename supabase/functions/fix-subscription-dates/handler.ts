/**
 * `fix-subscription-dates` (admin): sets one user's (`userId` or `email`)
 * period dates to those of their processor subscription when missing or
 * different; `dryRun` only reports. 404 when the user or their processor
 * subscription does not exist.
 *
 * @module
 */
import { FixSubscriptionDatesInput } from "../../../shared/schemas.ts";
import { fixPeriod } from "../_shared/billing/period_fix.ts";
import { subscriptionRow } from "../_shared/billing/subscription_rows.ts";
import { findUser } from "../_shared/billing/users.ts";
import { orNullIfMissing } from "../_shared/billing/processor.ts";
import { notFound } from "../_shared/errors.ts";
import { defineFunction } from "../_shared/function.ts";

export default defineFunction({
  name: "fix-subscription-dates",
  access: "admin",
  input: FixSubscriptionDatesInput,
  async handle({ input, ctx }) {
    const user = await findUser(ctx.db, input);
    if (!user) throw notFound(`Cannot fix dates: no user "${input.userId ?? input.email}"`);
    const row = await subscriptionRow(ctx.db, user.id);
    const subscriptionId = row?.payproc_subscription_id;
    if (!subscriptionId) {
      throw notFound(`Cannot fix dates: user "${user.id}" has no processor subscription`);
    }
    const readAt = new Date();
    const subscription = await orNullIfMissing(ctx.payproc.subscriptions.retrieve(subscriptionId));
    if (!subscription) {
      throw notFound(
        `Cannot fix dates: subscription "${subscriptionId}" does not exist at the processor`,
      );
    }
    const fix = await ctx.db.tx((sql) =>
      fixPeriod(ctx, sql, user.id, subscription, readAt, input.dryRun)
    );
    return { dryRun: input.dryRun, ...fix };
  },
});
