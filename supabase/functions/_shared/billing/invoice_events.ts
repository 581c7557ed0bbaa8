/**
 * Webhook handlers of invoice events: the invoice is re-read under its lock
 * and upserted into `invoices`; payment outcomes also re-sync the invoice's
 * subscription (the processor's recommended provisioning signal).
 *
 * @module
 */
import type Stripe from "stripe";
import { invoiceSubscriptionId, upsertInvoice } from "./invoices.ts";
import { orNullIfMissing } from "./processor.ts";
import { applySubscriptionEvent } from "./subscription_events.ts";
import {
  applied,
  type EventOf,
  type WebhookArgs,
  type WebhookHandlers,
  type WebhookResult,
} from "./webhook_types.ts";

type InvoiceEventType =
  | "invoice.paid"
  | "invoice.payment_succeeded"
  | "invoice.payment_failed"
  | "invoice.finalized";

function handler(options: { syncSubscription: boolean }) {
  return async (
    { event, sql, ctx }: WebhookArgs<EventOf<InvoiceEventType>>,
  ): Promise<WebhookResult> => {
    const payload: Stripe.Invoice = event.data.object;
    const readAt = new Date();
    const current = await orNullIfMissing(ctx.payproc.invoices.retrieve(payload.id));
    const changed = await upsertInvoice(sql, current ?? payload, {
      readAt: current ? readAt : null,
      eventCreated: event.created,
    });
    const subscriptionId = invoiceSubscriptionId(current ?? payload);
    if (options.syncSubscription && subscriptionId) {
      const synced = await applySubscriptionEvent(ctx, sql, subscriptionId, event);
      if (synced.outcome === "applied" && !synced.detail) return applied();
    }
    return changed ? applied() : applied("already up to date");
  };
}

/** Handlers of invoice events. */
export const INVOICE_EVENT_HANDLERS: WebhookHandlers = {
  "invoice.paid": handler({ syncSubscription: true }),
  "invoice.payment_succeeded": handler({ syncSubscription: true }),
  "invoice.payment_failed": handler({ syncSubscription: true }),
  "invoice.finalized": handler({ syncSubscription: false }),
};
