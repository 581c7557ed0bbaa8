/**
 * `deal-deadlines` (scheduled every 15 minutes; the scheduler, the
 * service-role key or an admin): enforces the deadlines deals reach by time
 * alone, step by step (`_shared/deals/deadlines_job.ts`):
 * `exclusivity-lapses` (a deal in due diligence past `exclusive_until` is
 * cancelled), `case-escalations` (an open dispute case past
 * `negotiate_until` goes to the admins), `case-outcomes` (a resolved case's
 * refund and payout move), `payout-releases` (the payout of a deal whose
 * inspection window ended), `holdback-releases` (a holdback whose date
 * passed) and `repayouts` (a seller paid again after a chargeback the
 * platform won). Answers the job counts with the deals and cases changed in
 * `items`, 200 `skipped` while another run is in progress, 500
 * `partial_failure` when some failed.
 *
 * @module
 */
import { defineFunction } from "../_shared/platform/function.ts";

export default defineFunction({
  name: "deal-deadlines",
  access: "scheduled",
  group: "deals",
  summary:
    "Enforces deal deadlines: lapsed exclusivity, case escalations and outcomes, automatic payout and holdback releases (every 15 minutes)",
  beyondInterface:
    "Exclusivity windows, inspection windows, holdbacks and dispute cases end by time alone, with no request in the path; something must cancel, escalate and release when they do",
  output: "JobAnswer",
  async handle({ ctx }) {
    // The job's six steps (every deal and case module they use) load with
    // the first run that passed the access rule, not at cold start
    // (docs/benchmarks.md, `cold_start`).
    const { runDealDeadlines } = await import("../_shared/deals/deadlines_job.ts");
    return await runDealDeadlines(ctx);
  },
});
