/**
 * The access request expiry sub-job: marks pending access requests past
 * their `expires_at` (14 days unanswered) expired and queues each buyer's
 * notice (`public.expire_listing_access_requests()`, which skips requests a
 * decision holds locked), under the job guard. The daily orchestrator runs
 * it; a request past its expiry is already refused by every decision, so
 * this brings the stored status in line and tells the buyer.
 *
 * @module
 */
import type { Context } from "../platform/context.ts";
import { type JobSkipped, runGuardedJob } from "../platform/jobs/guard.ts";
import type { JobOutput } from "../platform/jobs/runs.ts";

/** The job name in `job_runs`. */
export const ACCESS_REQUEST_EXPIRY_JOB = "access-request-expiry";

/**
 * Runs `public.expire_listing_access_requests()` as the guarded job
 * `access-request-expiry`, counting `expired`.
 */
export function runAccessRequestExpiry(ctx: Context): Promise<JobOutput | JobSkipped> {
  return runGuardedJob(ctx, ACCESS_REQUEST_EXPIRY_JOB, {}, async (tally) => {
    const row = await ctx.db.one<{ expired: number }>(
      "select public.expire_listing_access_requests() as expired",
    );
    tally.scanned += row.expired;
    tally.changed += row.expired;
    tally.count("expired", row.expired);
  });
}
