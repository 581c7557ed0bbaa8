/**
 * Refunding a deal's payment in full, with idempotency key
 * `refund:<dealId>`, in the phases of payouts (`payouts.ts`): read, claim
 * the refund row under the deal's lock, call the processor outside any
 * transaction, finish briefly. While a payout is pending the refund is
 * refused; after it was released, only with `reverseTransfer`, which
 * reverses the transfer first (key `reversal:<dealId>`). When a dispute on
 * a completed deal's charge decides where the buyer's money goes (open, or
 * lost), `reverseTransfer` only takes the payout back and no refund is made
 * (after a lost one the deal is `refunded`: the bank returned the money).
 * `completeRefund` is shared with the webhook's `charge.refunded`.
 *
 * @module
 */
import type Stripe from "stripe";
import { isInProgress, isRefusal } from "../platform/payproc_calls.ts";
import type { Context } from "../platform/context.ts";
import type { Sql } from "../platform/db.ts";
import { conflict, notFound } from "../platform/errors.ts";
import { type DealRow, findDeal, recordDealEvent, transitionDeal } from "./deal_rows.ts";
import { lateDisputeCause, OPEN_DISPUTE } from "./late_disputes.ts";
import { recordPaidTransfersAfterRefund } from "./late_payouts.ts";
import { queuePaymentNotices } from "./payment_notices.ts";
import {
  type DealSettlements,
  recordRefusal,
  releaseHoldOf,
  SETTLEMENT_COLUMNS,
  type SettlementAnswer,
  settlementAnswer,
  settlementKey,
  type SettlementRow,
  settlementsOf,
} from "./settlements.ts";
import { payprocFor } from "../platform/payproc.ts";

/** A refund request. */
export interface RefundRequest {
  dealId: string;
  reason?: string;
  /** Take a released payout back from the seller first. */
  reverseTransfer: boolean;
  /** The admin asking; null for a dispute case's outcome carried out by the job. */
  actor: string | null;
}

/** States a deal's payment can be refunded from (completed only after reversing the payout). */
const REFUNDABLE = ["funded", "in_handover", "completed"] as const;

/** States the state table lets a deal become refunded from. */
const REFUNDED_FROM = ["funded", "in_handover", "completed", "disputed"] as const;

/** Refunds the deal's payment once; see the module doc. */
export async function refundDeal(ctx: Context, request: RefundRequest): Promise<SettlementAnswer> {
  const deal = await findDeal(ctx.db, request.dealId);
  if (!deal) throw notFound(`Deal "${request.dealId}" does not exist`);
  const before = await settlementsOf(ctx.db, deal.id);
  if (before.refund?.status === "succeeded") return await settlementAnswer(ctx.db, deal.id);
  if (before.refund?.status !== "pending") {
    refuseUnlessRefundable(
      deal,
      before,
      request,
      (await releaseHoldOf(ctx.db, deal.id)) === "case_open",
    );
    const dispute = deal.status === "completed" ? await decidingDispute(ctx, deal) : null;
    if (dispute) return await reverseForDispute(ctx, deal, before, dispute, request.actor);
  }
  const claim = await ctx.db.tx((sql) => claimRefund(sql, request));
  const { row, resumed, current, settlements } = claim;
  if (row.status === "succeeded") return await settlementAnswer(ctx.db, deal.id);
  await reverseSellerTransfers(ctx, current, settlements);
  const refund = await makeRefund(ctx, current, row, resumed);
  return await ctx.db.tx(async (sql) => {
    await completeRefund(ctx, sql, deal.id, refund.id, request.actor);
    return await settlementAnswer(sql, deal.id);
  });
}

/** The transfers to the seller that went out (payout, holdback, repayout). */
function paidTransfers(settlements: DealSettlements): SettlementRow[] {
  return [settlements.payout, settlements.holdback, settlements.repayout].filter(
    (row): row is SettlementRow => row?.status === "succeeded",
  );
}

