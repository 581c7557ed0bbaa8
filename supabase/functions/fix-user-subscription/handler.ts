/**
 * `fix-user-subscription` (admin): for a user (`userId` or `email`), finds
 * the processor customer (stored, our metadata, or — here only — the user's
 * confirmed e-mail, when that customer names no other user), repairs the
 * user ↔ customer link on both sides, mirrors the customer's best
 * subscription (or ends a link to one that no longer exists), and reports
 * the actions and the row before and after.
 *
 * @module
 */
import { findCustomer, linkCustomer, tagCustomer } from "../_shared/billing/customers.ts";
import { markGone } from "../_shared/billing/subscription_gone.ts";
import {
  changedFields,
  describeRow,
  subscriptionRow,
} from "../_shared/billing/subscription_rows.ts";
import { chooseSubscription } from "../_shared/billing/subscription_state.ts";
import { readSubscription, syncSubscription } from "../_shared/billing/subscription_sync.ts";
import { findUser } from "../_shared/billing/users.ts";
import { notFound } from "../_shared/platform/errors.ts";
import { defineFunction } from "../_shared/platform/function.ts";
import { ourPlans } from "../_shared/billing/plan_prices.ts";
import { payprocFor } from "../_shared/platform/payproc.ts";

export default defineFunction({
  name: "fix-user-subscription",
  access: "admin",
  group: "billing",
  summary: "Repairs a user's link to their subscription",
  input: () =>
    import("../../../shared/billing_schemas.ts").then((schemas) =>
      schemas.FixUserSubscriptionInput
    ),
  output: "FixUserSubscriptionOutput",
  async handle({ input, ctx }) {
    const user = await findUser(ctx.db, input);
    if (!user) throw notFound(`Cannot repair: no user "${input.userId ?? input.email}"`);
    const before = await subscriptionRow(ctx.db, user.id);
    const actions: string[] = [];
    const found = await findCustomer(ctx, user, { byEmail: true });
    let subscriptionId: string | null = null;
    if (found) {
      if (await linkCustomer(ctx.db, user.id, found.customer.id)) actions.push("linked_customer");
      if (found.customer.metadata?.user_id !== user.id) {
        await tagCustomer(ctx, user.id, found.customer);
        actions.push("tagged_customer");
      } else if (found.via === "email") {
        actions.push("tagged_customer");
      }
      const payproc = await payprocFor(ctx);
      const readAt = new Date();
      const listed = await payproc.subscriptions.list({
        customer: found.customer.id,
        status: "all",
        limit: 100,
        expand: ["data.customer"],
      });
      const best = chooseSubscription(listed.data, await ourPlans(ctx));
      if (best) {
        subscriptionId = best.id;
        const result = await syncSubscription(ctx, best, { userId: user.id, readAt });
        actions.push(result.result === "changed" ? "synced_subscription" : `sync_${result.result}`);
      }
    }
    const linked = (await subscriptionRow(ctx.db, user.id))?.payproc_subscription_id;
    if (linked && linked !== subscriptionId) {
      const current = await readSubscription(ctx, linked);
      if (current === null) {
        if (await ctx.db.tx((sql) => markGone(sql, linked))) {
          actions.push("ended_missing_subscription");
        }
      } else {
        const result = await syncSubscription(ctx, current.subscription, {
          userId: user.id,
          readAt: current.readAt,
        });
        actions.push(
          result.result === "changed" ? "synced_linked_subscription" : `sync_${result.result}`,
        );
      }
    }
    const after = await subscriptionRow(ctx.db, user.id);
    return {
      userId: user.id,
      email: user.email,
      customerId: found?.customer.id ?? null,
      customerFoundBy: found?.via ?? null,
      subscriptionId: subscriptionId ?? after?.payproc_subscription_id ?? null,
      actions,
      changed: changedFields(before, after),
      before: describeRow(before),
      after: describeRow(after),
    };
  },
});
