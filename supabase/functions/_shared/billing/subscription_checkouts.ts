/**
 * A user's one subscription checkout (`public.subscription_checkouts`): two
 * open subscription checkouts could both be paid, which would make two
 * subscriptions, so a user has at most one open session, stored with its
 * price, url and expiry.
 *
 * - A stored session for the same price with more than 10 minutes left is
 *   read at the processor (one call) and, while open, answered again —
 *   whatever redirects the new call asked for: the first call's redirects
 *   apply for the session's lifetime.
 * - Otherwise a new session is created, with the idempotency key
 *   `checkout:<user>:<price>:<digest of the redirects>:<session it replaces
 *   or "first">`, so a double click gets the same session. An open stored
 *   session is expired at the processor before that.
 * - The new session is stored only if nobody changed the user's row
 *   meanwhile (it still holds the replaced session, or already holds ours);
 *   a session that lost is expired again by the caller.
 *
 * No transaction is open while the processor is called.
 *
 * @module
 */
import type Stripe from "stripe";
import type { Context } from "../platform/context.ts";
import type { Sql } from "../platform/db.ts";
import { HttpError } from "../platform/errors.ts";
import { sha256Hex } from "../lib/hex.ts";
import { isRefusal, orNullIfMissing } from "../platform/payproc_calls.ts";
import { payprocFor } from "../platform/payproc.ts";

/** A stored session is answered again only while it has more than this left. */
export const REUSE_MARGIN_MS = 10 * 60_000;

/** A user's stored subscription checkout. */
export interface StoredCheckout {
  sessionId: string;
  priceId: string;
  url: string;
  expiresAt: Date;
}

/** Where a subscription checkout returns to. */
export interface CheckoutRedirects {
  successUrl: string;
  cancelUrl: string;
}

/** What the stored checkout is worth to a call for a price. */
export interface StoredSessionCheck {
  /** The url to answer again (the stored session is open, for the price, not about to expire), or null. */
  url: string | null;
  /** The stored session as read at the processor: undefined when not read, null when missing. */
  read: Stripe.Checkout.Session | null | undefined;
}

/** The user's stored subscription checkout, or null. */
export async function storedCheckout(sql: Sql, userId: string): Promise<StoredCheckout | null> {
  const row = await sql.maybeOne<{
    payproc_session_id: string;
    price_id: string;
    url: string;
    expires_at: Date;
  }>(
    `select payproc_session_id, price_id, url, expires_at
     from public.subscription_checkouts where user_id = $1`,
    [userId],
  );
  return row && {
    sessionId: row.payproc_session_id,
    priceId: row.price_id,
    url: row.url,
    expiresAt: row.expires_at,
  };
}

/**
 * Whether `stored` may be answered again for `priceId`: it is for that
 * price and expires more than {@linkcode REUSE_MARGIN_MS} after `now`. If
 * so, the session is read at the processor (one call) and its url is
 * answered while it is open.
 */
export async function checkStoredSession(
  ctx: Context,
  stored: StoredCheckout | null,
  priceId: string,
): Promise<StoredSessionCheck> {
  if (
    !stored || stored.priceId !== priceId ||
    stored.expiresAt.getTime() - ctx.now().getTime() <= REUSE_MARGIN_MS
  ) {
    return { url: null, read: undefined };
  }
  const payproc = await payprocFor(ctx);
  const read = await orNullIfMissing(payproc.checkout.sessions.retrieve(stored.sessionId));
  return { url: read?.status === "open" && read.url ? read.url : null, read };
}

/**
 * Makes sure session `sessionId` can no longer be paid: an open session is
 * expired at the processor; a complete, expired or missing one is left as it
 * is (whether a completed checkout still pays is the subscription checks'
 * call). `read` is the session as already read by this call, if it was.
 * Answers "completed" when the processor refused to expire it because it
 * was completed in between: the user is paying.
 */
export async function closeSession(
  ctx: Context,
  sessionId: string,
  read?: Stripe.Checkout.Session | null,
): Promise<"closed" | "completed"> {
  const payproc = await payprocFor(ctx);
  const session = read !== undefined
    ? read
    : await orNullIfMissing(payproc.checkout.sessions.retrieve(sessionId));
  if (session?.status !== "open") return "closed";
  try {
    await payproc.checkout.sessions.expire(sessionId);
    return "closed";
  } catch (error) {
    if (!isRefusal(error)) throw error;
    // Refused: it is no longer open. Completed, or expired on its own?
    const now = await orNullIfMissing(payproc.checkout.sessions.retrieve(sessionId));
    return now?.status === "complete" ? "completed" : "closed";
  }
}

/** What a new subscription checkout is for. */
export interface NewCheckout {
  userId: string;
  customerId: string;
  priceId: string;
  redirects: CheckoutRedirects;
  /** The stored session it replaces, or null for the user's first. */
  replaces: string | null;
}

/** Creates a subscription-mode session at the processor (idempotent: see the module doc). */
export async function createSession(ctx: Context, checkout: NewCheckout): Promise<StoredCheckout> {
  const { userId, priceId, redirects } = checkout;
  const payproc = await payprocFor(ctx);
  const session = await payproc.checkout.sessions.create(
    {
      mode: "subscription",
      customer: checkout.customerId,
      client_reference_id: userId,
      line_items: [{ price: priceId, quantity: 1 }],
      success_url: redirects.successUrl,
      cancel_url: redirects.cancelUrl,
      metadata: { user_id: userId },
      subscription_data: { metadata: { user_id: userId } },
    },
    { idempotencyKey: await checkoutKey(checkout) },
  );
  if (!session.url) {
    throw new HttpError(502, "upstream_rejected", "The payment processor returned no checkout url");
  }
  return {
    sessionId: session.id,
    priceId,
    url: session.url,
    expiresAt: new Date(session.expires_at * 1000),
  };
}

/** `checkout:<user>:<price>:<24-hex digest of the redirects>:<replaced session or "first">`. */
async function checkoutKey({ userId, priceId, redirects, replaces }: NewCheckout) {
  const digest = (await sha256Hex(`${redirects.successUrl}\n${redirects.cancelUrl}`)).slice(0, 24);
  return `checkout:${userId}:${priceId}:${digest}:${replaces ?? "first"}`;
}

/**
 * Stores `checkout` as the user's, unless the row changed since it was read:
 * it must still hold `replaces` (no row at all when null), or already hold
 * `checkout` (a concurrent call that got the same session). False when
 * another session won; the caller then closes its own.
 */
export async function storeCheckout(
  sql: Sql,
  userId: string,
  checkout: StoredCheckout,
  replaces: string | null,
): Promise<boolean> {
  const stored = await sql.maybeOne(
    `insert into public.subscription_checkouts as c
       (user_id, payproc_session_id, price_id, url, expires_at)
     values ($1, $2, $3, $4, $5)
     on conflict (user_id) do update
       set payproc_session_id = excluded.payproc_session_id, price_id = excluded.price_id,
           url = excluded.url, expires_at = excluded.expires_at
       where c.payproc_session_id = $6 or c.payproc_session_id = excluded.payproc_session_id
     returning user_id`,
    [userId, checkout.sessionId, checkout.priceId, checkout.url, checkout.expiresAt, replaces],
  );
  return stored !== null;
}
