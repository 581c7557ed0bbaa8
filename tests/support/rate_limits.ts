/**
 * The check every rate-limited function's tests make: the calls within the
 * limit are served, the next one is refused with 429 before it costs
 * anything upstream.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { Invocation } from "./runtime.ts";

/** A refusal's body. */
interface Refusal {
  error?: { code: string; details?: Record<string, unknown> };
}

/**
 * Makes `limit` calls with `call` (each must answer 200), then one more,
 * which must answer 429 `rate_limited` with `Retry-After` (and the same
 * seconds, the limit and the window in `details`) and leave `upstream()` —
 * a count of requests at a double — unchanged.
 */
export async function assertRateLimited(
  { limit, windowSeconds }: { limit: number; windowSeconds: number },
  call: () => Promise<Invocation<unknown>>,
  upstream: () => number,
): Promise<void> {
  for (let i = 0; i < limit; i++) {
    const res = await call();
    assert.equal(res.status, 200, `call ${i + 1} of ${limit}: ${JSON.stringify(res.body)}`);
  }
  const before = upstream();
  const refused = await call() as Invocation<Refusal>;
  assert.equal(refused.status, 429, JSON.stringify(refused.body));
  assert.equal(refused.body.error?.code, "rate_limited");
  const retryAfter = Number(refused.headers.get("retry-after"));
  assert.ok(retryAfter >= 1 && retryAfter <= windowSeconds, `Retry-After ${retryAfter}`);
  assert.deepEqual(refused.body.error?.details, { limit, windowSeconds, retryAfter });
  assert.equal(upstream(), before, "the refused call made no upstream request");
}
