/**
 * Types of webhook event handlers: one per event type, typed by the event,
 * in the phases of `docs/billing.md#the-webhook` — read from the processor first, then write
 * briefly in the event's transaction.
 *
 * @module
 */
import type Stripe from "stripe";
import type { Context } from "../platform/context.ts";
import type { Db, Sql } from "../platform/db.ts";
import type { Endpoint } from "./verify.ts";

/** The event of type `T`. */
export type EventOf<T extends Stripe.Event.Type> = Extract<Stripe.Event, { type: T }>;

/** How an event ended (`payproc_events.outcome`). */
export interface WebhookResult {
  outcome: "applied" | "ignored" | "skipped";
  /** Why it was ignored or skipped, or a note on an applied one. */
  detail?: string;
}

/** What applying an event did: its result, or nothing because it was recorded before. */
export type EventOutcome = WebhookResult | { outcome: "duplicate" };

/** An event on its way into the ledger, and the endpoint that verified it. */
export interface LedgerEntry {
  event: Stripe.Event;
  endpoint: Endpoint;
}

/**
 * Handles one event type. `fromPayload`, when the handler has it, may settle
 * the event from its signed copy; else `read` runs, outside any transaction
 * (the processor is called only here); then, if `quick` settles the event in one
 * statement (recording it too), that is all; else `complete` reads what the
 * full write needs and `write` runs in the transaction that records the
 * event. `write` may throw `RereadNeeded`: then `complete` runs again with
 * that object and `write` is retried.
 */
export interface WebhookHandler<E extends Stripe.Event = Stripe.Event, R = unknown> {
  /**
   * Records and applies the event from its own signed copy in one call, when
   * that provably is the newest state; null when it cannot be proved (then
   * `read` runs). Runs first; handlers without it always read.
   */
  fromPayload?(args: { entry: LedgerEntry; ctx: Context }): Promise<EventOutcome | null>;
  /** Reads what the event is about from the processor. */
  read(args: { event: E; ctx: Context }): Promise<R>;
  /** Records and applies the event in one statement when it can; null otherwise. */
  quick?(args: { entry: LedgerEntry; db: Db; read: R }): Promise<EventOutcome | null>;
  /** Reads what the full write needs (`also`: objects a previous write met unread). */
  complete?(args: { ctx: Context; read: R; also: readonly string[] }): Promise<R>;
  /**
   * Writes the effects inside the event's transaction (`ctx` for what goes
   * out after the commit, e.g. `queueNotice`; never for network calls).
   */
  write(args: { event: E; sql: Sql; read: R; ctx: Context }): Promise<WebhookResult>;
}

/** Handlers by event type. */
export type WebhookHandlers = {
  [T in Stripe.Event.Type]?: WebhookHandler<EventOf<T>, unknown>;
};

/** Shorthands for results. */
export const applied = (detail?: string): WebhookResult =>
  detail ? { outcome: "applied", detail } : { outcome: "applied" };
/** An event with nothing to do. */
export const ignored = (detail: string): WebhookResult => ({ outcome: "ignored", detail });
/** An event refused on purpose. */
export const skipped = (detail: string): WebhookResult => ({ outcome: "skipped", detail });
