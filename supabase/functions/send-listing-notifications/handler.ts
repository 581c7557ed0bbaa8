/**
 * `send-listing-notifications` (scheduled, daily): the opt-in digest of new
 * listings. Each user who switched on the `new_listings` preference gets
 * the listings approved since their last digest (not their own), at most
 * once per UTC day. A start while a run is in progress answers 200
 * `skipped`; a run answers its counts, or 500 `partial_failure` listing the
 * users whose digest could not be written.
 *
 * @module
 */
import { defineFunction } from "../_shared/platform/function.ts";
import { runGuardedJob } from "../_shared/platform/jobs/guard.ts";
import {
  LISTINGS_DIGEST_JOB,
  sendListingsDigests,
} from "../_shared/notifications/listings_digest_job.ts";

export default defineFunction({
  name: "send-listing-notifications",
  access: "scheduled",
  group: "notifications",
  summary: "Daily digest of new listings to users who opted in",
  output: "JobAnswer",
  handle({ ctx }) {
    return runGuardedJob(ctx, LISTINGS_DIGEST_JOB, {}, (tally) => sendListingsDigests(ctx, tally));
  },
});
