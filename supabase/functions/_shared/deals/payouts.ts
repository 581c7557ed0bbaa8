/**
 * Transfers to the seller, from the deal's charge (`source_transaction`;
 * a repayout from the platform's balance, where the reversal put it):
 * the **payout** at release (cash at close − commission; amount −
 * commission without a holdback), the **holdback** later, and a
 * **repayout** of what was reversed for a chargeback the platform then won.
 * Each is one settlement row of its kind with idempotency key
 * `<kind>:<dealId>` (the money plan is in the escrow release migration).
 *
 * 1. Read: the deal, and the seller's payout account fresh from the
 *    processor (payouts enabled, nothing past due), outside any transaction.
 * 2. Claim, in a short transaction under the deal's row lock: the row is
 *    written `pending` before the processor is called, for the amount
 *    `public.deal_transfer_amount()` answers. A refund claimed first wins
 *    (409 here), and so does this claim over a later refund.
 * 3. Transfer, outside any transaction. A pending row found by the claim
 *    (another call running, or one that crashed) is resumed: the processor
 *    is asked first whether the transfer exists, then asked again with the
 *    same key — never a second transfer. Right before the processor is asked
 *    to transfer, the deal is checked again under its lock: a chargeback, a
 *    dispute case or a refund that came after the claim stops it, the row
 *    `failed` (no money moved), 409.
 * 4. Finish, in a short transaction: the row `succeeded` with the transfer
 *    id; a payout with a holdback to come stamps `holdback_release_at` and
 *    leaves the deal in handover, else the deal is `completed`; the notices.
 *    A chargeback that opened in the moment between the last check and the
 *    transfer leaves the deal `disputed`: the transfer is recorded on it and
 *    the admins hear of it; so does a refund that settled meanwhile (the
 *    deal stays `refunded`, no notice to the parties; `late_payouts.ts`).
 *
 * Who asks ({@linkcode TransferOrigin}) decides what is due: an admin any
 * time (a payout before the handover is complete with `force`), the
 * deal-deadlines job only once the inspection window (or the holdback's
 * date) has passed, a resolved dispute case for its outcome. Nobody while a
 * case is open.
 *
 * @module
 */
import type Stripe from "stripe";
import { isInProgress, isRefusal } from "../platform/payproc_calls.ts";
import { noPayoutAccount, requirePayoutAccount } from "../connect/payout_account.ts";
import type { Context } from "../platform/context.ts";
import type { Sql } from "../platform/db.ts";
import { conflict, notFound } from "../platform/errors.ts";
import { processorCurrency, toMinorUnits } from "../lib/money.ts";
import { ESCROW_EMAIL_TYPES, holdbackReleasedNotice } from "../email/templates/escrow_release.ts";
import {
  type DealRow,
  findDeal,
  recordDealEvent,
  transferGroupOf,
  transitionDeal,
} from "./deal_rows.ts";
import { recordPayoutDuringDispute } from "./late_disputes.ts";
import { recordPayoutAfterRefund } from "./late_payouts.ts";
import { queuePaymentNotices, queueSideNotices } from "./payment_notices.ts";
import {
  type DealSettlements,
  holdbackOwed,
  recordRefusal,
  releaseHoldOf,
  SETTLEMENT_COLUMNS,
  type SettlementAnswer,
  settlementAnswer,
  settlementKey,
  type SettlementRow,
  settlementsOf,
  type TransferKind,
} from "./settlements.ts";
import { payprocFor } from "../platform/payproc.ts";

/** The processor holds a charge's funds 90 days; a holdback is paid within this many of funding. */
export const HOLDBACK_LIMIT_DAYS = 80;

/**
 * Who asks for a transfer: `admin` (release-deal-payout), `automatic` (the
 * deal-deadlines job, once due), `case` (a resolved dispute case's outcome).
 */
export type TransferOrigin = "admin" | "automatic" | "case";

