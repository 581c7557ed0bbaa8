/**
 * The `run-price-alerts` job: match every active alert (one SQL statement),
 * tell the users with new matches, and record the run in
 * `price_alert_runs` — under the job guard, so two starts at once run once.
 * The daily orchestrator and the scheduled function both call
 * {@linkcode runPriceAlerts}.
 *
 * @module
 */
import type { Context } from "../platform/context.ts";
import { type JobSkipped, runGuardedJob } from "../platform/jobs/guard.ts";
import type { JobOutput } from "../platform/jobs/runs.ts";
import type { JobTally } from "../platform/jobs/tally.ts";
import { deliverPriceAlerts } from "./deliver.ts";
import { matchPriceAlerts } from "./match.ts";
import {
  finishPriceAlertRun,
  noCounts,
  type PriceAlertRunCounts,
  startPriceAlertRun,
} from "./price_alert_runs.ts";

/** The job name in `job_runs` and `job_schedules`. */
export const PRICE_ALERTS_JOB = "run-price-alerts";

/** Puts a run's counts into the job's answer. */
function report(tally: JobTally, counts: PriceAlertRunCounts): void {
  tally.scanned = counts.alertsScanned;
  tally.changed = counts.eventsCreated;
  tally.count("matches", counts.matches);
  tally.count("events_created", counts.eventsCreated);
  tally.count("delivered", counts.delivered);
  tally.count("failed", counts.failed);
  tally.count("suppressed", counts.suppressed);
  tally.count("users_notified", counts.usersNotified);
  tally.count("pending_left", counts.pendingLeft);
}

/**
 * Runs the price alerts once (guarded job `run-price-alerts`): `scanned`
 * is the active alerts, `changed` the events created, and `counts` holds
 * `matches`, `events_created`, `delivered`, `failed`, `suppressed` (events
 * this run moved to each status), `users_notified` and `pending_left`
 * (events left for the next run). Users whose notice could not be written
 * are failed items (500 `partial_failure`); their events wait.
 */
export function runPriceAlerts(ctx: Context): Promise<JobOutput | JobSkipped> {
  return runGuardedJob(ctx, PRICE_ALERTS_JOB, {}, async (tally, job) => {
    const run = await startPriceAlertRun(ctx.db, job.id);
    const counts = noCounts();
    try {
      let start = performance.now();
      Object.assign(counts, await matchPriceAlerts(ctx.db, run.since));
      counts.matchMs = performance.now() - start;
      start = performance.now();
      Object.assign(counts, await deliverPriceAlerts(ctx, tally));
      counts.deliveryMs = performance.now() - start;
    } catch (error) {
      await finishPriceAlertRun(ctx.db, run, "failed", counts).catch((finishError) =>
        ctx.log.error("cannot record failed price alert run", { error: String(finishError) })
      );
      throw error;
    }
    await finishPriceAlertRun(
      ctx.db,
      run,
      tally.failures.length > 0 ? "partial" : "succeeded",
      counts,
    );
    report(tally, counts);
  });
}
