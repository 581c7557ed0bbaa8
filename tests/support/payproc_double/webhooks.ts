/**
 * Webhook events as the processor sends them: {@linkcode buildEvent} makes an
 * `Event` (`evt_` id, pinned `api_version`, `data.object`), and
 * {@linkcode signWebhook} signs its JSON exactly as the API does
 * (`Stripe-Signature: t=<unix>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`).
 *
 * @module
 */
import Stripe from "stripe";
import { randomId } from "./store.ts";
import type { Wire } from "./types.ts";

/** The event type names, e.g. `customer.subscription.updated`. */
export type PayprocEventType = Stripe.Event.Type;

/** The wire shape of the event of type `T`. */
export type PayprocEventOf<T extends PayprocEventType> = Wire<Extract<Stripe.Event, { type: T }>>;

/** The `data.object` an event of type `T` carries. */
export type PayprocEventObject<T extends PayprocEventType> = PayprocEventOf<T>["data"]["object"];

/** Options of {@linkcode buildEvent}. */
export interface EventOptions {
  /** Default: a new `evt_` id. */
  id?: string;
  /** Unix seconds; default now. */
  created?: number;
  /** The connected account the event happened on (Connect webhooks). */
  account?: string;
  /** `data.previous_attributes` (for `*.updated` events). */
  previousAttributes?: Record<string, unknown>;
  /** Default: the SDK's pinned `Stripe.API_VERSION`. */
  apiVersion?: string;
  /** Default 1. */
  pendingWebhooks?: number;
  /** The API request that caused the event; default `{ id: null, idempotency_key: null }` (automatic). */
  request?: { id: string | null; idempotency_key: string | null };
}

/** Builds an `Event` of `type` wrapping `object`. */
export function buildEvent<T extends PayprocEventType>(
  type: T,
  object: PayprocEventObject<T>,
  options: EventOptions = {},
): PayprocEventOf<T> {
  const event = {
    id: options.id ?? randomId("evt_"),
    object: "event",
    ...(options.account ? { account: options.account } : {}),
    api_version: options.apiVersion ?? Stripe.API_VERSION,
    created: options.created ?? Math.floor(Date.now() / 1000),
    data: {
      object: structuredClone(object),
      ...(options.previousAttributes ? { previous_attributes: options.previousAttributes } : {}),
    },
    livemode: false,
    pending_webhooks: options.pendingWebhooks ?? 1,
    request: options.request ?? { id: null, idempotency_key: null },
    type,
  };
  return event as unknown as PayprocEventOf<T>;
}

/** A signed webhook delivery: POST `body` with `headers`. */
export interface SignedWebhook {
  /** The exact JSON body that was signed. */
  body: string;
  headers: { "content-type": "application/json; charset=utf-8"; "stripe-signature": string };
}

async function hmacHex(secret: string, message: string): Promise<string> {
  const encoder = new TextEncoder();
  const key = await crypto.subtle.importKey(
    "raw",
    encoder.encode(secret),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  const signature = await crypto.subtle.sign("HMAC", key, encoder.encode(message));
  return Array.from(new Uint8Array(signature), (b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * Signs an event (or a raw body) with a `whsec_…` secret. Pass an old
 * `timestamp` to test tolerance checks; the body is pretty-printed JSON like
 * the API's deliveries.
 */
export async function signWebhook(
  event: object | string,
  secret: string,
  options: { timestamp?: number } = {},
): Promise<SignedWebhook> {
  const body = typeof event === "string" ? event : JSON.stringify(event, null, 2);
  const timestamp = options.timestamp ?? Math.floor(Date.now() / 1000);
  const signature = await hmacHex(secret, `${timestamp}.${body}`);
  return {
    body,
    headers: {
      "content-type": "application/json; charset=utf-8",
      "stripe-signature": `t=${timestamp},v1=${signature}`,
    },
  };
}
