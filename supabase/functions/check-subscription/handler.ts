/**
 * `check-subscription` (signed-in user, at most 10 calls a minute): reconciles
 * the caller's subscription with the processor — through the stored
 * customer, else one carrying our `user_id` metadata (never one found only
 * by e-mail: see `customers.ts`) — and answers `{ subscribed,
 * subscription_level, subscription_status, subscription_end }` where the
 * level is the plan in effect.
 *
 * @module
 */
import { findCustomer, linkCustomer } from "../_shared/billing/customers.ts";
import { expireGrants } from "../_shared/billing/grants.ts";
import { subscriptionRow } from "../_shared/billing/subscription_rows.ts";
import {
  chooseSubscription,
  type SubscriptionLevel,
} from "../_shared/billing/subscription_state.ts";
import { syncSubscription } from "../_shared/billing/subscription_sync.ts";
import { findUser } from "../_shared/billing/users.ts";
import { defineFunction } from "../_shared/platform/function.ts";
import { ourPlans } from "../_shared/billing/plan_prices.ts";
import { payprocFor } from "../_shared/platform/payproc.ts";

export default defineFunction({
  name: "check-subscription",
  access: "user",
  group: "billing",
  summary: "Verifies and syncs the caller's subscription",
  output: "CheckSubscriptionOutput",
  // Several processor calls per request: a client polling in a loop is slowed, not served.
  rateLimit: { limit: 10, windowSeconds: 60 },
  async handle({ caller, ctx }) {
    const user = await findUser(ctx.db, { userId: caller.id }) ??
      { id: caller.id, email: null, email_confirmed: false };
    const found = await findCustomer(ctx, user);
    if (found) {
      if (found.via !== "stored") await linkCustomer(ctx.db, user.id, found.customer.id);
      const payproc = await payprocFor(ctx);
      const readAt = new Date();
      const listed = await payproc.subscriptions.list({
        customer: found.customer.id,
        status: "all",
        limit: 20,
        expand: ["data.customer"],
      });
      const best = chooseSubscription(listed.data, await ourPlans(ctx));
      if (best) await syncSubscription(ctx, best, { userId: user.id, readAt });
    }
    await expireGrants(ctx.db, user.id);
    const [row, plan] = await Promise.all([
      subscriptionRow(ctx.db, user.id),
      ctx.db.one<{ plan: SubscriptionLevel }>("select public.current_plan($1) as plan", [user.id]),
    ]);
    return {
      subscribed: plan.plan !== "free",
      subscription_level: plan.plan,
      subscription_status: row?.subscription_status ?? null,
      subscription_end: row?.current_period_end?.toISOString() ?? null,
    };
  },
});
