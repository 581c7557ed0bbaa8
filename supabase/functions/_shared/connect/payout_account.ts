/**
 * A seller's payout account: the connected (Express) account at the payment
 * processor that receives their payouts, mirrored in `connect_accounts` and
 * on their profile. Used by the onboarding functions (connect-onboarding-link,
 * connect-dashboard-link, refresh-kyc-status) and by deal payouts.
 *
 * Every call reads the processor first, with no transaction, lock or pooled
 * connection held, then writes what it read through `applyConnectAccount`
 * (the one write of an account, with its seller-verification notices) in a
 * short transaction whose guards make a stale or repeated write a no-op.
 *
 * One account per user: created with the idempotency key
 * `connect-account:<userId>` (concurrent or repeated creations get the same
 * account back) and stored under `connect_accounts`' unique `user_id`. The
 * account carries our `user_id` metadata, so were the first write lost, the
 * Connect webhook's `account.updated` still links it to its user.
 *
 * A stored account the processor no longer has is a 409 `conflict` naming
 * it, never silently replaced: the usual cause of every account "missing" at
 * once is configuration (a `PAYPROC_SECRET_KEY` of another platform or
 * mode), where re-creating would mint a new account for each seller who
 * calls and re-point their future payouts to it, stranding the old
 * accounts' balances and verified details. A 409 writes nothing and shows;
 * support checks the key, and only if the account really is gone removes the
 * user's `connect_accounts` row, after which onboarding creates a new one.
 *
 * @module
 */
import type Stripe from "stripe";
import type { KycSummary } from "../../../../shared/schemas.ts";
import { applyConnectAccount, kycSummary } from "./connect_accounts.ts";
import { isMissing } from "../platform/payproc_calls.ts";
import type { Context } from "../platform/context.ts";
import type { Sql } from "../platform/db.ts";
import { conflict, type HttpError, notFound } from "../platform/errors.ts";
import { isPayprocError, payprocFor } from "../platform/payproc.ts";

/** A user's payout account as just read from the processor. */
export interface PayoutAccount {
  /** The processor's connected account id (`acct_…`). */
  accountId: string;
  /** Whether the seller finished the onboarding form (`details_submitted`). */
  detailsSubmitted: boolean;
  /** The refresh-kyc-status summary of the account. */
  summary: KycSummary;
}

/** The idempotency key of creating `userId`'s connected account. */
function idempotencyKey(userId: string): string {
  return `connect-account:${userId}`;
}

/**
 * Re-reads the user's connected account from the processor (outside any
 * transaction) and mirrors it with `applyConnectAccount` in a short
 * transaction; null when the user has no `connect_accounts` row. 409
 * `conflict` (`details.accountId`) when the processor no longer has the
 * stored account (see the module doc); processor failures throw the SDK's
 * errors, which the factory answers 503/502.
 */
export async function refreshPayoutAccount(
  ctx: Context,
  userId: string,
): Promise<PayoutAccount | null> {
  // The row can change between the read and the write (a concurrent
  // onboarding, an admin repair): then read again what is stored now.
  for (let attempt = 0; attempt < 3; attempt++) {
    const accountId = await storedAccountId(ctx.db, userId);
    if (accountId === null) return null;
    const payproc = await payprocFor(ctx);
    const readAt = new Date();
    const account = await readAccount(payproc, accountId);
    if (!account) throw accountGone(ctx, userId, accountId);
    const written = await ctx.db.tx((sql) =>
      applyConnectAccount(sql, account, { readAt, notify: ctx })
    );
    // "stale": a newer read of this account is already stored; ours is only
    // moments older, so it still shows the account as it is.
    const mirrored = written.result === "changed" || written.result === "unchanged" ||
      written.result === "stale";
    if (mirrored && written.userId === userId) return payoutAccount(account);
  }
  throw conflict(
    "Cannot read your payout account: its record keeps changing; try again",
    { userId },
  );
}

/**
 * 409 `conflict` for a user without a payout account, naming the way to get
 * one (`details.next`); `cannot` says what could not be done.
 */
export function noPayoutAccount(cannot: string): HttpError {
  return conflict(`${cannot}: there is no payout account yet; start onboarding first`, {
    next: "connect-onboarding-link",
    reason: "no_payout_account",
  });
}