/** A transfer request. */
export interface TransferRequest {
  dealId: string;
  kind: TransferKind;
  origin: TransferOrigin;
  /** Admin payout before the handover is complete (from `funded` or `in_handover`). */
  force?: boolean;
  /** Who asks; null for the job. */
  actor: string | null;
}

/** A payout request (release-deal-payout). */
export interface PayoutRequest {
  dealId: string;
  /** Release before the handover is complete (from `funded` or `in_handover`). */
  force: boolean;
  /** The admin asking. */
  actor: string;
}

/** Releases the deal's payout once, as an admin asks; see the module doc. */
export function releasePayout(ctx: Context, request: PayoutRequest): Promise<SettlementAnswer> {
  return transferToSeller(ctx, { ...request, kind: "payout", origin: "admin" });
}

/** Makes the deal's transfer of `request.kind` once; see the module doc. */
export async function transferToSeller(
  ctx: Context,
  request: TransferRequest,
): Promise<SettlementAnswer> {
  const deal = await findDeal(ctx.db, request.dealId);
  if (!deal) throw notFound(`Deal "${request.dealId}" does not exist`);
  const before = await settlementsOf(ctx.db, deal.id);
  const existing = before[request.kind];
  if (existing?.status === "succeeded" || existing?.status === "reversed") {
    return await settlementAnswer(ctx.db, deal.id);
  }
  if (existing?.status !== "pending") {
    await refuseUnlessDue(ctx, ctx.db, deal, before, request);
    await requirePayableAccount(ctx, deal.seller_id, request.kind);
  }
  const { row, resumed } = await ctx.db.tx((sql) => claimTransfer(ctx, sql, request));
  if (row.status === "succeeded" || row.status === "reversed") {
    return await settlementAnswer(ctx.db, deal.id);
  }
  const transfer = await makeTransfer(ctx, deal, row, resumed, request);
  return await ctx.db.tx(async (sql) => {
    await finishTransfer(ctx, sql, row, transfer.id, request.actor);
    return await settlementAnswer(sql, deal.id);
  });
}

/** What the refusals say the transfer is. */
const NAMES: Record<TransferKind, string> = {
  payout: "release the payout",
  holdback: "release the holdback",
  repayout: "pay the seller again",
};

/** 409 naming the reason unless the transfer is due now (state, refunds, cases, dates). */
async function refuseUnlessDue(
  ctx: Context,
  sql: Sql,
  deal: DealRow,
  settlements: DealSettlements,
  request: TransferRequest,
): Promise<void> {
  const cannot = `Cannot ${NAMES[request.kind]}`;
  const { refund, payout, partial_refund } = settlements;
  if (refund && refund.status !== "failed") {
    throw conflict(`${cannot}: the deal's payment is being or was refunded`, {
      reason: "refunded",
    });
  }
  if (request.kind === "repayout") {
    if (deal.status !== "completed") {
      throw conflict(`${cannot}: the deal is ${deal.status.replace("_", " ")}`, {
        reason: "deal_not_payable",
        status: deal.status,
      });
    }
    return;
  }
  const hold = await releaseHoldOf(sql, deal.id);
  if (hold === "case_open") {
    throw conflict(
      `${cannot}: a dispute case is open on this deal; resolve it with resolve-deal-case`,
      { reason: "case_open" },
    );
  }
  if (hold === "case_settling" && request.origin !== "case") {
    throw conflict(`${cannot}: a resolved dispute case is still moving its money`, {
      reason: "case_settling",
    });
  }
  if (partial_refund?.status === "pending") {
    throw conflict(`${cannot}: a partial refund is being made first; try again shortly`, {
      reason: "in_progress",
    });
  }
  if (request.kind === "holdback") {
    refuseUnlessHoldbackDue(ctx, deal, payout, request, cannot);
    return;
  }
  refuseUnlessPayable(ctx, deal, request, cannot);
}

