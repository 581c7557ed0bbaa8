/**
 * Webhook authentication and admission. The `Stripe-Signature` header over
 * the raw body is verified with the SDK's async check (HMACs from
 * `crypto.ts`) and its default 300 s tolerance against `PAYPROC_WEBHOOK_SECRET` (the platform
 * endpoint) or, when set, `PAYPROC_CONNECT_WEBHOOK_SECRET` (the Connect
 * endpoint). Which secret verified the event decides what it may be about:
 *
 * - platform: events of our own account — never one naming a connected
 *   account (`account` must be absent);
 * - connect: events of connected accounts only — `account` is required and
 *   the type must be `account.*` or `payout.*` (a seller's own account and
 *   payouts). A seller can create subscriptions, prices and checkouts on
 *   their own account; none of that may ever reach billing.
 *
 * The event's `livemode` must match the secret key's mode. A refused event
 * writes nothing and answers 400, so the processor keeps retrying and the
 * misconfiguration is seen.
 *
 * @module
 */
import type Stripe from "stripe";
import { refuseUnstorable } from "../platform/body.ts";
import type { Env } from "../platform/env.ts";
import { HttpError } from "../platform/errors.ts";
import { isLiveKey, loadPayprocSdk } from "../platform/payproc.ts";
import { loadOnce } from "../lib/load_once.ts";

/** The signature header's name. */
export const SIGNATURE_HEADER = "stripe-signature";

/** Which endpoint's secret verified an event (`payproc_events.endpoint`). */
export type Endpoint = "platform" | "connect";

/** An event whose signature, endpoint and mode were checked. */
export interface VerifiedEvent {
  event: Stripe.Event;
  endpoint: Endpoint;
}

/** Event types the Connect endpoint accepts. */
const CONNECT_TYPES = /^(account|payout)\./;

function invalidSignature(reason: string): HttpError {
  return new HttpError(400, "invalid_signature", `Cannot accept the webhook: ${reason}`);
}

function refused(code: string, reason: string): HttpError {
  return new HttpError(400, code, `Cannot accept the webhook: ${reason}`);
}

/** The endpoint secrets to try, in order; 503 `not_configured` without the main one. */
function webhookSecrets(env: Env): Array<[Endpoint, string]> {
  const secrets: Array<[Endpoint, string]> = [["platform", env.require("PAYPROC_WEBHOOK_SECRET")]];
  const connect = env.values.PAYPROC_CONNECT_WEBHOOK_SECRET;
  if (connect) secrets.push(["connect", connect]);
  return secrets;
}

/** The SDK and the HMAC engine, loaded with the first event to verify, once. */
const verifiers = loadOnce(() => Promise.all([loadPayprocSdk(), import("./crypto.ts")]));

/**
 * The verified, admitted event; 400 (`invalid_signature`, `invalid_json`,
 * `invalid_input`, `wrong_endpoint`, `wrong_mode`) otherwise.
 */
export async function verifyWebhook(
  env: Env,
  header: string | null,
  body: string,
): Promise<VerifiedEvent> {
  const secrets = webhookSecrets(env);
  const live = isLiveKey(env.require("PAYPROC_SECRET_KEY"));
  if (!header) throw invalidSignature("the Stripe-Signature header is missing");
  // The SDK and the HMAC engine (`node:crypto`, which brings up Deno's Node
  // compatibility layer: tens of milliseconds) load with the first event to
  // verify, not at cold start (docs/benchmarks.md, `cold_start`).
  const [sdk, { hmacCryptoProvider }] = await verifiers();
  let stale = false;
  for (const [endpoint, secret] of secrets) {
    let event: Stripe.Event;
    try {
      event = await sdk.webhooks.constructEventAsync(
        body,
        header,
        secret,
        undefined,
        hmacCryptoProvider,
      );
    } catch (error) {
      if (error instanceof sdk.errors.StripeSignatureVerificationError) {
        stale ||= /tolerance/i.test(error.message);
        continue;
      }
      if (error instanceof SyntaxError) {
        throw new HttpError(400, "invalid_json", "Cannot parse the webhook: it is not valid JSON");
      }
      throw error;
    }
    // Only ids and the type are read from the payload (objects are re-read
    // from the processor), but those reach PostgreSQL: an event holding what
    // it cannot store (NUL, lone surrogates, deep nesting) is refused whole,
    // as any request body is (`body.ts`), before anything is written.
    refuseUnstorable(event);
    return admit(assertEventShape(event), endpoint, live);
  }
  throw invalidSignature(
    stale
      ? "its timestamp is outside the 300 s tolerance"
      : "the signature does not match the body",
  );
}

/** Applies the endpoint and mode rules of the module doc. */
export function admit(event: Stripe.Event, endpoint: Endpoint, live: boolean): VerifiedEvent {
  if (event.livemode !== live) {
    throw refused(
      "wrong_mode",
      `a ${event.livemode ? "live" : "test"}-mode event does not match the ${
        live ? "live" : "test"
      }-mode key`,
    );
  }
  const account = typeof event.account === "string" && event.account !== "" ? event.account : null;
  if (endpoint === "platform" && account !== null) {
    throw refused(
      "wrong_endpoint",
      `event "${event.id}" is about connected account "${account}"; it belongs on the Connect endpoint`,
    );
  }
  if (endpoint === "connect") {
    if (account === null) {
      throw refused("wrong_endpoint", `Connect event "${event.id}" names no connected account`);
    }
    if (!CONNECT_TYPES.test(event.type)) {
      throw refused(
        "wrong_endpoint",
        `the Connect endpoint accepts only account and payout events, not "${event.type}"`,
      );
    }
  }
  return { event, endpoint };
}

function assertEventShape(event: Stripe.Event): Stripe.Event {
  const candidate = event as unknown as Record<string, unknown> | null;
  const data = candidate?.data as Record<string, unknown> | undefined;
  if (
    typeof candidate?.id !== "string" || typeof candidate.type !== "string" ||
    typeof candidate.created !== "number" || typeof candidate.livemode !== "boolean" ||
    typeof data?.object !== "object" || data.object === null
  ) {
    throw new HttpError(400, "invalid_input", "Cannot accept the webhook: it is not an event");
  }
  return event;
}
