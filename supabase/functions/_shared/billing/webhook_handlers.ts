/**
 * The webhook's dispatch table: event type → handler. Other features add
 * their events by spreading their own table in here (e.g. the deals issue's
 * `payment_intent.*`); a type without a handler is recorded as ignored.
 *
 * @module
 */
import type Stripe from "stripe";
import { ACCOUNT_EVENT_HANDLERS } from "./account_events.ts";
import { INVOICE_EVENT_HANDLERS } from "./invoice_events.ts";
import { SUBSCRIPTION_EVENT_HANDLERS } from "./subscription_events.ts";
import type { WebhookHandler, WebhookHandlers } from "./webhook_types.ts";

/** Every handled event type and its handler. */
export const WEBHOOK_HANDLERS: Readonly<WebhookHandlers> = Object.freeze({
  ...SUBSCRIPTION_EVENT_HANDLERS,
  ...INVOICE_EVENT_HANDLERS,
  ...ACCOUNT_EVENT_HANDLERS,
});

/** The handler of `type` in `handlers`, if any. */
export function handlerFor(
  type: string,
  handlers: Readonly<WebhookHandlers> = WEBHOOK_HANDLERS,
): WebhookHandler | undefined {
  if (!Object.hasOwn(handlers, type)) return undefined;
  return handlers[type as Stripe.Event.Type] as WebhookHandler | undefined;
}
