/**
 * Types of webhook event handlers: one per event type, typed by the event.
 *
 * @module
 */
import type Stripe from "stripe";
import type { Context } from "../context.ts";
import type { Sql } from "../db.ts";

/** The event of type `T`. */
export type EventOf<T extends Stripe.Event.Type> = Extract<Stripe.Event, { type: T }>;

/** What a handler gets: the verified event, the event's transaction and the context. */
export interface WebhookArgs<E extends Stripe.Event = Stripe.Event> {
  event: E;
  /**
   * The transaction the event is recorded in; effects written here commit
   * with it. It already holds the advisory lock of `event.data.object.id`.
   */
  sql: Sql;
  ctx: Context;
}

/** How an event ended (`payproc_events.outcome`). */
export interface WebhookResult {
  outcome: "applied" | "ignored" | "skipped";
  /** Why it was ignored or skipped. */
  detail?: string;
}

/** Handles one event type; throwing rolls the event back and answers 5xx (retried). */
export type WebhookHandler<E extends Stripe.Event = Stripe.Event> = (
  args: WebhookArgs<E>,
) => Promise<WebhookResult>;

/** Handlers by event type. */
export type WebhookHandlers = {
  [T in Stripe.Event.Type]?: WebhookHandler<EventOf<T>>;
};

/** Shorthands for results. */
export const applied = (detail?: string): WebhookResult =>
  detail ? { outcome: "applied", detail } : { outcome: "applied" };
/** An event with nothing to do. */
export const ignored = (detail: string): WebhookResult => ({ outcome: "ignored", detail });
/** An event refused on purpose. */
export const skipped = (detail: string): WebhookResult => ({ outcome: "skipped", detail });

/** The id of the object an event is about (`data.object.id`), or the event's own. */
export function objectId(event: Stripe.Event): string {
  const id = (event.data.object as { id?: unknown }).id;
  return typeof id === "string" && id !== "" ? id : event.id;
}