/** 409 unless the deal's payment may be refunded now. */
function refuseUnlessRefundable(
  deal: DealRow,
  settlements: DealSettlements,
  request: RefundRequest,
  withCaseOpen: boolean,
): void {
  const { payout } = settlements;
  if (withCaseOpen) {
    throw conflict(
      "Cannot refund: a dispute case is open on this deal; resolve it with resolve-deal-case (outcome refund)",
      { reason: "case_open" },
    );
  }
  if (settlements.partial_refund && settlements.partial_refund.status !== "failed") {
    throw conflict("Cannot refund in full: a dispute case refunded part of the payment", {
      reason: "partially_refunded",
    });
  }
  if (deal.status === "disputed") {
    throw conflict(
      "Cannot refund a disputed payment: the dispute decides where the money goes",
      { reason: "disputed" },
    );
  }
  if (!(REFUNDABLE as readonly string[]).includes(deal.status)) {
    throw conflict(`Cannot refund a deal that is ${deal.status.replace("_", " ")}`, {
      reason: "deal_not_refundable",
      status: deal.status,
    });
  }
  const inFlight = [payout, settlements.holdback, settlements.repayout].some((row) =>
    row?.status === "pending"
  );
  if (inFlight) {
    throw conflict("Cannot refund now: the payout to the seller is being released", {
      reason: "payout_in_progress",
    });
  }
  const paid = paidTransfers(settlements);
  if (paid.length > 0 && !request.reverseTransfer) {
    throw conflict(
      "Cannot refund: the seller has been paid out; pass reverseTransfer: true to take the payout back first",
      { reason: "paid_out", payoutId: paid[0]!.payproc_id },
    );
  }
}

/**
 * The dispute that decides where the buyer's money goes, if any: one lost on
 * the deal's charge (the bank gave the money back), else one open (and the
 * processor would refuse a refund). Asked only for completed deals — a
 * dispute while the money is in escrow makes the deal `disputed` instead.
 */
async function decidingDispute(ctx: Context, deal: DealRow): Promise<Stripe.Dispute | null> {
  if (!deal.payproc_charge_id) return null;
  const payproc = await payprocFor(ctx);
  const disputes = await payproc.disputes.list({ charge: deal.payproc_charge_id, limit: 10 });
  return disputes.data.find((d) => d.status === "lost") ??
    disputes.data.find((d) => OPEN_DISPUTE.includes(d.status) && !d.is_charge_refundable) ??
    null;
}

/**
 * A completed deal whose charge is disputed: the payout is taken back from
 * the seller (with `reverseTransfer`), and no refund is made — the dispute
 * returns the buyer's money if it is lost. A dispute already lost makes the
 * deal `refunded` now, as its webhook does when it comes after the reversal
 * (`settlement_events.ts`). Without a payout left to take back, 409
 * `disputed`.
 */
async function reverseForDispute(
  ctx: Context,
  deal: DealRow,
  settlements: DealSettlements,
  dispute: Stripe.Dispute,
  actor: string | null,
): Promise<SettlementAnswer> {
  const paid = paidTransfers(settlements);
  if (paid.length === 0) {
    throw conflict(
      "Cannot refund a disputed payment: the dispute decides where the buyer's money goes",
      { reason: "disputed" },
    );
  }
  const payout = paid[0]!;
  const reversalId = await reverseSellerTransfers(ctx, deal, settlements);
  return await ctx.db.tx(async (sql) => {
    const current = (await findDeal(sql, deal.id, { lock: true }))!;
    await recordDealEvent(
      sql,
      deal.id,
      "payout_reversed_for_dispute",
      reversalId ?? payout.payproc_id!,
      { actor },
    );
    // Lost — as read before the reversal, or as its webhook recorded while
    // the reversal was being made — and now taken back: the buyer has the
    // money through the bank, and the seller has it no more.
    const lost = dispute.status === "lost" ? dispute.id : await lostDisputeOf(sql, deal.id);
    if (lost && current.status === "completed") {
      await transitionDeal(sql, deal.id, "refunded", "dispute_lost", {
        payprocObject: lost,
        actor,
      });
    }
    return await settlementAnswer(sql, deal.id);
  });
}

