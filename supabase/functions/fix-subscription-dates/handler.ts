/**
 * `fix-subscription-dates` (admin): sets one user's (`userId` or `email`)
 * period dates to those of their processor subscription when missing or
 * different; `dryRun` only reports. 404 when the user or their processor
 * subscription does not exist.
 *
 * @module
 */
import { fixPeriod } from "../_shared/billing/period_fix.ts";
import { subscriptionRow } from "../_shared/billing/subscription_rows.ts";
import { readSubscription } from "../_shared/billing/subscription_sync.ts";
import { findUser } from "../_shared/billing/users.ts";
import { notFound } from "../_shared/platform/errors.ts";
import { defineFunction } from "../_shared/platform/function.ts";
import { ourPlans } from "../_shared/billing/plan_prices.ts";

export default defineFunction({
  name: "fix-subscription-dates",
  access: "admin",
  group: "billing",
  summary: "Corrects one user's subscription dates",
  input: () =>
    import("../../../shared/billing_schemas.ts").then((schemas) =>
      schemas.FixSubscriptionDatesInput
    ),
  output: "FixSubscriptionDatesOutput",
  async handle({ input, ctx }) {
    const user = await findUser(ctx.db, input);
    if (!user) throw notFound(`Cannot fix dates: no user "${input.userId ?? input.email}"`);
    const row = await subscriptionRow(ctx.db, user.id);
    const subscriptionId = row?.payproc_subscription_id;
    if (!subscriptionId) {
      throw notFound(`Cannot fix dates: user "${user.id}" has no processor subscription`);
    }
    const current = await readSubscription(ctx, subscriptionId);
    if (!current) {
      throw notFound(
        `Cannot fix dates: subscription "${subscriptionId}" does not exist at the processor`,
      );
    }
    const read = { ...current, plans: await ourPlans(ctx) };
    const fix = await ctx.db.tx((sql) => fixPeriod(sql, user.id, read, input.dryRun));
    return { dryRun: input.dryRun, ...fix };
  },
});
