/**
 * The overlap guard of scheduled jobs: a `job_runs` row per run, at most one
 * unfinished per job (unique partial index), stale runs taken over after
 * their timeout, and the run's counts and failures recorded when it ends.
 * Reusable by any job: `runGuardedJob(ctx, "my-job", options, work)`.
 *
 * @module
 */
import type { z } from "zod";
import type { JobFailure, SyncJobOutput } from "../../../../shared/schemas.ts";
import type { Context } from "../context.ts";
import { conflict, HttpError } from "../errors.ts";
import { toHttpError } from "../to_http_error.ts";

/** A job's answer (`shared/schemas.ts` `SyncJobOutput`). */
export type JobOutput = z.infer<typeof SyncJobOutput>;
/** One failed item. */
export type JobFailureItem = z.infer<typeof JobFailure>;

/** The default time after which an unfinished run may be taken over. */
export const DEFAULT_STALE_AFTER_MS = 15 * 60_000;

/** A started run. */
export interface JobRun {
  id: string;
  job: string;
  startedAt: Date;
}

/** Counts and failures of a run, filled in by the job's work. */
export class JobTally {
  /** Items looked at. */
  scanned = 0;
  /** Items whose stored state changed. */
  changed = 0;
  /** Further counts by name (e.g. `unlinked`, `grants_expired`). */
  readonly counts: Record<string, number> = {};
  /** Failed items. */
  readonly failures: JobFailureItem[] = [];

  /** Adds `n` to the count `name`. */
  count(name: string, n = 1): void {
    this.counts[name] = (this.counts[name] ?? 0) + n;
  }

  /** Records a failed item; the message is the client-safe one of our error model. */
  fail(item: string, error: unknown): void {
    const httpError = toHttpError(error);
    this.failures.push({ item, code: httpError.code, message: httpError.message });
  }

  /** Runs `work` for `item`, recording a failure instead of throwing. */
  async attempt<T>(item: string, work: () => Promise<T>): Promise<T | undefined> {
    try {
      return await work();
    } catch (error) {
      this.fail(item, error);
      return undefined;
    }
  }
}

/** Options of {@linkcode runGuardedJob}. */
export interface GuardOptions {
  /** Whether the run writes nothing (reported in the answer). */
  dryRun?: boolean;
  /** After this long an unfinished run is taken over (default 15 min). */
  staleAfterMs?: number;
}

/**
 * Starts a run of `job` (409 `conflict` while another is unfinished), runs
 * `work`, records the outcome and answers with the counts. A run with failed
 * items ends `partial` and answers 500 `partial_failure` with the same
 * object as `details`, so the scheduler's non-200 alerting sees it.
 */
export async function runGuardedJob(
  ctx: Context,
  job: string,
  options: GuardOptions,
  work: (tally: JobTally, run: JobRun) => Promise<void>,
): Promise<JobOutput> {
  const run = await startJobRun(ctx, job, options.staleAfterMs ?? DEFAULT_STALE_AFTER_MS);
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

/** Inserts the run's row, taking over a stale one; 409 while a live run exists. */
export async function startJobRun(
  ctx: Context,
  job: string,
  staleAfterMs: number,
): Promise<JobRun> {
  return await ctx.db.tx(async (sql) => {
    await sql.query(
      `update public.job_runs
       set status = 'abandoned', finished_at = now(), error_code = 'stale_taken_over'
       where job_name = $1 and finished_at is null and started_at + stale_after < now()`,
      [job],
    );
    const row = await sql.maybeOne<{ id: string; started_at: Date }>(
      `insert into public.job_runs (job_name, stale_after)
       values ($1, make_interval(secs => $2::double precision / 1000))
       on conflict (job_name) where finished_at is null do nothing
       returning id, started_at`,
      [job, staleAfterMs],
    );
    if (row) return { id: row.id, job, startedAt: row.started_at };
    const running = await sql.maybeOne<{ id: string; started_at: Date }>(
      "select id, started_at from public.job_runs where job_name = $1 and finished_at is null",
      [job],
    );
    throw conflict(
      `Cannot start ${job}: a run started at ${
        running?.started_at.toISOString() ?? "an unknown time"
      } is still in progress`,
      { job, runId: running?.id ?? null, startedAt: running?.started_at.toISOString() ?? null },
    );
  });
}

/** Records the end of a run (a run already taken over stays abandoned). */
export async function finishJobRun(
  ctx: Context,
  run: JobRun,
  status: "succeeded" | "partial" | "failed",
  output: JobOutput,
  errorCode?: string,
): Promise<void> {
  const row = await ctx.db.maybeOne(
    `update public.job_runs
     set status = $2, finished_at = now(), scanned = $3, changed = $4, failed = $5,
         failures = $6::jsonb, result = $7::jsonb, error_code = $8
     where id = $1 and finished_at is null
     returning id`,
    [
      run.id,
      status,
      output.scanned,
      output.changed,
      output.failed,
      JSON.stringify(output.failures),
      JSON.stringify(output),
      errorCode ?? null,
    ],
  );
  if (!row) {
    ctx.log.warn("job run was taken over before it finished", { job: run.job, run: run.id });
  }
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
  };
}
