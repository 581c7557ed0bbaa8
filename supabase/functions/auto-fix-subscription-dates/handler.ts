/**
 * `auto-fix-subscription-dates` (scheduled, daily): `fix-subscription-dates`
 * for every row that mirrors a processor subscription, reading the processor
 * a page at a time (each page before any write); `dryRun` only counts. A
 * start while a run is in progress answers 200 `skipped`; a run answers the
 * counts, or 500 `partial_failure` listing failed rows.
 *
 * @module
 */
import { fixPeriod, type PeriodFix } from "../_shared/billing/period_fix.ts";
import { forEachSubscriptionPage } from "../_shared/billing/subscription_pages.ts";
import { readSubscription } from "../_shared/billing/subscription_sync.ts";
import { defineFunction } from "../_shared/platform/function.ts";
import { runGuardedJob } from "../_shared/platform/jobs/guard.ts";
import { ourPlans } from "../_shared/billing/plan_prices.ts";

export default defineFunction({
  name: "auto-fix-subscription-dates",
  access: "scheduled",
  group: "billing",
  summary: "Corrects subscription dates of all rows",
  input: () =>
    import("../../../shared/billing_schemas.ts").then((schemas) =>
      schemas.AutoFixSubscriptionDatesInput
    ),
  output: "JobAnswer",
  handle({ input, ctx }) {
    const dryRun = input.dryRun;
    return runGuardedJob(ctx, "auto-fix-subscription-dates", { dryRun }, async (tally) => {
      const rows = new Map(
        (await ctx.db.query<{ user_id: string; payproc_subscription_id: string }>(
          `select user_id, payproc_subscription_id from public.subscriptions
           where source = 'payproc' and payproc_subscription_id is not null`,
        )).map((r) => [r.payproc_subscription_id, r.user_id]),
      );
      const plans = await ourPlans(ctx);
      const record = (fix: PeriodFix | undefined) => {
        if (!fix?.changed) return;
        if (fix.written || dryRun) tally.changed++;
        else tally.count("refused");
      };
      await forEachSubscriptionPage(ctx, "all", async (subscriptions, readAt) => {
        for (const subscription of subscriptions) {
          const userId = rows.get(subscription.id);
          if (userId === undefined) continue;
          rows.delete(subscription.id);
          tally.scanned++;
          const read = { subscription, readAt, plans };
          record(
            await tally.attempt(
              subscription.id,
              () => ctx.db.tx((sql) => fixPeriod(sql, userId, read, dryRun)),
            ),
          );
        }
      });
      for (const [subscriptionId, userId] of rows) {
        tally.scanned++;
        record(
          await tally.attempt(subscriptionId, async () => {
            const current = await readSubscription(ctx, subscriptionId);
            if (!current) {
              tally.count("missing");
              return undefined;
            }
            const read = { ...current, plans };
            return await ctx.db.tx((sql) => fixPeriod(sql, userId, read, dryRun));
          }),
        );
      }
    });
  },
});
