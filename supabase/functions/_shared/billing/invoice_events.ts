/**
 * Webhook handlers of invoice events: the invoice is re-read from the
 * processor and upserted into `invoices`; payment outcomes also re-read and
 * sync the invoice's subscription (the processor's recommended provisioning
 * signal). An invoice the processor does not have is not mirrored.
 *
 * @module
 */
import type Stripe from "stripe";
import { invoiceSubscriptionId, upsertInvoice } from "./invoices.ts";
import { orNullIfMissing } from "../platform/payproc_calls.ts";
import { asWebhookResult } from "./subscription_events.ts";
import {
  readContenders,
  readForSync,
  readSubscription,
  type SubscriptionRead,
  writeSync,
} from "./subscription_sync.ts";
import {
  applied,
  type EventOf,
  skipped,
  type WebhookHandler,
  type WebhookHandlers,
} from "../payproc_webhook/types.ts";
import { payprocFor } from "../platform/payproc.ts";

type InvoiceEventType =
  | "invoice.paid"
  | "invoice.payment_succeeded"
  | "invoice.payment_failed"
  | "invoice.finalized";

/** What an invoice event found at the processor. */
interface InvoiceRead {
  invoice: Stripe.Invoice | null;
  readAt: Date;
  /** Its subscription, when the event re-syncs it and the processor has it. */
  subscription: SubscriptionRead | null;
}

function handler(
  options: { syncSubscription: boolean },
): WebhookHandler<EventOf<InvoiceEventType>, InvoiceRead> {
  return {
    async read({ event, ctx }) {
      const payproc = await payprocFor(ctx);
      const readAt = new Date();
      const invoice = await orNullIfMissing(payproc.invoices.retrieve(event.data.object.id));
      const subscriptionId = invoice ? invoiceSubscriptionId(invoice) : null;
      let subscription: SubscriptionRead | null = null;
      if (options.syncSubscription && subscriptionId) {
        const current = await readSubscription(ctx, subscriptionId);
        subscription = current &&
          await readForSync(ctx, current.subscription, {
            readAt: current.readAt,
            stateAt: current.stateAt,
            eventCreated: event.created,
          });
      }
      return { invoice, readAt, subscription };
    },
    async complete({ ctx, read, also }) {
      if (!read.subscription) return read;
      return { ...read, subscription: await readContenders(ctx, read.subscription, also) };
    },
    async write({ event, sql, read }) {
      if (!read.invoice) {
        return skipped(`invoice "${event.data.object.id}" does not exist at the processor`);
      }
      const changed = await upsertInvoice(sql, read.invoice, {
        readAt: read.readAt,
        eventCreated: event.created,
      });
      if (read.subscription) {
        const synced = asWebhookResult(await writeSync(sql, read.subscription));
        if (synced.outcome === "applied" && !synced.detail) return applied();
      }
      return changed ? applied() : applied("already up to date");
    },
  };
}

/** Handlers of invoice events. */
export const INVOICE_EVENT_HANDLERS: WebhookHandlers = {
  "invoice.paid": handler({ syncSubscription: true }),
  "invoice.payment_succeeded": handler({ syncSubscription: true }),
  "invoice.payment_failed": handler({ syncSubscription: true }),
  "invoice.finalized": handler({ syncSubscription: false }),
};
