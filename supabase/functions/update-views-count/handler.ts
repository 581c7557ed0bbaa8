/**
 * `update-views-count` (scheduled, every 10 minutes; also a sub-job of
 * `run-daily-tasks`): folds the views `record_listing_view()` recorded into
 * `listings.views_count`, in batches from a cursor, then prunes folded views
 * outside the dedupe window. A start while a run is in progress answers 200
 * `skipped`; a run answers its counts (`views`, `listings`, `batches`,
 * `pruned`, `capped`).
 *
 * @module
 */
import { defineFunction } from "../_shared/platform/function.ts";
import { runViewFold } from "../_shared/views/fold.ts";

export default defineFunction({
  name: "update-views-count",
  access: "scheduled",
  group: "schedulers",
  summary: "Increments listing view counters",
  output: "JobAnswer",
  handle({ ctx }) {
    return runViewFold(ctx);
  },
});
