/**
 * The overlap guard of scheduled jobs, reusable by any job:
 * `runGuardedJob(ctx, "my-job", options, work)`. A start while another run of
 * the job is in progress does nothing and answers 200 `{ skipped: true,
 * reason: "already_running", runId, startedAt }` (a scheduler firing twice is
 * not a failure); a run whose items failed answers 500 `partial_failure`; a
 * run that failed as a whole answers its error. Non-200 means "page someone".
 *
 * @module
 */
import type { z } from "zod";
import type { JobSkippedOutput } from "../../../../../shared/job_schemas.ts";
import type { Context } from "../context.ts";
import { HttpError } from "../errors.ts";
import { toHttpError } from "../to_http_error.ts";
import { finishJobRun, type JobOutput, type JobRun, startJobRun } from "./runs.ts";
import { JobTally } from "./tally.ts";

/** A start that found a run in progress. */
export type JobSkipped = z.infer<typeof JobSkippedOutput>;

/** The default time after which an unfinished run may be taken over. */
export const DEFAULT_STALE_AFTER_MS = 15 * 60_000;

/** Options of {@linkcode runGuardedJob}. */
export interface GuardOptions {
  /** Whether the run writes nothing (reported in the answer). */
  dryRun?: boolean;
  /** After this long an unfinished run is taken over (default 15 min). */
  staleAfterMs?: number;
}

/**
 * Starts a run of `job` (or reports the one in progress), runs `work`,
 * records the outcome and answers with the counts. A run with failed items
 * ends `partial` and answers 500 `partial_failure` with the same object as
 * `details`, so the scheduler's non-200 alerting sees it.
 */
export async function runGuardedJob(
  ctx: Context,
  job: string,
  options: GuardOptions,
  work: (tally: JobTally, run: JobRun) => Promise<void>,
): Promise<JobOutput | JobSkipped> {
  const start = await startJobRun(ctx, job, options.staleAfterMs ?? DEFAULT_STALE_AFTER_MS);
  if ("running" in start) {
    const { id, startedAt } = start.running;
    ctx.log.info("job already running; this start is skipped", { job, run: id });
    return {
      job,
      skipped: true,
      reason: "already_running",
      runId: id,
      startedAt: startedAt.toISOString(),
    };
  }
  const run = start.started;
  const tally = new JobTally();
  try {
    await work(tally, run);
  } catch (error) {
    const code = toHttpError(error).code;
    await finishJobRun(ctx, run, "failed", summarize(job, run, tally, options), code)
      .catch((finishError) =>
        ctx.log.error("cannot record failed job run", { job, error: String(finishError) })
      );
    throw error;
  }
  const output = summarize(job, run, tally, options);
  const failed = output.failed > 0;
  await finishJobRun(ctx, run, failed ? "partial" : "succeeded", output);
  if (failed) {
    throw new HttpError(
      500,
      "partial_failure",
      `Finished ${job} with ${output.failed} failed item(s): see details.failures`,
      output,
    );
  }
  return output;
}

function summarize(job: string, run: JobRun, tally: JobTally, options: GuardOptions): JobOutput {
  return {
    job,
    runId: run.id,
    dryRun: options.dryRun ?? false,
    scanned: tally.scanned,
    changed: tally.changed,
    failed: tally.failures.length,
    counts: { ...tally.counts },
    failures: [...tally.failures],
    ...(Object.keys(tally.items).length > 0 ? { items: structuredClone(tally.items) } : {}),
  };
}