/** The payout's state rule (admin: once the handover is complete, or `force`; the job: once the window ended). */
function refuseUnlessPayable(
  ctx: Context,
  deal: DealRow,
  request: TransferRequest,
  cannot: string,
): void {
  const force = request.force === true || request.origin === "case";
  if (deal.status === "in_handover" && deal.handover_completed_at) {
    if (request.origin !== "automatic") return;
    if (deal.inspection_ends_at && deal.inspection_ends_at <= ctx.now()) return;
    throw conflict(`${cannot}: the buyer's inspection window is still open`, {
      reason: "inspection_open",
      inspectionEndsAt: deal.inspection_ends_at?.toISOString() ?? null,
    });
  }
  if (deal.status === "in_handover" && force) return;
  if (deal.status === "funded" && force) return;
  if (deal.status === "in_handover") {
    throw conflict(
      `${cannot}: the buyer has not confirmed the handover yet; pass force: true to pay out now`,
      { reason: "handover_not_complete", status: deal.status },
    );
  }
  if (deal.status === "funded") {
    throw conflict(`${cannot}: the handover has not started; pass force: true to pay out now`, {
      reason: "handover_not_started",
      status: deal.status,
    });
  }
  throw conflict(`${cannot} of a deal that is ${deal.status.replace("_", " ")}`, {
    reason: deal.status === "disputed" ? "disputed" : "deal_not_payable",
    status: deal.status,
  });
}

/** The holdback's rule: after the payout, in handover, and (for the job) once its date passed. */
function refuseUnlessHoldbackDue(
  ctx: Context,
  deal: DealRow,
  payout: SettlementRow | null,
  request: TransferRequest,
  cannot: string,
): void {
  if (deal.status !== "in_handover") {
    throw conflict(`${cannot} of a deal that is ${deal.status.replace("_", " ")}`, {
      reason: deal.status === "disputed" ? "disputed" : "deal_not_payable",
      status: deal.status,
    });
  }
  if (payout?.status !== "succeeded") {
    throw conflict(`${cannot}: the payout has not been released yet`, {
      reason: "payout_not_released",
    });
  }
  if (request.origin !== "automatic") return;
  if (deal.holdback_release_at && deal.holdback_release_at <= ctx.now()) return;
  throw conflict(`${cannot}: it is held until ${deal.holdback_release_at?.toISOString()}`, {
    reason: "holdback_not_due",
    holdbackReleaseAt: deal.holdback_release_at?.toISOString() ?? null,
  });
}

/** 409 naming the reason unless the seller's account can receive payouts (read fresh). */
async function requirePayableAccount(
  ctx: Context,
  sellerId: string,
  kind: TransferKind,
): Promise<void> {
  const cannot = `Cannot ${NAMES[kind]}`;
  const account = await requirePayoutAccount(ctx, sellerId, cannot);
  if (!account.summary.payouts_enabled) {
    throw conflict(`${cannot}: payouts are disabled on the seller's account`, {
      reason: "payouts_disabled",
      disabled_reason: account.summary.disabled_reason,
    });
  }
  if (account.summary.past_due_count > 0) {
    throw conflict(`${cannot}: the seller's account has requirements past due`, {
      reason: "requirements_past_due",
      past_due_count: account.summary.past_due_count,
    });
  }
}

/**
 * Under the deal's lock: re-checks what the read saw and writes the row
 * `pending` (a new one, the next attempt of a refused one, or the pending
 * one found, which is then `resumed`).
 */
