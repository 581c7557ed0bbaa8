/**
 * `sync-invoices` (scheduled, every 6 h): processor invoices into `invoices`
 * from a stored cursor. A start while a run is in progress answers 200
 * `skipped`; a run answers the counts, or 500 `partial_failure` listing the
 * invoices that failed (the cursor then stays, so they are retried).
 *
 * @module
 */
import { SYNC_INVOICES_JOB, syncInvoices } from "../_shared/billing/invoice_jobs.ts";
import { defineFunction } from "../_shared/platform/function.ts";
import { runGuardedJob } from "../_shared/platform/jobs/guard.ts";

export default defineFunction({
  name: "sync-invoices",
  access: "scheduled",
  group: "billing",
  summary: "Synchronizes invoices",
  output: "JobAnswer",
  handle({ ctx }) {
    return runGuardedJob(ctx, SYNC_INVOICES_JOB, {}, (tally) => syncInvoices(ctx, tally));
  },
});
