/**
 * `payproc-sync` (scheduled, hourly): brings `subscriptions` in line with the
 * processor's live subscriptions (and re-reads rows it did not list), expires
 * grants past their end. A start while a run is in progress answers 200
 * `skipped`; a run answers the counts, or 500 `partial_failure` listing the
 * items that failed.
 *
 * @module
 */
import { syncSubscriptions } from "../_shared/billing/subscription_jobs.ts";
import { defineFunction } from "../_shared/platform/function.ts";
import { runGuardedJob } from "../_shared/platform/jobs/guard.ts";

export default defineFunction({
  name: "payproc-sync",
  access: "scheduled",
  group: "billing",
  summary: "Syncs subscriptions with the payment processor",
  output: "JobAnswer",
  handle({ ctx }) {
    return runGuardedJob(ctx, "payproc-sync", {}, (tally) => syncSubscriptions(ctx, tally, "live"));
  },
});
