/**
 * `deal-deadlines` (scheduled every 15 minutes; the scheduler, the
 * service-role key or an admin): enforces the deadlines deals reach by time
 * alone, step by step — first `exclusivity-lapses`: a deal in due diligence
 * past `exclusive_until` is cancelled (cause `exclusivity_lapsed`) and both
 * sides are told. Answers the job counts (`exclusivity_lapsed`,
 * `exclusivity_skipped`) with the cancelled deals in
 * `items.exclusivity_lapsed`, 200 `skipped` while another run is in
 * progress, 500 `partial_failure` when some deals failed
 * (`_shared/deals/deadlines_job.ts`).
 *
 * @module
 */
import { defineFunction } from "../_shared/platform/function.ts";
import { runDealDeadlines } from "../_shared/deals/deadlines_job.ts";

export default defineFunction({
  name: "deal-deadlines",
  access: "scheduled",
  group: "deals",
  summary:
    "Cancels deals whose due-diligence exclusivity lapsed and tells both sides (every 15 minutes)",
  beyondInterface:
    "An accepted letter of intent gives the buyer an exclusivity window that ends by time alone, with no request in the path; something must cancel the deal and reopen the listing when it lapses",
  output: "JobAnswer",
  handle({ ctx }) {
    return runDealDeadlines(ctx);
  },
});
