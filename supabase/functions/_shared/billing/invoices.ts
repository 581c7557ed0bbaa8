/**
 * The one way a processor invoice reaches `public.invoices`: read from the
 * processor, mapped (amounts converted once to major units) and upserted in
 * one statement that refuses a read older than the stored one and writes
 * only when something changed.
 *
 * @module
 */
import type Stripe from "stripe";
import type { Sql } from "../platform/db.ts";
import { currencyCode, fromMinorUnits } from "../lib/money.ts";
import { idOf } from "./subscription_state.ts";

/** Invoice statuses `public.invoices.status` accepts. */
export type InvoiceStatus = Stripe.Invoice.Status;

/** When the invoice was read (see `SyncOptions` of subscriptions). */
export interface InvoiceSyncOptions {
  /** When it was read from the processor (taken before the request). */
  readAt: Date;
  /** `created` of the event being applied (Unix seconds), if any. */
  eventCreated?: number;
}

/** The subscription an invoice bills (in this API version under `parent`). */
export function invoiceSubscriptionId(invoice: Stripe.Invoice): string | null {
  const subscription = invoice.parent?.subscription_details?.subscription;
  return subscription ? idOf(subscription) : null;
}

function toDate(seconds: number | null | undefined): Date | null {
  return typeof seconds === "number" && seconds > 0 ? new Date(seconds * 1000) : null;
}

/**
 * Upserts `invoice`; true when the stored row changed. The user is the one
 * whose `subscriptions` row holds the invoice's customer (kept when unknown).
 */
export async function upsertInvoice(
  sql: Sql,
  invoice: Stripe.Invoice,
  options: InvoiceSyncOptions,
): Promise<boolean> {
  const currency = invoice.currency;
  const status: InvoiceStatus = invoice.status ?? "draft";
  const customerId = invoice.customer ? idOf(invoice.customer) : "";
  const row = await sql.maybeOne(UPSERT, [
    invoice.id,
    customerId,
    invoiceSubscriptionId(invoice),
    status,
    invoice.number,
    invoice.billing_reason,
    currencyCode(currency),
    fromMinorUnits(invoice.amount_due, currency),
    fromMinorUnits(invoice.amount_paid, currency),
    fromMinorUnits(invoice.amount_remaining, currency),
    invoice.attempt_count,
    toDate(invoice.next_payment_attempt),
    invoice.hosted_invoice_url ?? null,
    invoice.invoice_pdf ?? null,
    toDate(invoice.period_start),
    toDate(invoice.period_end),
    toDate(invoice.status_transitions?.paid_at),
    toDate(invoice.created),
    options.readAt,
    options.eventCreated === undefined ? null : new Date(options.eventCreated * 1000),
  ]);
  return row !== null;
}

const UPSERT = `
  insert into public.invoices as i (
    payproc_invoice_id, user_id, payproc_customer_id, payproc_subscription_id, status, number,
    billing_reason, currency, amount_due, amount_paid, amount_remaining, attempt_count,
    next_payment_attempt, hosted_invoice_url, invoice_pdf, period_start, period_end, paid_at,
    payproc_created, payproc_synced_at, payproc_event_created
  ) values (
    $1, (select s.user_id from public.subscriptions s where s.payproc_customer_id = $2), $2, $3,
    $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20
  )
  on conflict (payproc_invoice_id) do update set
    user_id = coalesce(excluded.user_id, i.user_id),
    payproc_customer_id = excluded.payproc_customer_id,
    payproc_subscription_id = excluded.payproc_subscription_id,
    status = excluded.status,
    number = excluded.number,
    billing_reason = excluded.billing_reason,
    currency = excluded.currency,
    amount_due = excluded.amount_due,
    amount_paid = excluded.amount_paid,
    amount_remaining = excluded.amount_remaining,
    attempt_count = excluded.attempt_count,
    next_payment_attempt = excluded.next_payment_attempt,
    hosted_invoice_url = excluded.hosted_invoice_url,
    invoice_pdf = excluded.invoice_pdf,
    period_start = excluded.period_start,
    period_end = excluded.period_end,
    paid_at = excluded.paid_at,
    payproc_synced_at = greatest(i.payproc_synced_at, excluded.payproc_synced_at),
    payproc_event_created = greatest(i.payproc_event_created, excluded.payproc_event_created)
  where (i.user_id, i.status, i.number, i.amount_due, i.amount_paid, i.amount_remaining,
         i.attempt_count, i.next_payment_attempt, i.hosted_invoice_url, i.invoice_pdf,
         i.paid_at, i.payproc_subscription_id, i.period_start, i.period_end)
      is distinct from
        (coalesce(excluded.user_id, i.user_id), excluded.status, excluded.number,
         excluded.amount_due, excluded.amount_paid, excluded.amount_remaining,
         excluded.attempt_count, excluded.next_payment_attempt, excluded.hosted_invoice_url,
         excluded.invoice_pdf, excluded.paid_at, excluded.payproc_subscription_id,
         excluded.period_start, excluded.period_end)
    -- A read not older than the stored one.
    and (i.payproc_synced_at is null or i.payproc_synced_at <= excluded.payproc_synced_at)
  returning i.id`;