/** The user's payout account re-read ({@linkcode refreshPayoutAccount}); {@linkcode noPayoutAccount} without one. */
export async function requirePayoutAccount(
  ctx: Context,
  userId: string,
  cannot: string,
): Promise<PayoutAccount> {
  const account = await refreshPayoutAccount(ctx, userId);
  if (!account) throw noPayoutAccount(cannot);
  return account;
}

/**
 * The user's account, created once (Express, transfers capability,
 * `metadata.user_id`, e-mail) with idempotency key `connect-account:<userId>`
 * and stored; never a second one for the same user, even for concurrent
 * calls. An existing account is re-read as {@linkcode refreshPayoutAccount}
 * does (and is 409 when the processor no longer has it).
 */
export async function ensurePayoutAccount(
  ctx: Context,
  user: { id: string; email: string | null },
): Promise<PayoutAccount> {
  const existing = await refreshPayoutAccount(ctx, user.id);
  if (existing) return existing;
  const account = await createAccount(ctx, user);
  // The answer may be a replay of the first creation (same key): it shows the
  // account as it was then, so that is when it was read.
  const readAt = new Date(account.created ? account.created * 1000 : Date.now());
  const written = await ctx.db.tx((sql) =>
    applyConnectAccount(sql, account, { readAt, notify: ctx })
  );
  if (written.result === "changed" || written.result === "unchanged") {
    if (written.userId === user.id) return payoutAccount(account);
  }
  if (written.result === "unlinked") {
    throw notFound(`Cannot set up a payout account: user "${user.id}" does not exist`);
  }
  // Another write stored the user's account first ("kept", "stale"): answer
  // what is stored, read afresh.
  const stored = await refreshPayoutAccount(ctx, user.id);
  if (stored) return stored;
  throw conflict("Cannot set up your payout account: its record keeps changing; try again", {
    userId: user.id,
  });
}

/** The account id stored for the user, if any. */
async function storedAccountId(sql: Sql, userId: string): Promise<string | null> {
  const row = await sql.maybeOne<{ payproc_account_id: string }>(
    "select payproc_account_id from public.connect_accounts where user_id = $1",
    [userId],
  );
  return row?.payproc_account_id ?? null;
}

/** The account, or null when the processor says it does not exist (or was deleted). */
async function readAccount(payproc: Stripe, accountId: string): Promise<Stripe.Account | null> {
  try {
    const account = await payproc.accounts.retrieve(accountId);
    return (account as { deleted?: boolean }).deleted ? null : account;
  } catch (error) {
    if (isMissing(error)) return null;
    throw error;
  }
}

/** How long to wait for a concurrent creation holding the idempotency key, per attempt. */
const KEY_IN_USE_BACKOFF_MS = 250;

/**
 * Creates the user's account, or gets the one a previous call created with
 * the same key. While a concurrent call still holds the key the processor
 * answers 409 (`idempotency_key_in_use`); the SDK retries once, then so do
 * we, until that call's answer can be replayed.
 */
async function createAccount(
  ctx: Context,
  user: { id: string; email: string | null },
): Promise<Stripe.Account> {
  const payproc = await payprocFor(ctx);
  const params: Stripe.AccountCreateParams = {
    type: "express",
    capabilities: { transfers: { requested: true } },
    metadata: { user_id: user.id },
  };
  if (user.email) params.email = user.email;
  for (let attempt = 1;; attempt++) {
    try {
      return await payproc.accounts.create(params, {
        idempotencyKey: idempotencyKey(user.id),
      });
    } catch (error) {
      if (attempt >= 3 || !isPayprocError(error) || error.statusCode !== 409) throw error;
      await new Promise((resolve) => setTimeout(resolve, KEY_IN_USE_BACKOFF_MS * attempt));
    }
  }
}

function payoutAccount(account: Stripe.Account): PayoutAccount {
  return {
    accountId: account.id,
    detailsSubmitted: account.details_submitted ?? false,
    summary: kycSummary(account),
  };
}

function accountGone(ctx: Context, userId: string, accountId: string) {
  ctx.log.warn("stored payout account missing at the processor", {
    user_id: userId,
    account_id: accountId,
  });
  return conflict(
    `Cannot use your payout account "${accountId}": the payment processor no longer has it; contact support`,
    { accountId },
  );
}
