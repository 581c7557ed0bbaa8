/**
 * `process-sponsored-activations` (admin; also a sub-job of
 * `run-daily-tasks`): activates the sponsored placements whose window has
 * begun (their listing approved) and expires those whose window has ended,
 * now, with their listings' `is_sponsored` / `sponsored_until`. Answers the
 * job counts with the changed placements in `items.activated` and
 * `items.expired`; a rerun changes nothing, and a start while a run is in
 * progress answers 200 `skipped`.
 *
 * @module
 */
import { defineFunction } from "../_shared/platform/function.ts";
import { runSponsoredActivations } from "../_shared/sponsored/activations.ts";

export default defineFunction({
  name: "process-sponsored-activations",
  access: "admin",
  scheduler: true,
  group: "schedulers",
  summary: "Activates scheduled sponsored listings (hourly, and by admins)",
  output: "JobAnswer",
  handle({ ctx }) {
    return runSponsoredActivations(ctx);
  },
});
