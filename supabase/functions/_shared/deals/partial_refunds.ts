/**
 * A dispute case's refund of part of the deal's charge to the buyer
 * (settlement kind `partial_refund`, idempotency key
 * `partial_refund:<dealId>`): the amount a `partial_refund` outcome names,
 * or the whole holdback for a `refund` outcome after the payout. The same
 * phases as every settlement: claim the row under the deal's lock, call the
 * processor outside any transaction (looking first for the refund when
 * resuming), finish briefly — the deal event `partial_refund_issued`, and
 * both sides told.
 *
 * @module
 */
import type Stripe from "stripe";
import { isInProgress, isRefusal } from "../platform/payproc_calls.ts";
import type { Context } from "../platform/context.ts";
import type { Sql } from "../platform/db.ts";
import { conflict } from "../platform/errors.ts";
import { toMinorUnits } from "../lib/money.ts";
import { ESCROW_EMAIL_TYPES, partialRefundNotice } from "../email/templates/escrow_release.ts";
import { type DealRow, findDeal, recordDealEvent } from "./deal_rows.ts";
import { queueSideNotices } from "./payment_notices.ts";
import {
  recordRefusal,
  SETTLEMENT_COLUMNS,
  settlementKey,
  type SettlementRow,
  settlementsOf,
} from "./settlements.ts";
import { payprocFor } from "../platform/payproc.ts";

/** Refunds `amount` (major units) of deal `dealId`'s charge once, for case `caseId`; answers the row. */
export async function refundPart(
  ctx: Context,
  dealId: string,
  caseId: string,
  amount: string,
  actor: string | null,
): Promise<SettlementRow> {
  const claim = await ctx.db.tx((sql) => claimPartialRefund(sql, dealId, caseId, amount, actor));
  if (claim.row.status === "succeeded") return claim.row;
  const refund = await makePartialRefund(ctx, claim.deal, claim.row, claim.resumed);
  return await ctx.db.tx((sql) => finishPartialRefund(ctx, sql, claim.row, refund.id));
}

interface PartialRefundClaim {
  row: SettlementRow;
  deal: DealRow;
  resumed: boolean;
}

/** Under the deal's lock: the row `pending` (or the one found, resumed, or done). */
async function claimPartialRefund(
  sql: Sql,
  dealId: string,
  caseId: string,
  amount: string,
  actor: string | null,
): Promise<PartialRefundClaim> {
  const deal = (await findDeal(sql, dealId, { lock: true }))!;
  const { partial_refund: existing, refund } = await settlementsOf(sql, dealId, { lock: true });
  if (existing && existing.status !== "failed") return { row: existing, deal, resumed: true };
  if (refund && refund.status !== "failed") {
    throw conflict("Cannot refund part of the payment: it is being or was refunded in full", {
      reason: "refunded",
    });
  }
  if (!deal.payproc_payment_intent_id) {
    throw conflict("Cannot refund part of the payment: the deal has no payment", {
      reason: "no_payment",
    });
  }
  const row = await sql.one<SettlementRow>(
    `insert into public.deal_settlements as s (deal_id, kind, amount, currency, reason, requested_by)
     select d.id, 'partial_refund', $2::numeric, d.currency, $3, $4 from public.deals d where d.id = $1
     on conflict (deal_id, kind) do update set
       status = 'pending', attempt = s.attempt + 1, amount = excluded.amount
     where s.status = 'failed'
     returning ${SETTLEMENT_COLUMNS}`,
    [dealId, amount, `case ${caseId}`, actor],
  );
  return { row, deal, resumed: false };
}

/** The refund: found at the processor when resuming or retrying, else created once. */
async function makePartialRefund(
  ctx: Context,
  deal: DealRow,
  row: SettlementRow,
  resumed: boolean,
): Promise<Stripe.Refund> {
  const payproc = await payprocFor(ctx);
  const intent = deal.payproc_payment_intent_id!;
  if (resumed || row.attempt > 1) {
    const existing = await payproc.refunds.list({ payment_intent: intent, limit: 20 });
    const made = existing.data.find((r) =>
      r.metadata?.deal_id === deal.id && r.metadata?.kind === "partial_refund" &&
      r.status !== "failed" && r.status !== "canceled"
    );
    if (made) return made;
  }
  try {
    return await payproc.refunds.create(
      {
        payment_intent: intent,
        amount: toMinorUnits(row.amount, row.currency),
        reason: "requested_by_customer",
        metadata: {
          deal_id: deal.id,
          kind: "partial_refund",
          ...(row.reason ? { case: row.reason } : {}),
        },
      },
      { idempotencyKey: settlementKey(row) },
    );
  } catch (error) {
    if (isInProgress(error)) {
      throw conflict("Cannot refund part of the payment now: it is being made; try again shortly", {
        reason: "in_progress",
      });
    }
    if (isRefusal(error)) await recordRefusal(ctx.db, row, error.message);
    throw error;
  }
}

/** Under the deal's lock: the row `succeeded` (once), the event, both sides told. */
async function finishPartialRefund(
  ctx: Context,
  sql: Sql,
  row: SettlementRow,
  refundId: string,
): Promise<SettlementRow> {
  const deal = (await findDeal(sql, row.deal_id, { lock: true }))!;
  const done = await sql.maybeOne<SettlementRow>(
    `update public.deal_settlements s
     set status = 'succeeded', payproc_id = $2, last_error = null, settled_at = now()
     where s.id = $1 and s.status in ('pending', 'failed')
     returning ${SETTLEMENT_COLUMNS}`,
    [row.id, refundId],
  );
  if (!done) return (await settlementsOf(sql, deal.id)).partial_refund!;
  await recordDealEvent(sql, deal.id, "partial_refund_issued", refundId, {
    detail: { amount: row.amount, currency: row.currency, case: row.reason },
  });
  await queueSideNotices(ctx, sql, deal, {
    kind: "partial_refund_issued",
    key: `partial-refund:${deal.id}`,
    emailType: ESCROW_EMAIL_TYPES.partialRefundNotice,
    data: { refundId },
    build: (side, listingTitle) =>
      partialRefundNotice({
        dealId: deal.id,
        listingTitle,
        currency: row.currency,
        amount: row.amount,
        refundId,
        side,
      }),
  });
  return done;
}
