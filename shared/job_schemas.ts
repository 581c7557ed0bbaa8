/**
 * zod schemas of what scheduled jobs answer: the counts of a finished run,
 * or the note that a run was skipped because another one is in progress.
 *
 * @module
 */
import { z } from "zod";

/** One item a job could not process. */
export const JobFailure = z.object({
  item: z.string(),
  code: z.string(),
  message: z.string(),
});

/**
 * A finished run: what it looked at, changed and failed on. With failures
 * the same object comes back as `error.details` of a 500 `partial_failure`.
 */
export const JobRunOutput = z.object({
  job: z.string(),
  runId: z.uuid(),
  dryRun: z.boolean(),
  scanned: z.number().int().min(0),
  changed: z.number().int().min(0),
  failed: z.number().int().min(0),
  counts: z.record(z.string(), z.number().int()),
  failures: z.array(JobFailure),
  /** Ids of what the run changed, by what it did (only jobs that list them). */
  items: z.record(z.string(), z.array(z.string())).optional(),
});

/**
 * A start that found a run of the same job in progress: nothing was done,
 * and that is not a failure (answered 200, so schedulers do not alert).
 */
export const JobSkippedOutput = z.object({
  job: z.string(),
  skipped: z.literal(true),
  reason: z.literal("already_running"),
  /** The run in progress. */
  runId: z.uuid(),
  startedAt: z.iso.datetime({ offset: true }),
});

/** Every answer of a scheduled job. */
export const JobAnswer = z.union([JobRunOutput, JobSkippedOutput]);
