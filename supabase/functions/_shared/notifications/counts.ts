/**
 * How jobs count what their notices did, with the same names everywhere:
 * `in_app`, `in_app_suppressed`, `emails`, `emails_suppressed`,
 * `emails_failed` (left to the e-mail retry sub-job) and `no_email_address`.
 *
 * @module
 */
import type { JobTally } from "../platform/jobs/tally.ts";
import type { NoticeOutcome } from "./notify.ts";

/** Counts what one delivered notice did into `tally`. */
export function countNoticeOutcome(tally: JobTally, outcome: NoticeOutcome): void {
  const email = outcome.email;
  if (outcome.inApp === "created") tally.count("in_app");
  if (outcome.inApp === "suppressed") tally.count("in_app_suppressed");
  if (email === null) tally.count("no_email_address");
  else if (email.status === "suppressed") tally.count("emails_suppressed");
  else tally.count("emails");
  if (email?.status === "failed") tally.count("emails_failed");
}
