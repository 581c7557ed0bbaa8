/**
 * `test-payproc` (admin; the anon key under `LOCAL_DEV`): whether the payment
 * processor answers our key and how it is set up — `TestPayprocOutput` of
 * `shared/schemas.ts`, never a secret value. A diagnostic: it answers 200
 * whatever it finds, with `ok: false` and a `reason` when something is wrong.
 *
 * - `mode`: from the key's prefix (`sk_test_`/`rk_test_` → test,
 *   `sk_live_`/`rk_live_` → live, else null). Without `PAYPROC_SECRET_KEY`
 *   nothing is asked: `ok: false`, "PAYPROC_SECRET_KEY is not set".
 * - `webhookSecretSet`, `connectWebhookSecretSet`: whether
 *   `PAYPROC_WEBHOOK_SECRET` / `PAYPROC_CONNECT_WEBHOOK_SECRET` are set.
 * - Three reads in parallel (`latencyMs` measures them together):
 *   - `account`: the platform account (`accounts.retrieveCurrent()`, `GET /v1/account`) → id and country.
 *   - `prices`: one list of the prices carrying our plan-interval lookup keys
 *     (active or not), then one entry per key in `PLAN_INTERVAL_KEYS` order:
 *     an active price → found and active; only inactive ones → found, not
 *     active (that price's id); none → not found. Empty when the list could
 *     not be read (nothing was checked).
 *   - `connectEnabled`: one page of connected accounts. A connected account
 *     proves Connect → true; a refusal (403, or a 4xx naming Connect) → false;
 *     an empty list → null, because the API answers a platform that never
 *     signed up for Connect with an empty list too ("If you're not a platform,
 *     the list is empty"), so it proves nothing; unreachable → null.
 * - `ok`: the account was read AND every plan price is found and active.
 *   Connect and the webhook secrets are reported, not judged. `reason` lists
 *   what is wrong, "; "-separated: "authentication failed: …" (the processor's
 *   error type and code, never its message, which quotes the key), "processor
 *   unreachable: …", "processor unavailable: …" (5xx, rate limited), "no price
 *   has lookup key pro_yearly", "the price for pro_yearly (price_…) is
 *   inactive".
 *
 * Errors that are not the processor's (a bug) still end as a 500.
 *
 * @module
 */
import type Stripe from "stripe";
import { PLAN_INTERVAL_KEYS } from "../../../shared/plans.ts";
import type { z } from "zod";
import type { PayprocPriceCheck, TestPayprocOutput } from "../../../shared/schemas.ts";
import { isRefusal } from "../_shared/platform/payproc_calls.ts";
import { defineFunction } from "../_shared/platform/function.ts";
import { isLiveKey, isPayprocError, payprocFor } from "../_shared/platform/payproc.ts";

type Output = z.input<typeof TestPayprocOutput>;
type PriceCheck = z.input<typeof PayprocPriceCheck>;

/** The mode a key works in, from its prefix. */
function keyMode(key: string): "test" | "live" | null {
  if (isLiveKey(key)) return "live";
  return /^(sk|rk)_test_/.test(key) ? "test" : null;
}

/** One entry per plan-interval key, from the prices listed by those lookup keys. */
function checkPrices(
  prices: readonly Pick<Stripe.Price, "id" | "active" | "lookup_key">[],
): PriceCheck[] {
  return PLAN_INTERVAL_KEYS.map((key) => {
    const carrying = prices.filter((price) => price.lookup_key === key);
    const chosen = carrying.find((price) => price.active) ?? carrying[0];
    return chosen
      ? { key, priceId: chosen.id, found: true, active: chosen.active }
      : { key, priceId: null, found: false, active: false };
  });
}

/** What a failed read says about the processor. */
interface Failure {
  /** The sentence for `reason`. */
  readonly reason: string;
  /** The processor refused the request itself (4xx other than 401, 409 and 429). */
  readonly refused: boolean;
  readonly status: number | null;
  readonly message: string;
}

/**
 * Our reading of a processor error; anything else (a bug) is rethrown. A
 * refusal is what `isRefusal` says (a 4xx other than 409/429); the rest is
 * the processor unreachable (no status) or failing on its side.
 */
