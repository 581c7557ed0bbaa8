/**
 * The rows of `public.job_runs`: starting a run (at most one unfinished per
 * job, by a unique partial index; a run unfinished past its `stale_after` is
 * taken over) and recording how it ended.
 *
 * @module
 */
import type { z } from "zod";
import type { JobRunOutput } from "../../../../../shared/job_schemas.ts";
import type { Context } from "../context.ts";

/** A finished run's answer (`shared/job_schemas.ts`). */
export type JobOutput = z.infer<typeof JobRunOutput>;

/** A started run. */
export interface JobRun {
  id: string;
  job: string;
  startedAt: Date;
}

/** What a start found: its own new run, or the run already in progress. */
export type JobStart = { started: JobRun } | { running: JobRun };

/**
 * How often a start tries again when the run it collided with finished
 * before it could be read (each try is one more statement, never a wait).
 */
const START_ATTEMPTS = 3;

/**
 * Inserts the run's row, taking over a stale one; reports the live run
 * instead when one exists. The insert and the read of the live run are two
 * statements: a run that blocked the insert may finish before the read, in
 * which case nothing is in progress any more and the insert is tried again.
 */
export async function startJobRun(
  ctx: Context,
  job: string,
  staleAfterMs: number,
): Promise<JobStart> {
  return await ctx.db.tx(async (sql) => {
    await sql.query(
      `update public.job_runs
       set status = 'abandoned', finished_at = now(), error_code = 'stale_taken_over'
       where job_name = $1 and finished_at is null and started_at + stale_after < now()`,
      [job],
    );
    for (let attempt = 1; attempt <= START_ATTEMPTS; attempt++) {
      const row = await sql.maybeOne<{ id: string; started_at: Date }>(
        `insert into public.job_runs (job_name, stale_after)
         values ($1, make_interval(secs => $2::double precision / 1000))
         on conflict (job_name) where finished_at is null do nothing
         returning id, started_at`,
        [job, staleAfterMs],
      );
      if (row) return { started: { id: row.id, job, startedAt: row.started_at } };
      const running = await sql.maybeOne<{ id: string; started_at: Date }>(
        "select id, started_at from public.job_runs where job_name = $1 and finished_at is null",
        [job],
      );
      if (running) return { running: { id: running.id, job, startedAt: running.started_at } };
    }
    throw new Error(`Cannot start ${job}: its runs kept finishing between insert and read`);
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