async function claimTransfer(
  ctx: Context,
  sql: Sql,
  request: TransferRequest,
): Promise<{ row: SettlementRow; resumed: boolean }> {
  const deal = (await findDeal(sql, request.dealId, { lock: true }))!;
  const settlements = await settlementsOf(sql, deal.id, { lock: true });
  const existing = settlements[request.kind];
  if (existing && existing.status !== "failed") return { row: existing, resumed: true };
  await refuseUnlessDue(ctx, sql, deal, settlements, request);
  const cannot = `Cannot ${NAMES[request.kind]}`;
  if (!deal.payproc_charge_id || deal.commission === null) {
    throw conflict(`${cannot}: the deal has no captured payment`, { reason: "no_payment" });
  }
  const { amount } = await sql.one<{ amount: string | null }>(
    "select public.deal_transfer_amount($1, $2)::text as amount",
    [deal.id, request.kind],
  );
  if (amount === null) {
    throw conflict(`${cannot}: nothing is owed to the seller`, { reason: "nothing_owed" });
  }
  const account = await sql.maybeOne<{ payproc_account_id: string }>(
    "select payproc_account_id from public.connect_accounts where user_id = $1",
    [deal.seller_id],
  );
  if (!account) throw noPayoutAccount(cannot);
  const row = await sql.one<SettlementRow>(
    `insert into public.deal_settlements as s
       (deal_id, kind, amount, currency, destination_account, requested_by)
     select d.id, $2, $3::numeric, d.currency, $4, $5
     from public.deals d where d.id = $1
     on conflict (deal_id, kind) do update set
       status = 'pending', attempt = s.attempt + 1, amount = excluded.amount,
       destination_account = excluded.destination_account, requested_by = excluded.requested_by
     where s.status = 'failed'
     returning ${SETTLEMENT_COLUMNS}`,
    [deal.id, request.kind, amount, account.payproc_account_id, request.actor],
  );
  return { row, resumed: false };
}

/**
 * The transfer: found at the processor when resuming, or on a later attempt
 * (an attempt stopped before its transfer is marked failed, but a call
 * resuming it at that moment may still have made one: the next attempt
 * takes a new key, so it looks first), else created once.
 */
async function makeTransfer(
  ctx: Context,
  deal: DealRow,
  row: SettlementRow,
  resumed: boolean,
  request: TransferRequest,
): Promise<Stripe.Transfer> {
  const payproc = await payprocFor(ctx);
  const group = transferGroupOf(deal.id);
  if (resumed || row.attempt > 1) {
    const existing = await payproc.transfers.list({ transfer_group: group, limit: 20 });
    const made = existing.data.find((t) =>
      t.metadata?.deal_id === deal.id && t.metadata?.kind === row.kind
    );
    if (made) return made;
  }
  await recheckBeforeTransfer(ctx, row, request);
  try {
    return await payproc.transfers.create(
      {
        amount: toMinorUnits(row.amount, row.currency),
        currency: processorCurrency(row.currency),
        destination: row.destination_account!,
        // A repayout pays back what a reversal returned to the platform's
        // balance; the charge's own funds went with the first transfer.
        ...(row.kind === "repayout" ? {} : { source_transaction: deal.payproc_charge_id! }),
        transfer_group: group,
        metadata: { deal_id: deal.id, kind: row.kind },
      },
      { idempotencyKey: settlementKey(row) },
    );
  } catch (error) {
    if (isInProgress(error)) {
      throw conflict(`Cannot ${NAMES[request.kind]} now: it is being made; try again shortly`, {
        reason: "in_progress",
      });
    }
    if (isRefusal(error)) {
      await recordRefusal(ctx.db, row, error.message);
    }
    throw error;
  }
}

/**
 * Under the deal's lock, right before the transfer: the deal may still be
 * paid (no chargeback, no refund, no case opened since the claim).
 * Otherwise the claim is released as `failed` — no money moved, so a later
 * attempt takes a new key — and the caller gets 409 naming why.
 */
async function recheckBeforeTransfer(
  ctx: Context,
  row: SettlementRow,
  request: TransferRequest,
): Promise<void> {
  const stopped = await ctx.db.tx(async (sql) => {
    const deal = (await findDeal(sql, row.deal_id, { lock: true }))!;
    const why = await stopReason(sql, deal, request);
    if (!why) return null;
    await recordRefusal(sql, row, `Stopped before the transfer: ${why.text}`);
    return why;
  });
  if (stopped) {
    throw conflict(`Cannot ${NAMES[request.kind]}: ${stopped.text}`, {
      reason: stopped.reason,
      status: stopped.status,
    });
  }
}

