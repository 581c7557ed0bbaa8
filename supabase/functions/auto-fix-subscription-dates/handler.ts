/**
 * `auto-fix-subscription-dates` (scheduled, daily): `fix-subscription-dates`
 * for every row that mirrors a processor subscription, reading the processor
 * a page at a time; `dryRun` only counts. Guarded against overlapping runs
 * (409); answers the counts, or 500 `partial_failure` listing failed rows.
 *
 * @module
 */
import { AutoFixSubscriptionDatesInput } from "../../../shared/schemas.ts";
import { runGuardedJob } from "../_shared/billing/job_guard.ts";
import { fixPeriod, type PeriodFix } from "../_shared/billing/period_fix.ts";
import { orNullIfMissing } from "../_shared/billing/processor.ts";
import { forEachSubscriptionPage } from "../_shared/billing/subscription_pages.ts";
import { defineFunction } from "../_shared/function.ts";

export default defineFunction({
  name: "auto-fix-subscription-dates",
  access: "scheduled",
  input: AutoFixSubscriptionDatesInput,
  handle({ input, ctx }) {
    const dryRun = input.dryRun;
    return runGuardedJob(ctx, "auto-fix-subscription-dates", { dryRun }, async (tally) => {
      const rows = new Map(
        (await ctx.db.query<{ user_id: string; payproc_subscription_id: string }>(
          `select user_id, payproc_subscription_id from public.subscriptions
           where source = 'payproc' and payproc_subscription_id is not null`,
        )).map((r) => [r.payproc_subscription_id, r.user_id]),
      );
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
          record(
            await tally.attempt(
              subscription.id,
              () => ctx.db.tx((sql) => fixPeriod(ctx, sql, userId, subscription, readAt, dryRun)),
            ),
          );
        }
      });
      for (const [subscriptionId, userId] of rows) {
        tally.scanned++;
        record(
          await tally.attempt(subscriptionId, async () => {
            const readAt = new Date();
            const subscription = await orNullIfMissing(
              ctx.payproc.subscriptions.retrieve(subscriptionId),
            );
            if (!subscription) {
              tally.count("missing");
              return undefined;
            }
            return await ctx.db.tx((sql) =>
              fixPeriod(ctx, sql, userId, subscription, readAt, dryRun)
            );
          }),
        );
      }
    });
  },
});
