/**
 * Sponsored placements' activations and expiries: the guarded job
 * `process-sponsored-activations` (admin, and a sub-job of the daily
 * orchestrator) applies what is due now through
 * `public.apply_sponsored_changes()` — placements whose window has begun
 * become active (when their listing is approved), placements whose window
 * has ended expire, and their listings' `is_sponsored` / `sponsored_until`
 * follow in the same transaction. The planner behind
 * `test-sponsored-activation` asks `public.sponsored_changes_due()` what
 * that would change at a given time and writes nothing.
 *
 * @module
 */
import type { z } from "zod";
import type { TestSponsoredActivationOutput } from "../../../../shared/scheduled_schemas.ts";
import type { Context } from "../platform/context.ts";
import { type JobSkipped, runGuardedJob } from "../platform/jobs/guard.ts";
import type { JobOutput } from "../platform/jobs/runs.ts";
import { CHANGE_COLUMNS, type SponsoredChangeRow, toSponsoredChange } from "./changes.ts";

/** The job name in `job_runs`. */
export const SPONSORED_ACTIVATIONS_JOB = "process-sponsored-activations";

/** What {@linkcode planSponsoredActivations} answers (`test-sponsored-activation`). */
export type SponsoredPlan = z.infer<typeof TestSponsoredActivationOutput>;

/**
 * Applies the placement changes due at `at` (default: now; a later time is
 * refused by the database) under the job guard. The answer lists the
 * changed placements in `items.activated` and `items.expired` (each also
 * counted there and in `changed`); a rerun finds nothing and answers zeros,
 * and a start while a run is in progress answers `skipped`.
 */
export function runSponsoredActivations(
  ctx: Context,
  at?: Date,
): Promise<JobOutput | JobSkipped> {
  return runGuardedJob(ctx, SPONSORED_ACTIVATIONS_JOB, {}, async (tally) => {
    const rows = await ctx.db.query<SponsoredChangeRow>(
      `select ${CHANGE_COLUMNS}
       from public.apply_sponsored_changes(coalesce($1::timestamptz, now()))`,
      [at ?? null],
    );
    for (const row of rows) {
      tally.scanned++;
      tally.changed++;
      tally.list(row.change === "activate" ? "activated" : "expired", row.id);
    }
  });
}

/** A row of the plan's query: the moment, and one due change or none (all null). */
type PlanRow =
  & { at: Date }
  & (SponsoredChangeRow | { [K in keyof SponsoredChangeRow]: null });

/**
 * What {@linkcode runSponsoredActivations} would change at `at` (default
 * now; any time, past or future), from the rows as they are now. Reads
 * only: no placement, listing or `job_runs` row is written.
 */
export async function planSponsoredActivations(
  ctx: Context,
  at?: Date,
): Promise<SponsoredPlan> {
  const rows = await ctx.db.query<PlanRow>(
    `with moment as (select coalesce($1::timestamptz, now()) as at)
     select moment.at, d.id, d.listing_id, d.seller_id, d.starts_at, d.ends_at, d.change
     from moment
     left join lateral public.sponsored_changes_due(moment.at) d on true
     order by d.starts_at, d.id`,
    [at ?? null],
  );
  const moment = rows[0];
  if (!moment) throw new Error("Cannot plan sponsored changes: the database answered no row");
  const plan: SponsoredPlan = {
    at: moment.at.toISOString(),
    dryRun: true,
    activate: [],
    expire: [],
  };
  for (const row of rows) {
    if (row.id === null) continue;
    const change = toSponsoredChange(row);
    (row.change === "activate" ? plan.activate : plan.expire).push(change);
  }
  return plan;
}
