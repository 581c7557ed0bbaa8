/**
 * `daily-subscription-sync` (scheduled, daily): like payproc-sync but over
 * every processor subscription, ended ones included, so rows whose events
 * were lost end up right. A start while a run is in progress answers 200
 * `skipped`; a run answers the counts, or 500 `partial_failure` listing the
 * items that failed.
 *
 * @module
 */
import { syncSubscriptions } from "../_shared/billing/subscription_jobs.ts";
import { defineFunction } from "../_shared/platform/function.ts";
import { runGuardedJob } from "../_shared/platform/jobs/guard.ts";

export default defineFunction({
  name: "daily-subscription-sync",
  access: "scheduled",
  group: "billing",
  summary: "Periodic subscription sync",
  output: "JobAnswer",
  handle({ ctx }) {
    return runGuardedJob(
      ctx,
      "daily-subscription-sync",
      { staleAfterMs: 60 * 60_000 },
      (tally) => syncSubscriptions(ctx, tally, "all"),
    );
  },
});
