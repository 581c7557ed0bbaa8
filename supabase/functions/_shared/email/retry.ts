/**
 * The e-mail retry sub-job: one more attempt at every message that is due —
 * failed ones whose backoff has passed, and pending ones whose request died
 * before delivering them (a sign-in e-mail's is dropped instead: it is never
 * sent late) — under the job guard, so two runs at once do not
 * both work (and each row's claim keeps two senders off one message). The
 * daily orchestrator (`run-daily-tasks`) runs it; {@linkcode retryDueEmails}
 * is also callable on its own. The every-minute queues retry their own
 * e-mails sooner ({@linkcode retryDueEmailsOf}).
 *
 * @module
 */
import type { EmailType } from "../../../../shared/notifications.ts";
import type { Context } from "../platform/context.ts";
import { runGuardedJob } from "../platform/jobs/guard.ts";
import type { JobOutput } from "../platform/jobs/runs.ts";
import type { JobSkipped } from "../platform/jobs/guard.ts";
import type { JobTally } from "../platform/jobs/tally.ts";
import { dropUnsent, dueEmailLogs } from "./email_logs.ts";
import { deliverEmail, retriedLater } from "./send.ts";

/** The job name in `job_runs`. */
export const EMAIL_RETRY_JOB = "email-retry";

/** Messages one run looks at, at most. */
export const EMAIL_RETRY_BATCH = 500;

/** Why a sign-in e-mail its request did not send is dropped. */
const SIGN_IN_NOT_SENT_LATER =
  "Not sent: the request that wrote it ended first, and a sign-in e-mail is not sent later (Auth failed the sign-in; its link is dead)";

/**
 * Attempts every due message once (up to {@linkcode EMAIL_RETRY_BATCH}),
 * counting `sent`, `captured`, `failed` (tried again later) and `gave_up`
 * (no attempts left, or refused for good). A message that fails is not a
 * failure of the run: its row records it and the backoff brings it back.
 * A sign-in e-mail is sent by its request or not at all (`retriedLater`):
 * one its request left pending is dropped, once that request is surely
 * over (`sign_in_dropped`), and never sent late.
 */
export async function retryDueEmails(ctx: Context, tally: JobTally): Promise<void> {
  const due = await dueEmailLogs(ctx.db, EMAIL_RETRY_BATCH);
  for (const { id, email_type: emailType } of due) {
    tally.scanned++;
    if (!retriedLater(emailType)) {
      const dropped = await tally.attempt(
        `email_logs:${id}`,
        () => dropUnsent(ctx.db, id, SIGN_IN_NOT_SENT_LATER),
      );
      if (dropped) {
        tally.changed++;
        tally.count("sign_in_dropped");
      } else if (dropped === null) {
        tally.count("not_claimed");
      }
      continue;
    }
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

/**
 * One attempt at each due e-mail of `emailTypes` (at most `limit`): those
 * an every-minute queue wrote but did not deliver (its process died, or the
 * provider failed and the backoff has passed), so they do not wait for the
 * daily retry. Types that are retried later only (not sign-in e-mails).
 * Counts `emails_retried` and `emails_retry_failed`; the sender's claim
 * keeps this off a message another run is sending.
 */
export async function retryDueEmailsOf(
  ctx: Context,
  tally: JobTally,
  emailTypes: readonly EmailType[],
  limit: number,
): Promise<void> {
  for (const { id } of await dueEmailLogs(ctx.db, limit, emailTypes)) {
    const outcome = await tally.attempt(`email_logs:${id}`, () => deliverEmail(ctx, id));
    if (!outcome) continue;
    tally.count("emails_retried");
    if (outcome.status === "failed") tally.count("emails_retry_failed");
  }
}

/** Runs {@linkcode retryDueEmails} as the guarded job `email-retry`. */
export function runEmailRetry(ctx: Context): Promise<JobOutput | JobSkipped> {
  return runGuardedJob(ctx, EMAIL_RETRY_JOB, {}, (tally) => retryDueEmails(ctx, tally));
}
