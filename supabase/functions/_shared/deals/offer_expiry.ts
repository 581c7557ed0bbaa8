/**
 * The offer expiry sub-job: marks pending offers past their `expires_at`
 * expired (`public.expire_offers()`, which skips offers a decision holds
 * locked), under the job guard. The daily orchestrator runs it; offers past
 * their expiry are already treated as expired by every decision, so this
 * only brings the stored status in line.
 *
 * @module
 */
import type { Context } from "../platform/context.ts";
import { type JobSkipped, runGuardedJob } from "../platform/jobs/guard.ts";
import type { JobOutput } from "../platform/jobs/runs.ts";

/** The job name in `job_runs`. */
export const OFFER_EXPIRY_JOB = "offer-expiry";

/** Runs `public.expire_offers()` as the guarded job `offer-expiry`, counting `expired`. */
export function runOfferExpiry(ctx: Context): Promise<JobOutput | JobSkipped> {
  return runGuardedJob(ctx, OFFER_EXPIRY_JOB, {}, async (tally) => {
    const row = await ctx.db.one<{ expired: number }>(
      "select public.expire_offers() as expired",
    );
    tally.scanned += row.expired;
    tally.changed += row.expired;
    tally.count("expired", row.expired);
  });
}
