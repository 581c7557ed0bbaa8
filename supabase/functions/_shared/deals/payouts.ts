/**
 * Releasing a deal's payout: one transfer of amount − commission to the
 * seller's connected account, from the deal's charge
 * (`source_transaction`), with idempotency key `payout:<dealId>`.
 *
 * 1. Read: the deal, and the seller's payout account fresh from the
 *    processor (payouts enabled, nothing past due), outside any transaction.
 * 2. Claim, in a short transaction under the deal's row lock: the payout row
 *    is written `pending` before the processor is called. A refund claimed
 *    first wins (409 here), and so does this claim over a later refund.
 * 3. Transfer, outside any transaction. A pending row found by the claim
 *    (another call running, or one that crashed) is resumed: the processor
 *    is asked first whether the transfer exists, then asked again with the
 *    same key — never a second transfer. Right before the processor is asked
 *    to transfer, the deal is checked again under its lock: a dispute (or a
 *    refund at the processor) that came after the claim stops the payout,
 *    the row `failed` (no money moved), 409.
 * 4. Finish, in a short transaction: the row `succeeded` with the transfer
 *    id, the deal `completed`, the `payout_released` notices. A dispute that
 *    opened in the moment between the last check and the transfer leaves
 *    the deal `disputed`: the payout is recorded on it and the admins hear
 *    of it (the dispute's webhook completes the deal if it is won).
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
import { type DealRow, findDeal, transferGroupOf, transitionDeal } from "./deal_rows.ts";
import { recordPayoutDuringDispute } from "./late_disputes.ts";
import { queuePaymentNotices } from "./payment_notices.ts";
import {
  recordRefusal,
  SETTLEMENT_COLUMNS,
  type SettlementAnswer,
  settlementAnswer,
  settlementKey,
  type SettlementRow,
  settlementsOf,
} from "./settlements.ts";
import { payprocFor } from "../platform/payproc.ts";

/** A payout request. */
export interface PayoutRequest {
  dealId: string;
  /** Release before the handover is complete (from `funded` or `in_handover`). */
  force: boolean;
  /** The admin asking. */
  actor: string;
}

/** Releases the deal's payout once; see the module doc. */
export async function releasePayout(
  ctx: Context,
  request: PayoutRequest,
): Promise<SettlementAnswer> {
  const deal = await findDeal(ctx.db, request.dealId);
  if (!deal) throw notFound(`Deal "${request.dealId}" does not exist`);
  const before = await settlementsOf(ctx.db, deal.id);
  if (before.payout?.status === "succeeded" || before.payout?.status === "reversed") {
    return await settlementAnswer(ctx.db, deal.id);
  }
  if (before.payout?.status !== "pending") {
    refuseUnlessPayable(deal, before.refund, request.force);
    await requirePayableAccount(ctx, deal.seller_id);
  }
  const { row, resumed } = await ctx.db.tx((sql) => claimPayout(sql, request));
  if (row.status === "succeeded" || row.status === "reversed") {
    return await settlementAnswer(ctx.db, deal.id);
  }
  const transfer = await makeTransfer(ctx, deal, row, resumed);
  return await ctx.db.tx(async (sql) => {
    await finishPayout(ctx, sql, row, transfer.id, request.actor);
    return await settlementAnswer(sql, deal.id);
  });
}

/** 409 unless the deal may be paid out (state, no refund). */
function refuseUnlessPayable(deal: DealRow, refund: SettlementRow | null, force: boolean): void {
  if (refund && refund.status !== "failed") {
    throw conflict("Cannot release the payout: the deal's payment is being or was refunded", {
      reason: "refunded",
    });
  }
  if (deal.status === "in_handover" && (deal.handover_completed_at || force)) return;
  if (deal.status === "funded" && force) return;
  if (deal.status === "in_handover") {
    throw conflict(
      "Cannot release the payout: the buyer has not confirmed the handover yet; pass force: true to pay out now",
      { reason: "handover_not_complete", status: deal.status },
    );
  }
  if (deal.status === "funded") {
    throw conflict(
      "Cannot release the payout: the handover has not started; pass force: true to pay out now",
      { reason: "handover_not_started", status: deal.status },
    );
  }
  throw conflict(`Cannot release the payout of a deal that is ${deal.status.replace("_", " ")}`, {
    reason: "deal_not_payable",
    status: deal.status,
  });
}

/** 409 naming the reason unless the seller's account can receive payouts (read fresh). */
async function requirePayableAccount(ctx: Context, sellerId: string): Promise<void> {
  const account = await requirePayoutAccount(ctx, sellerId, "Cannot release the payout");
  if (!account.summary.payouts_enabled) {
    throw conflict("Cannot release the payout: payouts are disabled on the seller's account", {
      reason: "payouts_disabled",
      disabled_reason: account.summary.disabled_reason,
    });
  }
  if (account.summary.past_due_count > 0) {
    throw conflict("Cannot release the payout: the seller's account has requirements past due", {
      reason: "requirements_past_due",
      past_due_count: account.summary.past_due_count,
    });
  }
}

