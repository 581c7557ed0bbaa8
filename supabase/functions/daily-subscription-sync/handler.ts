/**
 * `daily-subscription-sync` (scheduled, daily): like payproc-sync but over
 * every processor subscription, ended ones included, so rows whose events
 * were lost end up right. Guarded against overlapping runs (409); answers the
 * counts, or 500 `partial_failure` listing the items that failed.
 *
 * @module
 */
import { runGuardedJob } from "../_shared/billing/job_guard.ts";
import { syncSubscriptions } from "../_shared/billing/subscription_jobs.ts";
import { defineFunction } from "../_shared/function.ts";

export default defineFunction({
  name: "daily-subscription-sync",
  access: "scheduled",
  handle({ ctx }) {
    return runGuardedJob(
      ctx,
      "daily-subscription-sync",
      { staleAfterMs: 60 * 60_000 },
      (tally) => syncSubscriptions(ctx, tally, "all"),
    );
  },
});
