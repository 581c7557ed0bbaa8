/**
 * The e-mail retry sub-job: one more attempt at every message that is due —
 * failed ones whose backoff has passed, and pending ones whose request died
 * before delivering them — under the job guard, so two runs at once do not
 * both work (and each row's claim keeps two senders off one message). The
 * daily orchestrator (`run-daily-tasks`) runs it; {@linkcode retryDueEmails}
 * is also callable on its own.
 *
 * @module
 */
import type { Context } from "../context.ts";
import { runGuardedJob } from "../jobs/guard.ts";
import type { JobOutput } from "../jobs/runs.ts";
import type { JobSkipped } from "../jobs/guard.ts";
import type { JobTally } from "../jobs/tally.ts";
import { dueEmailLogIds } from "./log.ts";
import { deliverEmail } from "./send.ts";

/** The job name in `job_runs`. */
export const EMAIL_RETRY_JOB = "email-retry";

/** Messages one run looks at, at most. */
export const EMAIL_RETRY_BATCH = 500;

/**
 * Attempts every due message once (up to {@linkcode EMAIL_RETRY_BATCH}),
 * counting `sent`, `captured`, `failed` (tried again later) and `gave_up`
 * (no attempts left, or refused for good). A message that fails is not a
 * failure of the run: its row records it and the backoff brings it back.
 */
export async function retryDueEmails(ctx: Context, tally: JobTally): Promise<void> {
  const ids = await dueEmailLogIds(ctx.db, EMAIL_RETRY_BATCH);
  for (const id of ids) {
    tally.scanned++;
    const outcome = await tally.attempt(`email_logs:${id}`, () => deliverEmail(ctx, id));
    if (!outcome) continue;
    if (outcome.status === "sent" || outcome.status === "captured") {
      tally.changed++;
      tally.count(outcome.status);
    } else if (outcome.failure) {
      tally.count(outcome.failure.retrying ? "failed" : "gave_up");
    } else {
      tally.count("not_claimed");
    }
  }
}

/** Runs {@linkcode retryDueEmails} as the guarded job `email-retry`. */
export function runEmailRetry(ctx: Context): Promise<JobOutput | JobSkipped> {
  return runGuardedJob(ctx, EMAIL_RETRY_JOB, {}, (tally) => retryDueEmails(ctx, tally));
}
