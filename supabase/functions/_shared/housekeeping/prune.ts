/**
 * The housekeeping sub-job: forgets what has lapsed and is only kept for a
 * while — AI analysis cache entries past their 24 hours
 * (`public.prune_project_analysis_cache`), rate-limit windows that ended
 * more than a day ago (`public.prune_rate_limits`), queued notices sent or
 * dropped more than 30 days ago (`public.prune_notice_queue`; failed ones
 * stay for an operator), and the append-only tables past their retention
 * ({@linkcode RETENTION}: job runs, price-alert runs, daily slots, processor
 * events, the e-mail log, contact ceiling hits). Those are deleted in
 * batches of {@linkcode PRUNE_BATCH} rows, each its own short statement, at
 * most {@linkcode MAX_BATCHES} per table and run (a backlog shrinks over a
 * few days instead of holding one long transaction). The daily orchestrator
 * runs it; nothing reads these rows once lapsed, so a late or skipped run
 * changes no answer, only the tables' size. The money's audit (deal events,
 * settlements, stray payments, invoices) is never pruned.
 *
 * @module
 */
import type { Context } from "../platform/context.ts";
import { type JobSkipped, runGuardedJob } from "../platform/jobs/guard.ts";
import type { JobOutput } from "../platform/jobs/runs.ts";

/** The job name in `job_runs`. */
export const HOUSEKEEPING_JOB = "housekeeping";

/** Rows one prune call deletes at most. */
export const PRUNE_BATCH = 5000;

/** Prune calls per table and run at most. */
export const MAX_BATCHES = 20;

/** One append-only table's retention: its prune function, how long rows stay, its count's name. */
interface Retention {
  /** `public.<fn>(p_older_than interval, p_limit integer)`. */
  fn: string;
  /** A Postgres interval. */
  keep: string;
  /** The name of its count in the run's answer. */
  count: string;
}

/** The append-only tables pruned in batches, with their retention (see `docs/schedulers.md`). */
export const RETENTION: readonly Retention[] = [
  { fn: "prune_job_runs", keep: "90 days", count: "jobRuns" },
  { fn: "prune_price_alert_runs", keep: "90 days", count: "priceAlertRuns" },
  { fn: "prune_daily_task_runs", keep: "90 days", count: "dailyTaskRuns" },
  { fn: "prune_payproc_events", keep: "90 days", count: "payprocEvents" },
  { fn: "prune_email_logs", keep: "365 days", count: "emailLogs" },
  { fn: "prune_contact_ceiling_hits", keep: "90 days", count: "contactCeilingHits" },
];

/** Prunes lapsed and retained-long-enough rows, counting each table. */
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
    let pruned = cache.pruned + limits.pruned + notices.pruned;
    tally.count("analysisCacheEntries", cache.pruned);
    tally.count("rateLimitWindows", limits.pruned);
    tally.count("noticeQueueRows", notices.pruned);
    for (const table of RETENTION) {
      const n = await pruneInBatches(ctx, table);
      tally.count(table.count, n);
      pruned += n;
    }
    tally.scanned += pruned;
    tally.changed += pruned;
  });
}

/** Calls `table.fn` while it deletes a full batch, at most {@linkcode MAX_BATCHES} times. */
async function pruneInBatches(ctx: Context, table: Retention): Promise<number> {
  let total = 0;
  for (let batch = 0; batch < MAX_BATCHES; batch++) {
    const { pruned } = await ctx.db.one<{ pruned: number }>(
      `select public.${table.fn}($1::interval, $2) as pruned`,
      [table.keep, PRUNE_BATCH],
    );
    total += pruned;
    if (pruned < PRUNE_BATCH) break;
  }
  return total;
}