function failureOf(error: unknown, what: string, timeoutMs: number): Failure {
  if (!isPayprocError(error)) throw error;
  const status = error.statusCode || null;
  const detail = [error.rawType, error.code].filter(Boolean).join("/") || error.type;
  const { message = "", type } = error;
  const base = { status, message, refused: false };
  if (status === 401) {
    return {
      ...base,
      reason: `authentication failed: the processor refused the key (${detail}, 401)`,
    };
  }
  if (isRefusal(error)) {
    return { ...base, refused: true, reason: `${what}: refused (${detail}, ${status})` };
  }
  if (status === null) {
    const timedOut = /timeout|timed out/i.test(message);
    return {
      ...base,
      reason: `processor unreachable: ${
        timedOut ? `no answer within ${timeoutMs} ms` : "the connection failed"
      } (${type})`,
    };
  }
  return { ...base, reason: `processor unavailable: ${detail} (${status})` };
}

/** `connectEnabled` from the connected-accounts read; see the module doc. */
function connectFrom(
  read: PromiseSettledResult<{ data: unknown[] }>,
  failure: Failure | null,
): boolean | null {
  if (read.status === "fulfilled") return read.value.data.length > 0 ? true : null;
  if (!failure?.refused) return null;
  return failure.status === 403 || /connect/i.test(failure.message) ? false : null;
}

export default defineFunction({
  name: "test-payproc",
  access: "admin",
  group: "utilities",
  summary: "Tests the payment processor connection",
  output: "TestPayprocOutput",
  async handle({ ctx }): Promise<Output> {
    const key = ctx.env.values.PAYPROC_SECRET_KEY;
    const secrets = {
      webhookSecretSet: ctx.env.has("PAYPROC_WEBHOOK_SECRET"),
      connectWebhookSecretSet: ctx.env.has("PAYPROC_CONNECT_WEBHOOK_SECRET"),
    };
    if (!key) {
      return {
        ok: false,
        reason: "PAYPROC_SECRET_KEY is not set",
        mode: null,
        account: null,
        ...secrets,
        connectEnabled: null,
        prices: [],
        latencyMs: 0,
      };
    }
    const payproc = await payprocFor(ctx);
    const started = performance.now();
    const [account, prices, connected] = await Promise.allSettled([
      payproc.accounts.retrieveCurrent(),
      payproc.prices.list({ lookup_keys: [...PLAN_INTERVAL_KEYS], limit: 100 }),
      payproc.accounts.list({ limit: 1 }),
    ]);
    const latencyMs = Math.round(performance.now() - started);

    const timeout = ctx.env.values.PAYPROC_TIMEOUT_MS;
    const fail = (read: PromiseSettledResult<unknown>, what: string) =>
      read.status === "rejected" ? failureOf(read.reason, what, timeout) : null;
    const accountFailure = fail(account, "the platform account could not be read");
    const pricesFailure = fail(prices, "the prices could not be listed");
    const connectFailure = fail(connected, "connected accounts could not be listed");

    const checks = prices.status === "fulfilled" ? checkPrices(prices.value.data) : [];
    const problems = [accountFailure?.reason, pricesFailure?.reason];
    for (const check of checks) {
      if (!check.found) problems.push(`no price has lookup key ${check.key}`);
      else if (!check.active) {
        problems.push(`the price for ${check.key} (${check.priceId}) is inactive`);
      }
    }
    const reasons = [...new Set(problems.filter((p): p is string => p !== undefined))];
    const ok = reasons.length === 0;
    return {
      ok,
      ...(ok ? {} : { reason: redact(reasons.join("; "), ctx.env.values) }),
      mode: keyMode(key),
      account: account.status === "fulfilled"
        ? { id: account.value.id, country: account.value.country ?? null }
        : null,
      ...secrets,
      connectEnabled: connectFrom(connected, connectFailure),
      prices: checks,
      latencyMs,
    };
  },
});

/** `text` with our processor secrets replaced (no reason quotes one; belt and braces). */
function redact(
  text: string,
  values: Partial<
    Record<
      "PAYPROC_SECRET_KEY" | "PAYPROC_WEBHOOK_SECRET" | "PAYPROC_CONNECT_WEBHOOK_SECRET",
      string
    >
  >,
): string {
  const secrets = [
    values.PAYPROC_SECRET_KEY,
    values.PAYPROC_WEBHOOK_SECRET,
    values.PAYPROC_CONNECT_WEBHOOK_SECRET,
  ];
  return secrets.reduce<string>(
    (out, secret) => secret ? out.replaceAll(secret, "[redacted]") : out,
    text,
  );
}
