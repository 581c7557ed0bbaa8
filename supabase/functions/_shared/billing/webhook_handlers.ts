/**
 * The webhook's dispatch tables, one per endpoint: event type → handler.
 * Other features add their events by spreading their own table into the
 * right one (e.g. the deals issue's `payment_intent.*` on the platform). A
 * type without a handler is recorded as ignored.
 *
 * @module
 */
import { ACCOUNT_EVENT_HANDLERS } from "./account_events.ts";
import { INVOICE_EVENT_HANDLERS } from "./invoice_events.ts";
import { SUBSCRIPTION_EVENT_HANDLERS } from "./subscription_events.ts";
import type { WebhookHandler, WebhookHandlers } from "./webhook_types.ts";
import type { Endpoint } from "./webhook_verify.ts";

/** Events of our own account (billing). */
export const PLATFORM_HANDLERS: Readonly<WebhookHandlers> = Object.freeze({
  ...SUBSCRIPTION_EVENT_HANDLERS,
  ...INVOICE_EVENT_HANDLERS,
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
