/**
 * `sync-invoices` (scheduled, every 6 h): processor invoices into `invoices`
 * from a stored cursor. Guarded against overlapping runs (409); answers the
 * counts, or 500 `partial_failure` listing the invoices that failed (the
 * cursor then stays, so they are retried).
 *
 * @module
 */
import { SYNC_INVOICES_JOB, syncInvoices } from "../_shared/billing/invoice_jobs.ts";
import { runGuardedJob } from "../_shared/billing/job_guard.ts";
import { defineFunction } from "../_shared/function.ts";

export default defineFunction({
  name: "sync-invoices",
  access: "scheduled",
  handle({ ctx }) {
    return runGuardedJob(ctx, SYNC_INVOICES_JOB, {}, (tally) => syncInvoices(ctx, tally));
  },
});
