/**
 * `update-views-count`'s work, as a guarded job the handler and the daily
 * orchestrator both run: fold recorded listing views into
 * `listings.views_count` batch by batch until nothing is left (or the
 * per-run cap; the next run goes on from the cursor), then prune folded
 * views that can no longer be repeats. Answers the counts `views` (folded),
 * `listings` (updates of a listing's count), `batches`, `pruned` and
 * `capped` (1 when the run stopped at its cap with views left).
 *
 * @module
 */
import type { Context } from "../platform/context.ts";
import { type JobSkipped, runGuardedJob } from "../platform/jobs/guard.ts";
import type { JobOutput } from "../platform/jobs/runs.ts";
import { foldViewBatch, pruneViewBatch } from "./batches.ts";

/** The job (and cursor) name. */
export const VIEW_FOLD_JOB = "update-views-count";

/**
 * Views per fold batch. A batch's cost is its listing updates (one per
 * distinct listing in it, 10–30 µs each), so bigger batches fold a backlog
 * with fewer updates. `bench/views_fold.ts`, 1M views spread evenly over
 * 100k listings, 2-core development machine: one batch of 1M folds them in
 * 1.9 s (3.4 s with the explore page read 2,000 times a second beside it),
 * batches of 500k in 5.3 s, of 50k in 9–14 s. A batch holds the row locks of
 * the listings it updates until it commits (a few seconds at most); readers
 * never wait for them.
 */
export const VIEW_FOLD_BATCH = 1_000_000;

/** Fold batches per run (20M views); past it the run stops and the next one goes on. */
export const VIEW_FOLD_MAX_BATCHES = 20;

/** Views deleted per prune batch. */
export const VIEW_PRUNE_BATCH = 50_000;

/** Prune batches per run. */
export const VIEW_PRUNE_MAX_BATCHES = 100;

/** Options of {@linkcode runViewFold} (tests and the benchmark tune them). */
export interface ViewFoldOptions {
  /** Views per fold batch (default {@linkcode VIEW_FOLD_BATCH}). */
  batchSize?: number;
  /** Fold batches per run (default {@linkcode VIEW_FOLD_MAX_BATCHES}). */
  maxBatches?: number;
  /** Views per prune batch (default {@linkcode VIEW_PRUNE_BATCH}). */
  pruneBatchSize?: number;
  /** Prune batches per run (default {@linkcode VIEW_PRUNE_MAX_BATCHES}). */
  maxPruneBatches?: number;
}

/** Runs the view fold under the job guard (a start during a run answers `skipped`). */
export function runViewFold(
  ctx: Context,
  options: ViewFoldOptions = {},
): Promise<JobOutput | JobSkipped> {
  const batchSize = options.batchSize ?? VIEW_FOLD_BATCH;
  const maxBatches = options.maxBatches ?? VIEW_FOLD_MAX_BATCHES;
  const pruneBatchSize = options.pruneBatchSize ?? VIEW_PRUNE_BATCH;
  const maxPruneBatches = options.maxPruneBatches ?? VIEW_PRUNE_MAX_BATCHES;
  return runGuardedJob(ctx, VIEW_FOLD_JOB, {}, async (tally) => {
    for (const name of ["views", "listings", "batches", "pruned", "capped"]) tally.count(name, 0);

    let full = true;
    for (let batch = 0; batch < maxBatches && full; batch++) {
      const { views, listings } = await foldViewBatch(ctx.db, batchSize);
      full = views === batchSize;
      if (views === 0) break;
      tally.count("batches");
      tally.count("views", views);
      tally.count("listings", listings);
      tally.scanned += views;
      tally.changed += listings;
    }
    // A full last batch at the cap: there may be more, left to the next run.
    if (full) tally.count("capped");

    for (let batch = 0; batch < maxPruneBatches; batch++) {
      const pruned = await pruneViewBatch(ctx.db, pruneBatchSize);
      tally.count("pruned", pruned);
      if (pruned < pruneBatchSize) break;
    }
  });
}
