/**
 * The sub-jobs of `run-daily-tasks`, in the order they run. Each is a
 * guarded job of its own feature (its own `job_runs` rows and overlap
 * guard), so it can also be started alone; a later daily job is one more
 * entry here.
 *
 * @module
 */
import type { Context } from "../platform/context.ts";
import { ESCROW_ALERTS_JOB, runEscrowAlerts } from "../deals/escrow_alerts.ts";
import { OFFER_EXPIRY_JOB, runOfferExpiry } from "../deals/offer_expiry.ts";
import { runStrayRefunds, STRAY_REFUNDS_JOB } from "../deals/stray_payments.ts";
import { EMAIL_RETRY_JOB, runEmailRetry } from "../email/retry.ts";
import { HOUSEKEEPING_JOB, runHousekeeping } from "../housekeeping/prune.ts";
import { ACCESS_REQUEST_EXPIRY_JOB, runAccessRequestExpiry } from "../listing_access/expiry.ts";
import type { JobSkipped } from "../platform/jobs/guard.ts";
import type { JobOutput } from "../platform/jobs/runs.ts";
import { runSponsoredActivations, SPONSORED_ACTIVATIONS_JOB } from "../sponsored/activations.ts";
import { runSponsoredNotifications, SPONSORED_NOTICES_JOB } from "../sponsored/notices.ts";
import { runViewFold, VIEW_FOLD_JOB } from "../views/fold.ts";

/** One sub-job: its name and how to run it. */
export interface DailySubJob {
  job: string;
  run(ctx: Context): Promise<JobOutput | JobSkipped>;
}

/**
 * The daily sub-jobs in order: placements change before sellers are told
 * about them; the deal money checks (stray payments still to refund, long
 * escrow holds) come before the e-mail retry, which comes after every job
 * that sends e-mail.
 */
export const DAILY_SUB_JOBS: readonly DailySubJob[] = [
  { job: SPONSORED_ACTIVATIONS_JOB, run: (ctx) => runSponsoredActivations(ctx) },
  { job: SPONSORED_NOTICES_JOB, run: runSponsoredNotifications },
  { job: VIEW_FOLD_JOB, run: runViewFold },
  { job: STRAY_REFUNDS_JOB, run: runStrayRefunds },
  { job: ESCROW_ALERTS_JOB, run: runEscrowAlerts },
  { job: EMAIL_RETRY_JOB, run: runEmailRetry },
  { job: OFFER_EXPIRY_JOB, run: runOfferExpiry },
  { job: ACCESS_REQUEST_EXPIRY_JOB, run: runAccessRequestExpiry },
  { job: HOUSEKEEPING_JOB, run: runHousekeeping },
];
