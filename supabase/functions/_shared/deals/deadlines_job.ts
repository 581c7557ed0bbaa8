/**
 * The guarded job `deal-deadlines` (scheduled every 15 minutes): the
 * deadlines deals reach by time alone, as a list of steps run in order.
 *
 * 1. `exclusivity-lapses`: deals in due diligence past `exclusive_until` are
 *    cancelled (`diligence_deadlines.ts`).
 * 2. `case-escalations`: open dispute cases past `negotiate_until` are
 *    escalated to the admins (`cases.ts`).
 * 3. `case-outcomes`: resolved cases move their outcome's money (`cases.ts`).
 * 4. `payout-releases`: deals whose inspection window ended get their
 *    payout (`releases.ts`).
 * 5. `holdback-releases`: deals whose holdback date passed get the holdback
 *    (`releases.ts`).
 * 6. `repayouts`: sellers owed a payout again after a chargeback the
 *    platform won are paid (`repayouts.ts`).
 *
 * Each step changes one deal per transaction and counts into the run's
 * tally under names of its own; a deal that fails is a failed item and the
 * others go on. A step that fails as a whole is the failed item
 * `step:<name>`, and the next steps still run. Either way the run answers
 * 500 `partial_failure` (the guard, `platform/jobs/guard.ts`).
 *
 * @module
 */
import type { Context } from "../platform/context.ts";
import { type JobSkipped, runGuardedJob } from "../platform/jobs/guard.ts";
import type { JobOutput } from "../platform/jobs/runs.ts";
import type { JobTally } from "../platform/jobs/tally.ts";
import { carryOutDueCases, escalateDueCases } from "./cases.ts";
import { lapseExclusivities } from "./diligence_deadlines.ts";
import { releaseDueHoldbacks, releaseDuePayouts } from "./releases.ts";
import { runRepayouts } from "./repayouts.ts";

/** The job name in `job_runs` and `job_schedules`. */
export const DEAL_DEADLINES_JOB = "deal-deadlines";

/** One kind of deadline the job enforces. */
export interface DeadlineStep {
  /** Its name (a failed step is the item `step:<name>`). */
  name: string;
  /** Enforces every due deadline of its kind, counting into `tally`. */
  run(ctx: Context, tally: JobTally): Promise<void>;
}

/** The steps, in the order they run. */
export const DEAL_DEADLINE_STEPS: readonly DeadlineStep[] = [
  { name: "exclusivity-lapses", run: (ctx, tally) => lapseExclusivities(ctx, tally) },
  { name: "case-escalations", run: escalateDueCases },
  { name: "case-outcomes", run: carryOutDueCases },
  { name: "payout-releases", run: releaseDuePayouts },
  { name: "holdback-releases", run: releaseDueHoldbacks },
  { name: "repayouts", run: (ctx, tally) => runRepayouts(ctx, tally) },
];

/** Runs `steps` (default: every step) under the job guard; see the module doc. */
export function runDealDeadlines(
  ctx: Context,
  steps: readonly DeadlineStep[] = DEAL_DEADLINE_STEPS,
): Promise<JobOutput | JobSkipped> {
  return runGuardedJob(ctx, DEAL_DEADLINES_JOB, {}, async (tally) => {
    for (const step of steps) {
      await tally.attempt(`step:${step.name}`, () => step.run(ctx, tally));
    }
  });
}
