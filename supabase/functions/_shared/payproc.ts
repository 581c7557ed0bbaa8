/**
 * The payment processor client (the `stripe` SDK on its fetch HTTP client)
 * and the mapping of its failures to our error model.
 *
 * @module
 */
import Stripe from "stripe";
import type { Env } from "./env.ts";
import { HttpError, upstreamUnavailable } from "./errors.ts";

/** The processor API version this code and the test double are built for. */
export const PAYPROC_API_VERSION = "2026-10-28.endive" as const;

/** Builds a client from `PAYPROC_SECRET_KEY` (503 when unset) and `PAYPROC_API_BASE`. */
export function createPayprocClient(env: Env): Stripe {
  const key = env.require("PAYPROC_SECRET_KEY");
  const config: Stripe.StripeConfig = {
    apiVersion: PAYPROC_API_VERSION,
    httpClient: Stripe.createFetchHttpClient(),
    timeout: env.values.PAYPROC_TIMEOUT_MS,
    // One retry (the SDK reuses the idempotency key): a processor outage costs a
    // caller at most about two timeouts, never a hanging request.
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
  return new Stripe(key, config);
}

/** Webhook signature verification that works on Deno's WebCrypto. */
export const payprocCryptoProvider = Stripe.createSubtleCryptoProvider();

/** True for errors thrown by the processor SDK. */
export function isPayprocError(error: unknown): error is Stripe.errors.StripeError {
  return error instanceof Stripe.errors.StripeError;
}

/**
 * Our error for a processor failure: unreachable, timing out, rate limiting or
 * failing on its side → 503 `upstream_unavailable`; refusing our request →
 * 502 `upstream_rejected` (a bug or a state we did not expect, never the
 * client's fault).
 */
export function payprocHttpError(error: Stripe.errors.StripeError): HttpError {
  const status = error.statusCode ?? 0;
  if (
    error instanceof Stripe.errors.StripeConnectionError ||
    error instanceof Stripe.errors.StripeRateLimitError || status === 0 || status >= 500
  ) {
    return upstreamUnavailable("payment processor", error.type);
  }
  return new HttpError(
    502,
    "upstream_rejected",
    `The payment processor refused the request${error.code ? `: ${error.code}` : ""}`,
  );
}
