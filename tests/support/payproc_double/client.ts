/**
 * The real SDK pointed at a {@linkcode PayprocDouble}, configured the way the
 * production code builds its client when `PAYPROC_API_BASE` is set.
 *
 * @module
 */
import Stripe from "stripe";

/** A test secret key the double accepts. */
export const TEST_SECRET_KEY = "sk_test_double_0000000000000000";

/**
 * `new Stripe(key, { httpClient: fetch, host, port, protocol: "http", maxNetworkRetries: 0 })`
 * against the double; `config` overrides (e.g. `{ timeout: 200 }`).
 */
export function payprocClient(
  double: { host: string; port: number },
  key: string = TEST_SECRET_KEY,
  config: Stripe.StripeConfig = {},
): Stripe {
  return new Stripe(key, {
    httpClient: Stripe.createFetchHttpClient(),
    host: double.host,
    port: double.port,
    protocol: "http",
    maxNetworkRetries: 0,
    ...config,
  });
}
