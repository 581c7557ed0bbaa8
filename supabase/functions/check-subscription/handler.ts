/**
 * `check-subscription` (signed-in user): reconciles the caller's
 * subscription with the processor — through the stored customer, else one
 * found by our metadata or by e-mail (never one that names another user) —
 * and answers `{ subscribed, subscription_level, subscription_status,
 * subscription_end }` where the level is the plan in effect.
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
import { defineFunction } from "../_shared/function.ts";

export default defineFunction({
  name: "check-subscription",
  access: "user",
  async handle({ caller, ctx }) {
    const email = caller.email ?? (await findUser(ctx.db, { userId: caller.id }))?.email ?? null;
    const user = { id: caller.id, email };
    const found = await findCustomer(ctx, user);
    if (found) {
      if (found.via !== "stored") await linkCustomer(ctx.db, user.id, found.customer.id);
      const readAt = new Date();
      const listed = await ctx.payproc.subscriptions.list({
        customer: found.customer.id,
        status: "all",
        limit: 20,
      });
      const best = chooseSubscription(listed.data);
      if (best) {
        await ctx.db.tx((sql) => syncSubscription(ctx, sql, best, { userId: user.id, readAt }));
      }
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