/** The dispute the webhook recorded as lost after deal `dealId`'s payout, if any. */
async function lostDisputeOf(sql: Sql, dealId: string): Promise<string | null> {
  const row = await sql.maybeOne<{ id: string }>(
    `select payproc_object_id as id from public.deal_events
     where deal_id = $1 and cause = $2
     order by id limit 1`,
    [dealId, lateDisputeCause("payout", "lost")],
  );
  return row?.id ?? null;
}

/** A claimed refund: its row, and the deal and its settlements as the claim saw them under the lock. */
interface RefundClaim {
  row: SettlementRow;
  /** The row was pending already: another call is making it, or one died midway. */
  resumed: boolean;
  current: DealRow;
  settlements: DealSettlements;
}

/** Under the deal's lock: re-checks and writes the refund row `pending` (or finds it pending: `resumed`). */
async function claimRefund(sql: Sql, request: RefundRequest): Promise<RefundClaim> {
  const deal = (await findDeal(sql, request.dealId, { lock: true }))!;
  const settlements = await settlementsOf(sql, deal.id, { lock: true });
  const { refund } = settlements;
  const claimed = (row: SettlementRow, resumed: boolean) => ({
    row,
    resumed,
    current: deal,
    settlements,
  });
  if (refund && refund.status !== "failed") return claimed(refund, true);
  refuseUnlessRefundable(
    deal,
    settlements,
    request,
    (await releaseHoldOf(sql, deal.id)) === "case_open",
  );
  if (!deal.payproc_payment_intent_id) {
    throw conflict("Cannot refund: the deal has no payment", { reason: "no_payment" });
  }
  const row = await sql.one<SettlementRow>(
    `insert into public.deal_settlements as s (deal_id, kind, amount, currency, reason, requested_by)
     select d.id, 'refund', d.amount, d.currency, $2, $3 from public.deals d where d.id = $1
     on conflict (deal_id, kind) do update set
       status = 'pending', attempt = s.attempt + 1, reason = excluded.reason,
       requested_by = excluded.requested_by
     where s.status = 'failed'
     returning ${SETTLEMENT_COLUMNS}`,
    [deal.id, request.reason ?? null, request.actor],
  );
  return claimed(row, false);
}

/**
 * Takes every transfer the seller was paid back (the payout, and a holdback
 * or repayout when they went out) and answers the first reversal's id.
 */
async function reverseSellerTransfers(
  ctx: Context,
  deal: DealRow,
  settlements: DealSettlements,
): Promise<string | null> {
  let first: string | null = null;
  for (const row of paidTransfers(settlements)) {
    const reversal = await reverseTransfer(ctx, deal, row);
    first ??= reversal;
  }
  return first;
}

/**
 * Takes one transfer to the seller back (once: the transfer is read first;
 * the key is `reversal:<dealId>` for the payout, `reversal:<kind>:<dealId>`
 * for the others) and answers the reversal's id.
 */
async function reverseTransfer(
  ctx: Context,
  deal: DealRow,
  payout: SettlementRow,
): Promise<string | null> {
  const payproc = await payprocFor(ctx);
  const transfer = await payproc.transfers.retrieve(payout.payproc_id!);
  let reversalId = transfer.amount_reversed >= transfer.amount
    ? transfer.reversals.data[0]?.id ?? null
    : null;
  if (reversalId === null) {
    try {
      const reversal = await payproc.transfers.createReversal(
        transfer.id,
        { metadata: { deal_id: deal.id, kind: `${payout.kind}_reversal` } },
        {
          idempotencyKey: payout.kind === "payout"
            ? `reversal:${deal.id}`
            : `reversal:${payout.kind}:${deal.id}`,
        },
      );
      reversalId = reversal.id;
    } catch (error) {
      if (isInProgress(error)) throw inProgress();
      throw error;
    }
  }
  await markPayoutReversed(ctx.db, transfer.id, reversalId);
  return reversalId;
}

