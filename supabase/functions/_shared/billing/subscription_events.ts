/**
 * Webhook handlers of subscription events (`customer.subscription.*`) and of
 * `checkout.session.completed` in subscription mode. Each re-reads the
 * subscription from the processor under its lock, so the newest state wins
 * whatever the delivery order; a subscription the processor no longer has is
 * applied from the event, unless an equally new or newer event was applied.
 *
 * @module
 */
import type Stripe from "stripe";
import type { Context } from "../context.ts";
import type { Sql } from "../db.ts";
import { lockProcessorObject } from "./locks.ts";
import { orNullIfMissing } from "./processor.ts";
import { type SyncResult, syncSubscription } from "./subscription_sync.ts";
import { idOf } from "./subscription_state.ts";
import { existingUserId } from "./users.ts";
import {
  applied,
  type EventOf,
  ignored,
  objectId,
  skipped,
  type WebhookArgs,
  type WebhookHandlers,
  type WebhookResult,
} from "./webhook_types.ts";

/**
 * Re-reads subscription `id` and mirrors it (falling back to `fallback`, the
 * event's copy, when the processor no longer has it).
 */
export async function applySubscriptionEvent(
  ctx: Context,
  sql: Sql,
  id: string,
  event: Stripe.Event,
  options: { fallback?: Stripe.Subscription; userId?: string } = {},
): Promise<WebhookResult> {
  if (id !== objectId(event)) await lockProcessorObject(sql, id);
  const readAt = new Date();
  const current = await orNullIfMissing(ctx.payproc.subscriptions.retrieve(id));
  const subscription = current ?? options.fallback;
  if (!subscription) return skipped(`subscription "${id}" does not exist at the processor`);
  const result = await syncSubscription(ctx, sql, subscription, {
    readAt: current ? readAt : null,
    eventCreated: event.created,
    userId: options.userId,
    locked: true,
  });
  return asWebhookResult(result);
}

/** A sync result as an event outcome. */
export function asWebhookResult(result: SyncResult): WebhookResult {
  switch (result.result) {
    case "changed":
      return applied();
    case "unchanged":
      return applied("already up to date");
    default:
      return skipped(`${result.result}: ${result.reason}`);
  }
}

type SubscriptionEventType =
  | "customer.subscription.created"
  | "customer.subscription.updated"
  | "customer.subscription.deleted"
  | "customer.subscription.paused"
  | "customer.subscription.resumed";

function onSubscriptionEvent(
  { event, sql, ctx }: WebhookArgs<EventOf<SubscriptionEventType>>,
): Promise<WebhookResult> {
  const subscription: Stripe.Subscription = event.data.object;
  return applySubscriptionEvent(ctx, sql, subscription.id, event, { fallback: subscription });
}

async function onCheckoutCompleted(
  { event, sql, ctx }: WebhookArgs<EventOf<"checkout.session.completed">>,
): Promise<WebhookResult> {
  const session = event.data.object;
  if (session.mode !== "subscription") return ignored(`checkout in ${session.mode} mode`);
  if (!session.subscription) return skipped("the checkout has no subscription");
  const userId = await existingUserId(sql, session.client_reference_id) ??
    await existingUserId(sql, session.metadata?.user_id);
  if (userId === null) return skipped("the checkout names no existing user");
  return await applySubscriptionEvent(ctx, sql, idOf(session.subscription), event, { userId });
}

/** Handlers of subscription lifecycle events. */
export const SUBSCRIPTION_EVENT_HANDLERS: WebhookHandlers = {
  "checkout.session.completed": onCheckoutCompleted,
  "customer.subscription.created": onSubscriptionEvent,
  "customer.subscription.updated": onSubscriptionEvent,
  "customer.subscription.deleted": onSubscriptionEvent,
  "customer.subscription.paused": onSubscriptionEvent,
  "customer.subscription.resumed": onSubscriptionEvent,
};
