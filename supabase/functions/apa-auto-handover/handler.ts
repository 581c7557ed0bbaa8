/**
 * `apa-auto-handover` (scheduled hourly at :20; admins may run it too):
 * drives every deal's handover — confirms stored uploads and expires unused
 * upload URLs, starts the handover of funded deals whose agreement exists,
 * confirms deliveries the buyer left unanswered past
 * `HANDOVER_INSPECTION_DAYS`, marks fully confirmed deals ready for payout
 * (telling the seller and admins) and reminds the late party once a day.
 * Answers the job counts with the deals changed in `items`
 * (`handover_started`, `inspection_lapsed`, `ready_for_payout`), 200
 * `skipped` while another run is in progress, 500 `partial_failure` when
 * some deals failed (`_shared/handover/job.ts`).
 *
 * @module
 */
import { defineFunction } from "../_shared/platform/function.ts";
import { runApaAutoHandover } from "../_shared/handover/job.ts";

export default defineFunction({
  name: "apa-auto-handover",
  access: "scheduled",
  group: "documents",
  summary: "Automates asset handover steps",
  output: "JobAnswer",
  handle({ ctx }) {
    return runApaAutoHandover(ctx);
  },
});