/** The transfer to the seller with id `transferId` is `reversed` (idempotent). */
export async function markPayoutReversed(
  sql: Sql,
  transferId: string,
  reversalId: string | null,
): Promise<boolean> {
  const row = await sql.maybeOne(
    `update public.deal_settlements
     set status = 'reversed', payproc_reversal_id = coalesce(payproc_reversal_id, $2)
     where kind in ('payout', 'holdback', 'repayout') and payproc_id = $1 and status = 'succeeded'
     returning id`,
    [transferId, reversalId],
  );
  return row !== null;
}

/** The refund: found at the processor when resuming, else created once. */
async function makeRefund(
  ctx: Context,
  deal: DealRow,
  row: SettlementRow,
  resumed: boolean,
): Promise<Stripe.Refund> {
  const payproc = await payprocFor(ctx);
  const intent = deal.payproc_payment_intent_id!;
  if (resumed) {
    const existing = await payproc.refunds.list({ payment_intent: intent, limit: 10 });
    const made = existing.data.find((r) =>
      r.metadata?.deal_id === deal.id && r.status !== "failed" && r.status !== "canceled"
    );
    if (made) return made;
  }
  try {
    return await payproc.refunds.create(
      {
        payment_intent: intent,
        reason: "requested_by_customer",
        metadata: { deal_id: deal.id, ...(row.reason ? { reason: row.reason } : {}) },
      },
      { idempotencyKey: settlementKey(row) },
    );
  } catch (error) {
    if (isInProgress(error)) throw inProgress();
    if (isRefusal(error)) await recordRefusal(ctx.db, row, error.message);
    throw error;
  }
}

function inProgress() {
  return conflict("Cannot refund now: the refund is being made; try again shortly", {
    reason: "in_progress",
  });
}

/**
 * Under the deal's lock: the refund row `succeeded` with `refundId` (written
 * when the processor reported a refund nobody claimed, e.g. one made in its
 * dashboard), the deal `refunded` and both parties told — once, whoever
 * finishes first (this function or the webhook); a transfer to the seller
 * that went out and was not taken back is told to the admins, once
 * (`late_payouts.ts`). False when the deal was already refunded (or cannot
 * become refunded).
 */
export async function completeRefund(
  ctx: Context,
  sql: Sql,
  dealId: string,
  refundId: string,
  actor: string | null,
): Promise<boolean> {
  const deal = await findDeal(sql, dealId, { lock: true });
  if (!deal) return false;
  await sql.query(
    `insert into public.deal_settlements as s
       (deal_id, kind, status, amount, currency, payproc_id, requested_by, settled_at)
     values ($1, 'refund', 'succeeded', $2, $3, $4, $5, now())
     on conflict (deal_id, kind) do update set
       status = 'succeeded', payproc_id = excluded.payproc_id, last_error = null,
       settled_at = now()
     where s.status <> 'succeeded'`,
    [deal.id, deal.amount, deal.currency, refundId, actor],
  );
  // A refund of a deal that is already refunded, or that never held the
  // money (cancelled), is recorded and changes no state.
  if (!(REFUNDED_FROM as readonly string[]).includes(deal.status)) return false;
  await transitionDeal(sql, deal.id, "refunded", "refund_issued", {
    payprocObject: refundId,
    actor,
  });
  await queuePaymentNotices(ctx, sql, deal.id, "refund_issued");
  // A transfer to the seller that went out and was not taken back (a
  // dashboard refund, a reversal that failed): the admins hear of it once.
  await recordPaidTransfersAfterRefund(ctx, sql, deal.id);
  return true;
}
