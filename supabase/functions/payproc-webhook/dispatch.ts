/**
 * The webhook's dispatch tables, one per endpoint: event type → handler.
 * Each feature adds its events by spreading its own table into the right
 * one; `checkout.session.completed` goes to billing or deals by the
 * session's mode. A type without a handler is recorded as ignored.
 *
 * @module
 */
import {
  DEAL_PAYMENT_EVENT_HANDLERS,
  onDealCheckoutCompleted,
} from "../_shared/deals/payment_events.ts";
import { DEAL_SETTLEMENT_EVENT_HANDLERS } from "../_shared/deals/settlement_events.ts";
import { STRAY_REFUND_EVENT_HANDLERS } from "../_shared/deals/stray_refund_events.ts";
import { ACCOUNT_EVENT_HANDLERS } from "../_shared/connect/account_events.ts";
import { INVOICE_EVENT_HANDLERS } from "../_shared/billing/invoice_events.ts";
import {
  onSubscriptionCheckoutCompleted,
  SUBSCRIPTION_EVENT_HANDLERS,
} from "../_shared/billing/subscription_events.ts";
import type { EventOf, WebhookHandler, WebhookHandlers } from "../_shared/payproc_webhook/types.ts";
import type { Endpoint } from "../_shared/payproc_webhook/verify.ts";

type CheckoutEvent = EventOf<"checkout.session.completed">;

/**
 * A completed checkout is a subscription's (billing) or a deal's payment
 * (deals): chosen by the mode the signed event names, which each handler
 * confirms on the session it re-reads (a mode never changes).
 */
function byCheckoutMode(
  handlers: Record<"subscription" | "payment", WebhookHandler<CheckoutEvent, unknown>>,
): WebhookHandler<
  CheckoutEvent,
  { handler: WebhookHandler<CheckoutEvent, unknown>; read: unknown }
> {
  return {
    async read({ event, ctx }) {
      const handler = event.data.object.mode === "payment"
        ? handlers.payment
        : handlers.subscription;
      return { handler, read: await handler.read({ event, ctx }) };
    },
    async quick({ entry, db, read }) {
      return await read.handler.quick?.({ entry, db, read: read.read }) ?? null;
    },
    async complete({ ctx, read, also }) {
      if (!read.handler.complete) return read;
      return {
        handler: read.handler,
        read: await read.handler.complete({ ctx, read: read.read, also }),
      };
    },
    async write({ event, sql, read, ctx }) {
      return await read.handler.write({ event, sql, read: read.read, ctx });
    },
  };
}

/** Events of our own account: billing, and deals' payments, refunds (also of stray payments), disputes and payouts. */
export const PLATFORM_HANDLERS: Readonly<WebhookHandlers> = Object.freeze({
  ...SUBSCRIPTION_EVENT_HANDLERS,
  ...INVOICE_EVENT_HANDLERS,
  ...DEAL_PAYMENT_EVENT_HANDLERS,
  ...DEAL_SETTLEMENT_EVENT_HANDLERS,
  ...STRAY_REFUND_EVENT_HANDLERS,
  "checkout.session.completed": byCheckoutMode({
    subscription: onSubscriptionCheckoutCompleted as WebhookHandler<CheckoutEvent, unknown>,
    payment: onDealCheckoutCompleted as WebhookHandler<CheckoutEvent, unknown>,
  }),
});

/** Events of connected (seller) accounts. */
export const CONNECT_HANDLERS: Readonly<WebhookHandlers> = Object.freeze({
  ...ACCOUNT_EVENT_HANDLERS,
});

const BY_ENDPOINT: Record<Endpoint, Readonly<WebhookHandlers>> = {
  platform: PLATFORM_HANDLERS,
  connect: CONNECT_HANDLERS,
};

/** The handler of `type` for events verified by `endpoint`'s secret, if any. */
export function handlerFor(endpoint: Endpoint, type: string): WebhookHandler | undefined {
  const handlers = BY_ENDPOINT[endpoint];
  if (!Object.hasOwn(handlers, type)) return undefined;
  return handlers[type as keyof WebhookHandlers] as WebhookHandler | undefined;
}
