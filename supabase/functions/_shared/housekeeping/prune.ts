/**
 * The housekeeping sub-job: forgets what has lapsed and is only kept for a
 * while — AI analysis cache entries past their 24 hours
 * (`public.prune_project_analysis_cache`), rate-limit windows that ended
 * more than a day ago (`public.prune_rate_limits`) and queued notices sent
 * or dropped more than 30 days ago (`public.prune_notice_queue`; failed ones
 * stay for an operator). The daily orchestrator runs it; nothing reads
 * these rows once lapsed, so a late or skipped run changes no answer, only
 * the tables' size.
 *
 * @module
 */
import type { Context } from "../platform/context.ts";
import { type JobSkipped, runGuardedJob } from "../platform/jobs/guard.ts";
import type { JobOutput } from "../platform/jobs/runs.ts";

/** The job name in `job_runs`. */
export const HOUSEKEEPING_JOB = "housekeeping";

/** Prunes lapsed analysis cache entries, old rate-limit windows and old queued notices, counting each. */
export function runHousekeeping(ctx: Context): Promise<JobOutput | JobSkipped> {
  return runGuardedJob(ctx, HOUSEKEEPING_JOB, {}, async (tally) => {
    const cache = await ctx.db.one<{ pruned: number }>(
      "select public.prune_project_analysis_cache($1) as pruned",
      [ctx.now()],
    );
    const limits = await ctx.db.one<{ pruned: number }>(
      "select public.prune_rate_limits(interval '1 day') as pruned",
    );
    const notices = await ctx.db.one<{ pruned: number }>(
      "select public.prune_notice_queue(interval '30 days') as pruned",
    );
    const pruned = cache.pruned + limits.pruned + notices.pruned;
    tally.scanned += pruned;
    tally.changed += pruned;
    tally.count("analysisCacheEntries", cache.pruned);
    tally.count("rateLimitWindows", limits.pruned);
    tally.count("noticeQueueRows", notices.pruned);
  });
}