/**
 * Under the deal's lock: re-checks what the read saw and writes the payout
 * row `pending` (a new one, the next attempt of a refused one, or the
 * pending one found, which is then `resumed`).
 */
async function claimPayout(
  sql: Sql,
  request: PayoutRequest,
): Promise<{ row: SettlementRow; resumed: boolean }> {
  const deal = (await findDeal(sql, request.dealId, { lock: true }))!;
  const { payout, refund } = await settlementsOf(sql, deal.id, { lock: true });
  if (payout && payout.status !== "failed") return { row: payout, resumed: true };
  refuseUnlessPayable(deal, refund, request.force);
  if (!deal.payproc_charge_id || deal.commission === null) {
    throw conflict("Cannot release the payout: the deal has no captured payment", {
      reason: "no_payment",
    });
  }
  const account = await sql.maybeOne<{ payproc_account_id: string }>(
    "select payproc_account_id from public.connect_accounts where user_id = $1",
    [deal.seller_id],
  );
  if (!account) throw noPayoutAccount("Cannot release the payout");
  const row = await sql.one<SettlementRow>(
    `insert into public.deal_settlements as s
       (deal_id, kind, amount, currency, destination_account, requested_by)
     select d.id, 'payout', d.amount - d.commission, d.currency, $2, $3
     from public.deals d where d.id = $1
     on conflict (deal_id, kind) do update set
       status = 'pending', attempt = s.attempt + 1, amount = excluded.amount,
       destination_account = excluded.destination_account, requested_by = excluded.requested_by
     where s.status = 'failed'
     returning ${SETTLEMENT_COLUMNS}`,
    [deal.id, account.payproc_account_id, request.actor],
  );
  return { row, resumed: false };
}

/**
 * The payout's transfer: found at the processor when resuming, or on a later
 * attempt (an attempt stopped before its transfer is marked failed, but a
 * call resuming it at that moment may still have made one: the next attempt
 * takes a new key, so it looks first), else created once.
 */
async function makeTransfer(
  ctx: Context,
  deal: DealRow,
  row: SettlementRow,
  resumed: boolean,
): Promise<Stripe.Transfer> {
  const payproc = await payprocFor(ctx);
  const group = transferGroupOf(deal.id);
  if (resumed || row.attempt > 1) {
    const existing = await payproc.transfers.list({ transfer_group: group, limit: 10 });
    const made = existing.data.find((t) =>
      t.metadata?.deal_id === deal.id && t.metadata?.kind === "payout"
    );
    if (made) return made;
  }
  await recheckBeforeTransfer(ctx, row);
  try {
    return await payproc.transfers.create(
      {
        amount: toMinorUnits(row.amount, row.currency),
        currency: processorCurrency(row.currency),
        destination: row.destination_account!,
        source_transaction: deal.payproc_charge_id!,
        transfer_group: group,
        metadata: { deal_id: deal.id, kind: "payout" },
      },
      { idempotencyKey: settlementKey(row) },
    );
  } catch (error) {
    if (isInProgress(error)) {
      throw conflict("Cannot release the payout now: it is being released; try again shortly", {
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
 * paid out (funded or in handover: no dispute, no refund since the claim)
 * and the claim is still this attempt's. Otherwise the claim is released as
 * `failed` — no money moved, so a later attempt takes a new key — and the
 * caller gets 409 (`disputed`, or `deal_not_payable`).
 */
async function recheckBeforeTransfer(ctx: Context, row: SettlementRow): Promise<void> {
  const stopped = await ctx.db.tx(async (sql) => {
    const deal = (await findDeal(sql, row.deal_id, { lock: true }))!;
    if (deal.status === "funded" || deal.status === "in_handover") return null;
    const why = deal.status === "disputed"
      ? "the buyer's bank opened a dispute"
      : `the deal is ${deal.status.replace("_", " ")}`;
    await recordRefusal(sql, row, `Stopped before the transfer: ${why}`);
    return { why, status: deal.status };
  });
  if (stopped) {
    throw conflict(`Cannot release the payout: ${stopped.why}`, {
      reason: stopped.status === "disputed" ? "disputed" : "deal_not_payable",
      status: stopped.status,
    });
  }
}

/**
 * Under the deal's lock: the payout row `succeeded` with `transferId` (once;
 * a concurrent finisher finds it done), the deal `completed` and the seller
 * and buyer told. Also used by nothing else: the webhook has no payout event.
 * A deal disputed in the moment before the transfer stays `disputed`; the
 * payout is recorded on it and every admin is told.
 */
async function finishPayout(
  ctx: Context,
  sql: Sql,
  row: SettlementRow,
  transferId: string,
  actor: string,
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
  if (deal.status === "in_handover" || deal.status === "funded") {
    await transitionDeal(sql, deal.id, "completed", "payout_released", {
      payprocObject: transferId,
      actor,
    });
  } else if (deal.status === "disputed") {
    await recordPayoutDuringDispute(ctx, sql, deal, transferId);
  }
  await queuePaymentNotices(ctx, sql, deal.id, "payout_released");
}
