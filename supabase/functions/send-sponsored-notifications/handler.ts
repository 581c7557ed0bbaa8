/**
 * `send-sponsored-notifications` (scheduled hourly; also a sub-job of
 * `run-daily-tasks`): tells each seller once when a sponsored placement of
 * theirs has started and once when it ends within 24 hours (in-app and
 * e-mail, as their `sponsored` preference allows). Answers the job counts
 * with the placements told in `items.started` and `items.ending`, or 500
 * `partial_failure` listing the notices that could not be written (they
 * are tried again next run); a rerun sends nothing.
 *
 * @module
 */
import { defineFunction } from "../_shared/platform/function.ts";
import { runSponsoredNotifications } from "../_shared/sponsored/notices.ts";

export default defineFunction({
  name: "send-sponsored-notifications",
  access: "scheduled",
  group: "notifications",
  summary: "Tells sellers once when a sponsored placement starts and when it ends within 24 h",
  output: "JobAnswer",
  handle({ ctx }) {
    return runSponsoredNotifications(ctx);
  },
});
