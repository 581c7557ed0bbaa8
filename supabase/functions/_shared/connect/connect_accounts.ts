/**
 * Connected (payout) accounts: the KYC summary of a processor account — the
 * same object refresh-kyc-status answers — its derived `kyc_status`, and the
 * one write of both into `connect_accounts` and the seller's `profiles` row.
 *
 * @module
 */
import type Stripe from "stripe";
import type { KycSummary } from "../../../../shared/schemas.ts";
import type { Context } from "../platform/context.ts";
import type { Sql } from "../platform/db.ts";
import { notifySellerVerification } from "./seller_verification.ts";
import { existingUserId } from "../billing/users.ts";

/** `connect_accounts.kyc_status` (state machine in the migration). */
export type KycStatus = "pending" | "restricted" | "verified" | "disabled";

/** The KYC summary of an account. */
export function kycSummary(account: Stripe.Account): KycSummary {
  const requirements = account.requirements;
  return {
    currently_due_count: requirements?.currently_due?.length ?? 0,
    past_due_count: requirements?.past_due?.length ?? 0,
    disabled_reason: requirements?.disabled_reason ?? "",
    payouts_enabled: account.payouts_enabled ?? false,
  };
}

/** The account's KYC status. */
export function kycStatus(account: Stripe.Account): KycStatus {
  const summary = kycSummary(account);
  if (summary.disabled_reason.startsWith("rejected")) return "disabled";
  if (!account.details_submitted) return "pending";
  if (
    summary.payouts_enabled && summary.currently_due_count === 0 && summary.past_due_count === 0
  ) {
    return "verified";
  }
  return "restricted";
}

/** When the account was read (see `SyncOptions` of subscriptions), and who hears of changes. */
export interface AccountSyncOptions {
  /** When it was read from the processor (taken before the request). */
  readAt: Date;
  /** `created` of the event being applied (Unix seconds), if any. */
  eventCreated?: number;
  /**
   * The request whose outbox carries the seller verification e-mail when
   * the write switches payouts on or off (`docs/deals.md#seller-payout-accounts`); the in-app notice is
   * written in `sql`'s transaction.
   */
  notify: Context;
}

/** What {@linkcode applyConnectAccount} did. */
export type AccountSyncResult =
  | { result: "changed" | "unchanged"; userId: string; summary: KycSummary }
  | { result: "unlinked" | "kept" | "stale"; userId: string | null; reason: string };

/**
 * Mirrors `account` into the seller's `connect_accounts` row and profile.
 * The seller is the row holding the account, else the user named by the
 * account's `user_id` metadata when that user has no other account.
 */
export async function applyConnectAccount(
  sql: Sql,
  account: Stripe.Account,
  options: AccountSyncOptions,
): Promise<AccountSyncResult> {
  const byAccount = await sql.maybeOne<AccountRow>(
    `select user_id, payproc_account_id, payouts_enabled, payproc_synced_at, payproc_event_created
     from public.connect_accounts where payproc_account_id = $1 for update`,
    [account.id],
  );
  let userId = byAccount?.user_id ?? null;
  if (userId === null) {
    userId = await existingUserId(sql, account.metadata?.user_id);
    if (userId === null) {
      return { result: "unlinked", userId: null, reason: "no user is linked to the account" };
    }
    const other = await sql.maybeOne<AccountRow>(
      "select payproc_account_id from public.connect_accounts where user_id = $1",
      [userId],
    );
    if (other) return { result: "kept", userId, reason: "the user has another account" };
  } else if (isStale(byAccount, options)) {
    return { result: "stale", userId, reason: "a newer state is already stored" };
  }
  const summary = kycSummary(account);
  const requirements = account.requirements;
  const changed = await sql.maybeOne(UPSERT, [
    userId,
    account.id,
    kycStatus(account),
    account.details_submitted ?? false,
    account.charges_enabled ?? false,
    summary.payouts_enabled,
    summary.currently_due_count,
    summary.past_due_count,
    requirements?.eventually_due?.length ?? 0,
    summary.disabled_reason,
    JSON.stringify({
      currently_due: requirements?.currently_due ?? [],
      past_due: requirements?.past_due ?? [],
      eventually_due: requirements?.eventually_due ?? [],
      pending_verification: requirements?.pending_verification ?? [],
    }),
    options.readAt,
    options.eventCreated === undefined ? null : new Date(options.eventCreated * 1000),
  ]);
  if (changed) {
    await sql.query(COPY_TO_PROFILE, [userId]);
    // Once per change: the row is locked (for update above, or the insert's
    // own lock), so a replayed or concurrent event finds it already changed.
    if ((byAccount?.payouts_enabled ?? false) !== summary.payouts_enabled) {
      await notifySellerVerification(options.notify, sql, userId, summary, options.readAt);
    }
  }
  return { result: changed ? "changed" : "unchanged", userId, summary };
}

interface AccountRow {
  user_id: string;
  payproc_account_id: string;
  payouts_enabled?: boolean;
  payproc_synced_at: Date | null;
  payproc_event_created: Date | null;
}

function isStale(row: AccountRow | null, options: AccountSyncOptions): boolean {
  return row?.payproc_synced_at != null && options.readAt < row.payproc_synced_at;
}

const UPSERT = `
  insert into public.connect_accounts as a (
    user_id, payproc_account_id, kyc_status, details_submitted, charges_enabled,
    payouts_enabled, currently_due_count, past_due_count, eventually_due_count,
    disabled_reason, requirements, payproc_synced_at, payproc_event_created
  ) values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11::jsonb, $12, $13)
  on conflict (user_id) do update set
    kyc_status = excluded.kyc_status,
    details_submitted = excluded.details_submitted,
    charges_enabled = excluded.charges_enabled,
    payouts_enabled = excluded.payouts_enabled,
    currently_due_count = excluded.currently_due_count,
    past_due_count = excluded.past_due_count,
    eventually_due_count = excluded.eventually_due_count,
    disabled_reason = excluded.disabled_reason,
    requirements = excluded.requirements,
    payproc_synced_at = greatest(a.payproc_synced_at, excluded.payproc_synced_at),
    payproc_event_created = greatest(a.payproc_event_created, excluded.payproc_event_created)
  where a.payproc_account_id = excluded.payproc_account_id
    and (a.kyc_status, a.details_submitted, a.charges_enabled, a.payouts_enabled,
         a.currently_due_count, a.past_due_count, a.eventually_due_count, a.disabled_reason,
         a.requirements)
      is distinct from
        (excluded.kyc_status, excluded.details_submitted, excluded.charges_enabled,
         excluded.payouts_enabled, excluded.currently_due_count, excluded.past_due_count,
         excluded.eventually_due_count, excluded.disabled_reason, excluded.requirements)
  returning a.id`;

const COPY_TO_PROFILE = `
  update public.profiles p set
    payproc_account_id = a.payproc_account_id,
    kyc_status = a.kyc_status,
    kyc_currently_due_count = a.currently_due_count,
    kyc_past_due_count = a.past_due_count,
    kyc_disabled_reason = a.disabled_reason,
    payouts_enabled = a.payouts_enabled,
    kyc_updated_at = now()
  from public.connect_accounts a
  where a.user_id = $1 and p.id = a.user_id`;
