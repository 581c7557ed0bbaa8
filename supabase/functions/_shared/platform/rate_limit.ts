/**
 * Per-caller rate limits, declared on a function (`rateLimit`) and enforced
 * by the factory after authentication: a fixed window counted in the
 * database (`public.take_rate_limit`, one statement), so every isolate shares
 * the count. Over the limit: 429 `rate_limited` with `Retry-After` (and
 * `details.retryAfter`).
 *
 * @module
 */
import type { Caller } from "./caller.ts";
import type { Context } from "./context.ts";
import { retryLater } from "./errors.ts";

/** At most `limit` calls per `windowSeconds` per caller. */
export interface RateLimit {
  limit: number;
  windowSeconds: number;
}

/** The counter key of `caller` for function `name` (users by id, other callers by kind). */
export function rateLimitKey(name: string, caller: Caller): string {
  return `${name}:${caller.kind === "user" ? caller.id : caller.kind}`;
}

/** Counts one call under `key`; throws 429 `rate_limited` when the window is used up. */
export async function enforceRateLimit(
  ctx: Context,
  key: string,
  { limit, windowSeconds }: RateLimit,
): Promise<void> {
  const decision = await ctx.db.one<{ allowed: boolean; retry_after_seconds: number }>(
    "select allowed, retry_after_seconds from public.take_rate_limit($1, $2, $3)",
    [key, limit, windowSeconds],
  );
  if (decision.allowed) return;
  throw retryLater(
    429,
    "rate_limited",
    (retryAfter) =>
      `Cannot serve this request: at most ${limit} calls per ${windowSeconds} s; retry in ${retryAfter} s`,
    decision.retry_after_seconds,
    { limit, windowSeconds },
  );
}
