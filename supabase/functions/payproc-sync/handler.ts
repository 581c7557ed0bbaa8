/**
 * `payproc-sync` (scheduled, hourly): brings `subscriptions` in line with the
 * processor's live subscriptions (and re-reads rows it did not list), expires
 * grants past their end. Guarded against overlapping runs (409); answers the
 * counts, or 500 `partial_failure` listing the items that failed.
 *
 * @module
 */
import { runGuardedJob } from "../_shared/billing/job_guard.ts";
import { syncSubscriptions } from "../_shared/billing/subscription_jobs.ts";
import { defineFunction } from "../_shared/function.ts";

export default defineFunction({
  name: "payproc-sync",
  access: "scheduled",
  handle({ ctx }) {
    return runGuardedJob(ctx, "payproc-sync", {}, (tally) => syncSubscriptions(ctx, tally, "live"));
  },
});
