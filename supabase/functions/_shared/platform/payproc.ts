/**
 * The payment processor client (the `stripe` SDK on its fetch HTTP client),
 * loaded on first use, and the mapping of its failures to our error model.
 * Nothing here imports the SDK at cold start: a function that never talks to
 * the processor never loads it (and then no processor error can exist, which
 * is why {@linkcode isPayprocError} may answer false until it is loaded).
 *
 * @module
 */
import type Stripe from "stripe";
import type { Env } from "./env.ts";
import type { Runtime } from "./runtime.ts";
import { HttpError, upstreamUnavailable } from "./errors.ts";
import { registerErrorMapper } from "./to_http_error.ts";

/** The processor API version this code and the test double are built for. */
export const PAYPROC_API_VERSION = "2026-10-28.endive" as const;

/** The SDK's module: its client class, error classes and webhook helpers. */
export type PayprocSdk = typeof Stripe;

let sdk: PayprocSdk | undefined;
let loading: Promise<PayprocSdk> | undefined;

/** Loads the SDK once per isolate (and registers its error mapping). */
export function loadPayprocSdk(): Promise<PayprocSdk> {
  loading ??= import("stripe").then((module) => {
    sdk = module.default;
    registerErrorMapper((error) => isPayprocError(error) ? payprocHttpError(error) : undefined);
    return sdk;
  });
  return loading;
}

/**
 * Builds a client from `PAYPROC_SECRET_KEY` (503 when unset) and
 * `PAYPROC_API_BASE`. Every call has a timeout (`PAYPROC_TIMEOUT_MS`) and one
 * retry, which the SDK sends with the same idempotency key.
 */
/**
 * The payment processor client of `ctx`'s runtime, built on first use (the
 * SDK loads then, so a function that never calls the processor never loads
 * it); 503 `not_configured` without `PAYPROC_SECRET_KEY`. Never call it
 * inside `db.tx`: read from the processor first, then write briefly.
 */
export function payprocFor(ctx: { readonly runtime: Runtime }): Promise<Stripe> {
  return ctx.runtime.load("payproc", () => createPayprocClient(ctx.runtime.env));
}

/** A processor client for `env` (see {@linkcode payprocFor}). */
async function createPayprocClient(env: Env): Promise<Stripe> {
  const key = env.require("PAYPROC_SECRET_KEY");
  const Sdk = await loadPayprocSdk();
  const config: Stripe.StripeConfig = {
    apiVersion: PAYPROC_API_VERSION,
    httpClient: Sdk.createFetchHttpClient(),
    timeout: env.values.PAYPROC_TIMEOUT_MS,
    maxNetworkRetries: 1,
    appInfo: { name: "marketplace-backend" },
  };
  const base = env.values.PAYPROC_API_BASE;
  if (base) {
    const url = new URL(base);
    config.host = url.hostname;
    config.protocol = url.protocol === "http:" ? "http" : "https";
    config.port = url.port ? Number(url.port) : url.protocol === "http:" ? 80 : 443;
  }
  return new Sdk(key, config);
}

/** Whether `PAYPROC_SECRET_KEY` is a live-mode key (`sk_live_…`, `rk_live_…`). */
export function isLiveKey(key: string): boolean {
  return /^(sk|rk)_live_/.test(key);
}

/** True for errors thrown by the processor SDK (false while it is not loaded: none can exist). */
export function isPayprocError(error: unknown): error is Stripe.errors.StripeError {
  return sdk !== undefined && error instanceof sdk.errors.StripeError;
}

/**
 * Our error for a processor failure: unreachable, timing out, rate limiting or
 * failing on its side → 503 `upstream_unavailable`; refusing our request →
 * 502 `upstream_rejected` (a bug or a state we did not expect, never the
 * client's fault).
 */
export function payprocHttpError(error: Stripe.errors.StripeError): HttpError {
  const status = error.statusCode ?? 0;
  const errors = sdk!.errors; // loaded: `error` is one of its errors
  if (
    error instanceof errors.StripeConnectionError || error instanceof errors.StripeRateLimitError ||
    status === 0 || status >= 500
  ) {
    return upstreamUnavailable("payment processor", error.type);
  }
  return new HttpError(
    502,
    "upstream_rejected",
    `The payment processor refused the request${error.code ? `: ${error.code}` : ""}`,
  );
}
