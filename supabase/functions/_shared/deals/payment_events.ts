/**
 * Webhook handlers of a deal's escrow payment: `payment_intent.succeeded`,
 * `payment_intent.payment_failed`, `payment_intent.processing` and
 * `payment_intent.canceled`, and `checkout.session.completed` in payment
 * mode. Each re-reads the intent (and the session) from the processor and
 * applies what it read (`payments.ts`); a replayed or older event finds the
 * deal already funded and changes nothing. A payment the deal cannot take
 * is recorded and refunded once (`stray_payments.ts`).
 *
 * @module
 */
import type Stripe from "stripe";
import type { Context } from "../platform/context.ts";
import type { Sql } from "../platform/db.ts";
import { orNullIfMissing } from "../platform/payproc_calls.ts";
import {
  applied,
  type EventOf,
  ignored,
  skipped,
  type WebhookHandler,
  type WebhookHandlers,
  type WebhookResult,
} from "../payproc_webhook/types.ts";
import { paymentIntentIdOf } from "./deal_rows.ts";
import {
  applyDealPayment,
  type PaymentRead,
  type PaymentRefusal,
  readDealPayment,
} from "./deal_payment.ts";
import { payprocFor } from "../platform/payproc.ts";

/** What a payment event found: the intent read, or why there is nothing to apply. */
type PaymentEventRead = PaymentRead | PaymentRefusal | { result: WebhookResult };

async function writePayment(
  { sql, read, ctx }: { sql: Sql; read: PaymentEventRead; ctx: Context },
): Promise<WebhookResult> {
  if ("result" in read) return read.result;
  if ("refusal" in read) return skipped(read.refusal);
  const outcome = await applyDealPayment(ctx, sql, read);
  switch (outcome.result) {
    case "refused":
      return skipped(outcome.reason);
    case "stray":
      return applied(
        outcome.recorded
          ? `deal ${outcome.deal.id} cannot take this payment (${outcome.reason}): refunding it`
          : "already recorded as a payment to refund",
      );
    case "funded":
      return applied(`deal ${outcome.deal.id} funded`);
    case "failed":
      return applied(`deal ${outcome.deal.id}: the payment attempt failed`);
    case "updated":
      return applied();
    case "unchanged":
      return applied("already up to date");
  }
}

type IntentEventType =
  | "payment_intent.succeeded"
  | "payment_intent.payment_failed"
  | "payment_intent.processing"
  | "payment_intent.canceled";

/** An intent event is about its own object. */
const onPaymentIntent: WebhookHandler<EventOf<IntentEventType>, PaymentEventRead> = {
  async read({ event, ctx }) {
    return await readDealPayment(ctx, event.data.object.id);
  },
  write: writePayment,
};

/** A completed hosted checkout in payment mode pays its deal with the intent it created. */
export const onDealCheckoutCompleted: WebhookHandler<
  EventOf<"checkout.session.completed">,
  PaymentEventRead
> = {
  async read({ event, ctx }) {
    const payproc = await payprocFor(ctx);
    const session: Stripe.Checkout.Session | null = await orNullIfMissing(
      payproc.checkout.sessions.retrieve(event.data.object.id),
    );
    if (!session) {
      return { result: skipped("the checkout session does not exist at the processor") };
    }
    if (session.mode !== "payment") return { result: ignored(`checkout in ${session.mode} mode`) };
    const intent = paymentIntentIdOf(session);
    if (!intent) return { result: skipped("the checkout has no payment intent") };
    return await readDealPayment(ctx, intent, { sessionId: session.id });
  },
  write: writePayment,
};

/** Handlers of payment intent events. */
export const DEAL_PAYMENT_EVENT_HANDLERS: WebhookHandlers = {
  "payment_intent.succeeded": onPaymentIntent,
  "payment_intent.payment_failed": onPaymentIntent,
  "payment_intent.processing": onPaymentIntent,
  "payment_intent.canceled": onPaymentIntent,
};
