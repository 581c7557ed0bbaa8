/**
 * The invoice sync of sync-invoices: pages through the processor's invoices
 * created since the stored cursor (minus an overlap, so recent invoices'
 * later payments are picked up too) into `invoices`, then moves the cursor —
 * only when every invoice succeeded, so failed ones are retried next run.
 *
 * @module
 */
import type { Context } from "../platform/context.ts";
import { upsertInvoice } from "./invoices.ts";
import { readCursor, writeCursor } from "../platform/jobs/cursors.ts";
import type { JobTally } from "../platform/jobs/tally.ts";
import { payprocFor } from "../platform/payproc.ts";

/** The job (and cursor) name. */
export const SYNC_INVOICES_JOB = "sync-invoices";

/** How far before the cursor each run looks again (invoices are paid days after creation). */
export const INVOICE_OVERLAP_SECONDS = 3 * 86_400;

/** sync-invoices' cursor: the newest invoice `created` (Unix seconds) fully synced. */
export interface InvoiceCursor {
  created: number;
}

/** Mirrors invoices created since the cursor; counts go to `tally`. */
export async function syncInvoices(ctx: Context, tally: JobTally): Promise<void> {
  const cursor = await readCursor<InvoiceCursor>(ctx.db, SYNC_INVOICES_JOB);
  const since = cursor ? Math.max(0, cursor.created - INVOICE_OVERLAP_SECONDS) : null;
  let newest = cursor?.created ?? 0;
  const payproc = await payprocFor(ctx);
  let startingAfter: string | undefined;
  do {
    const readAt = new Date();
    const page = await payproc.invoices.list({
      limit: 100,
      ...(since !== null ? { created: { gte: since } } : {}),
      ...(startingAfter ? { starting_after: startingAfter } : {}),
    });
    for (const invoice of page.data) {
      tally.scanned++;
      const changed = await tally.attempt(
        invoice.id,
        () => upsertInvoice(ctx.db, invoice, { readAt }),
      );
      if (changed) tally.changed++;
      if (changed !== undefined) newest = Math.max(newest, invoice.created);
    }
    startingAfter = page.has_more ? page.data.at(-1)?.id : undefined;
  } while (startingAfter !== undefined);
  if (tally.failures.length === 0 && newest > (cursor?.created ?? 0)) {
    await writeCursor(ctx.db, SYNC_INVOICES_JOB, { created: newest } satisfies InvoiceCursor);
    tally.count("cursor", newest);
  }
}