/** Why the transfer may not go out now, if it may not. */
async function stopReason(
  sql: Sql,
  deal: DealRow,
  request: TransferRequest,
): Promise<{ text: string; reason: string; status: string } | null> {
  const status = deal.status;
  const expected = request.kind === "repayout"
    ? ["completed"]
    : request.kind === "holdback"
    ? ["in_handover"]
    : ["funded", "in_handover"];
  if (!expected.includes(status)) {
    return status === "disputed"
      ? { text: "the buyer's bank opened a dispute", reason: "disputed", status }
      : { text: `the deal is ${status.replace("_", " ")}`, reason: "deal_not_payable", status };
  }
  if (request.kind === "repayout") return null;
  const hold = await releaseHoldOf(sql, deal.id);
  if (hold === "case_open") {
    return { text: "a dispute case was opened on the deal", reason: "case_open", status };
  }
  if (hold === "case_settling" && request.origin !== "case") {
    return { text: "a resolved dispute case is moving its money", reason: "case_settling", status };
  }
  return null;
}

/**
 * Under the deal's lock: the row `succeeded` with `transferId` (once; a
 * concurrent finisher finds it done), then what the transfer means for the
 * deal (see the module doc) and who is told.
 */
async function finishTransfer(
  ctx: Context,
  sql: Sql,
  row: SettlementRow,
  transferId: string,
  actor: string | null,
): Promise<void> {
  const deal = (await findDeal(sql, row.deal_id, { lock: true }))!;
  const done = await sql.maybeOne(
    `update public.deal_settlements
     set status = 'succeeded', payproc_id = $2, last_error = null, settled_at = now()
     where id = $1 and status in ('pending', 'failed')
     returning id`,
    [row.id, transferId],
  );
  if (!done) return;
  if (row.kind === "repayout") {
    await recordDealEvent(sql, deal.id, "payout_repaid_after_dispute_won", transferId, {
      detail: { amount: row.amount, currency: row.currency },
    });
    return;
  }
  if (deal.status === "refunded") {
    // A refund settled between the last check and the transfer: the seller
    // has money for a refunded deal. Nothing else changes; admins decide.
    await recordPayoutAfterRefund(ctx, sql, deal.id, {
      id: transferId,
      kind: row.kind,
      amount: row.amount,
      currency: row.currency,
    });
    return;
  }
  if (deal.status === "disputed") {
    await recordPayoutDuringDispute(ctx, sql, deal, transferId);
  } else if (row.kind === "payout" && await holdbackOwed(sql, deal.id)) {
    const { release_at } = await sql.one<{ release_at: Date }>(
      `update public.deals d set holdback_release_at = least(
         now() + make_interval(days => (d.terms ->> 'holdback_days')::integer),
         d.funded_at + make_interval(days => $2)
       )
       where d.id = $1
       returning d.holdback_release_at as release_at`,
      [deal.id, HOLDBACK_LIMIT_DAYS],
    );
    await recordDealEvent(sql, deal.id, "payout_released", transferId, {
      detail: { amount: row.amount, holdback_release_at: release_at.toISOString() },
      actor,
    });
  } else if (deal.status === "in_handover" || deal.status === "funded") {
    await transitionDeal(
      sql,
      deal.id,
      "completed",
      row.kind === "holdback" ? "holdback_released" : "payout_released",
      { payprocObject: transferId, actor, detail: { amount: row.amount } },
    );
  }
  if (row.kind === "payout") {
    await queuePaymentNotices(ctx, sql, deal.id, "payout_released");
  } else {
    await queueSideNotices(ctx, sql, deal, {
      kind: "holdback_released",
      key: `holdback-released:${deal.id}`,
      emailType: ESCROW_EMAIL_TYPES.holdbackReleasedNotice,
      data: { transferId },
      build: (side, listingTitle) =>
        holdbackReleasedNotice({
          dealId: deal.id,
          listingTitle,
          currency: row.currency,
          amount: row.amount,
          transferId,
          side,
        }),
    });
  }
}
