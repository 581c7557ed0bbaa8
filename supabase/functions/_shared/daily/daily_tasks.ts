/**
 * The daily orchestrator: claims the (slot, UTC day) in
 * `public.daily_task_runs`, runs every sub-job in process, in order, each
 * timed and isolated (a failing one is recorded and the next still runs),
 * and records the results. A slot that already ran today, or is running,
 * answers its stored state instead; `force` runs a finished slot again.
 *
 * @module
 */
import type { z } from "zod";
import type {
  DailySubJobResult,
  RunDailyTasksOutput,
} from "../../../../shared/scheduled_schemas.ts";
import type { Context } from "../platform/context.ts";
import { toHttpError } from "../platform/to_http_error.ts";
import { DAILY_SUB_JOBS, type DailySubJob } from "./sub_jobs.ts";

/** One sub-job's result. */
export type SubJobResult = z.infer<typeof DailySubJobResult>;

/** The orchestrator's answer. */
export type DailyTasksAnswer = z.infer<typeof RunDailyTasksOutput>;

/** After this long a run that never finished (a crashed worker) may be taken over. */
export const DAILY_STALE_AFTER_MS = 30 * 60_000;

/** The UTC day of `at` as `YYYY-MM-DD`: the default slot and the day of every run. */
export function utcDay(at: Date): string {
  return at.toISOString().slice(0, 10);
}

interface Claim {
  run_id: string;
  outcome: "claimed" | "already_running" | "already_ran";
  results: SubJobResult[];
}

/**
 * Runs the daily sub-jobs for `slot` (default: today's UTC day) unless that
 * slot already ran today (or runs now) and `force` is not set. The answer's
 * `results` has one entry per sub-job; the caller answers 500 when any
 * `status` is `failed`.
 */
export async function runDailyTasks(
  ctx: Context,
  options: { slot?: string; force: boolean },
): Promise<DailyTasksAnswer> {
  const day = utcDay(new Date());
  const slot = options.slot ?? day;
  const claim = await ctx.db.one<Claim>(
    `select run_id, outcome, results
     from public.claim_daily_tasks($1, $2::date, $3, make_interval(secs => $4::double precision / 1000))`,
    [slot, day, options.force, DAILY_STALE_AFTER_MS],
  );
  const base = { slot, day, runId: claim.run_id, forced: options.force };
  if (claim.outcome !== "claimed") {
    ctx.log.info("daily tasks already ran or are running; this start is skipped", {
      slot,
      day,
      reason: claim.outcome,
    });
    return { ...base, skipped: true, reason: claim.outcome, results: claim.results };
  }

  const results: SubJobResult[] = [];
  for (const subJob of DAILY_SUB_JOBS) {
    results.push(await runSubJob(ctx, subJob));
  }
  const failed = results.some((result) => result.status === "failed");
  const recorded = await ctx.db.maybeOne(
    "select public.finish_daily_tasks($1, $2, $3::jsonb)",
    [claim.run_id, failed ? "failed" : "succeeded", JSON.stringify(results)],
  );
  if (!recorded) ctx.log.warn("daily tasks run was taken over before it finished", base);
  return { ...base, skipped: false, results };
}

/** Runs one sub-job, timing it and turning a failure into its result (logged as an error). */
async function runSubJob(ctx: Context, subJob: DailySubJob): Promise<SubJobResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  try {
    const answer = await subJob.run(ctx);
    const skipped = "skipped" in answer;
    return {
      job: subJob.job,
      status: skipped ? "skipped" : "succeeded",
      durationMs: elapsed(),
      counts: answer,
    };
  } catch (error) {
    const httpError = toHttpError(error);
    ctx.log.error("daily sub-job failed", {
      job: subJob.job,
      code: httpError.code,
      error_message: httpError.message,
    });
    // A run with failed items carries its counts as the error's details
    // (their schema loads here, on the failure path only: no zod at cold start).
    const { JobRunOutput } = await import("../../../../shared/job_schemas.ts");
    const counts = JobRunOutput.safeParse(httpError.details);
    return {
      job: subJob.job,
      status: "failed",
      durationMs: elapsed(),
      ...(counts.success ? { counts: counts.data } : {}),
      error: { code: httpError.code, message: httpError.message },
    };
  }
}
