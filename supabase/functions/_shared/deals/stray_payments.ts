/**
 * Stray payments: a payment that succeeded for a deal that cannot take it —
 * the deal was cancelled, another payment already funded it, or it is not
 * the deal's payment — goes back to the buyer, once.
 *
 * 1. Record, in the transaction that found it (the webhook's): one
 *    `deal_stray_payments` row per payment intent (a repeated or concurrent
 *    delivery finds it and records nothing), and the deal event
 *    `stray_payment_received`. The refund is queued for after the request.
 * 2. Refund, outside any transaction: every refund of the payment is read
 *    from the processor and settled (`stray_refunds.ts`); if the refunds
 *    that are not failed leave something unreturned, it is refunded with
 *    the round's key — `stray-refund:<intent>` for the whole payment,
 *    `stray-refund-rest:<intent>` for the rest after a partial refund (from
 *    round 2 on with `:<round>`) — however many callers try, one refund.
 * 3. Settle again, in a short transaction: `refunded` once succeeded
 *    refunds cover the payment (the deal event `stray_payment_refunded`, the
 *    buyer and every admin told), `refund_pending` while some are pending.
 *
 * Every transaction that writes the row and a deal event takes the deal's
 * row lock first, then the row's (the lock order of `deal_rows.ts`); the
 * count of a failed attempt is one statement with no lock before it.
 *
 * A refusal (the processor will not refund it) marks the row `failed` and
 * asks the admins to refund by hand; a passing failure (processor down)
 * leaves it `pending`. The daily run's `stray-refunds` sub-job refunds what
 * is `pending` (also after a refund failed later and reopened it) and looks
 * again at what is `refund_pending`.
 *
 * @module
 */
import type Stripe from "stripe";
import { isRefusal } from "../platform/payproc_calls.ts";
import type { Context } from "../platform/context.ts";
import type { Sql } from "../platform/db.ts";
import { adminPaymentReturnFailedNotice } from "../email/templates/deal_alerts.ts";
import { type JobSkipped, runGuardedJob } from "../platform/jobs/guard.ts";
import type { JobOutput } from "../platform/jobs/runs.ts";
import { currencyCode, fromMinorUnits } from "../lib/money.ts";
import { queueAdminAlert } from "../notifications/admin_alerts.ts";
import { countNoticeOutcome } from "../notifications/counts.ts";
import { type NoticeOutcome, withDelivery } from "../notifications/notify.ts";
import { chargeIdOf, recordDealEvent } from "./deal_rows.ts";
import { payprocFor } from "../platform/payproc.ts";
import {
  factsOf,
  listStrayRefunds,
  OPEN_STRAY_STATUSES,
  settleStrayRefunds,
  type StrayReason,
  strayRefundKey,
  type StrayRow,
  strayRow,
  type StraySettlement,
} from "./stray_refunds.ts";

export type { StrayReason } from "./stray_refunds.ts";

/** The job name of the retry sub-job in `job_runs`. */
export const STRAY_REFUNDS_JOB = "stray-refunds";

/**
 * Records succeeded payment `intent` of deal `dealId` as stray in
 * transaction `sql` (once per intent) and queues its refund for after the
 * request. Answers false when it was recorded before. The caller holds the
 * deal's row lock (`applyDealPayment`): the row and its deal event come
 * after it in the lock order of `deal_rows.ts`, as in every other writer of
 * the row (`strayRow` with `lock`).
 */
export async function recordStrayPayment(
  ctx: Context,
  sql: Sql,
  dealId: string,
  intent: Stripe.PaymentIntent,
  reason: StrayReason,
): Promise<boolean> {
  const amount = fromMinorUnits(intent.amount_received || intent.amount, intent.currency);
  const currency = currencyCode(intent.currency);
  const row = await sql.maybeOne(
    `insert into public.deal_stray_payments
       (payproc_payment_intent_id, deal_id, payproc_charge_id, amount, currency, reason)
     values ($1, $2, $3, $4, $5, $6)
     on conflict (payproc_payment_intent_id) do nothing
     returning payproc_payment_intent_id`,
    [intent.id, dealId, chargeIdOf(intent), amount, currency, reason],
  );
  if (!row) return false;
  await recordDealEvent(sql, dealId, "stray_payment_received", intent.id, {
    detail: { reason, amount, currency, charge: chargeIdOf(intent) },
  });
  ctx.afterwards(() => refundStrayPayment(ctx, intent.id));
  return true;
}

/**
 * What one refund attempt of a stray payment ended in: `refunded` (closed
 * now), `refund_pending` (a pending refund made or found now), `waiting`
 * (still on a pending refund), `failed` (the processor refused),
 * `already_done` (not open, or someone else finished it).
 */
export type StrayRefundResult =
  | "refunded"
  | "refund_pending"
  | "waiting"
  | "failed"
  | "already_done";

/** What {@linkcode refundStrayPayment} did. */
export interface StrayRefundOutcome {
  result: StrayRefundResult;
  /** Refunds found failed or cancelled after they were made (the payment reopened). */
  reversed: string[];
  notices: NoticeOutcome[];
}

/**
 * Refunds stray payment `intentId` if it is still open (see the module doc):
 * settles it by the refunds the processor has, refunds what they leave, and
 * settles again. Throws when the processor failed for a passing reason (the
 * row stays as it was, its attempt counted); answers what became of it
 * otherwise.
 */
export async function refundStrayPayment(
  ctx: Context,
  intentId: string,
): Promise<StrayRefundOutcome> {
  const row = await strayRow(ctx.db, "payproc_payment_intent_id", intentId);
  if (!row || !OPEN_STRAY_STATUSES.includes(row.status)) {
    return { result: "already_done", reversed: [], notices: [] };
  }
  const payproc = await payprocFor(ctx);
  const notices: NoticeOutcome[] = [];
  const reversed: string[] = [];
  let moved: StraySettlement["moved"] = null;
  const settle = async (refunds: Stripe.Refund[]): Promise<StraySettlement | null> => {
    const settled = await ctx.db.tx((sql) => settleStrayRefunds(ctx, sql, intentId, refunds));
    if (settled) {
      notices.push(...settled.notices);
      reversed.push(...settled.reversed);
      moved = settled.moved ?? moved;
    }
    return settled;
  };
  const outcome = (settled: StraySettlement | null): StrayRefundOutcome => {
    const result: StrayRefundResult = moved === "refunded" || moved === "refund_pending"
      ? moved
      : settled?.status === "refund_pending"
      ? "waiting"
      : "already_done";
    return { result, reversed, notices };
  };
  try {
    const refunds = await listStrayRefunds(payproc, { payment_intent: intentId });
    const first = await settle(refunds);
    if (first?.status !== "pending") return outcome(first);
    const made = await makeRefund(payproc, row, first);
    const second = await settle([made, ...refunds.filter((r) => r.id !== made.id)]);
    if (second?.status === "pending") {
      // The key answered with a refund that failed since (made by a process
      // that ended before recording it): the round moved on, so the next
      // attempt has a new key.
      throw new Error(`Refund ${made.id} of payment ${intentId} is ${made.status}`);
    }
    return outcome(second);
  } catch (error) {
    if (isRefusal(error)) {
      // Refunds made meanwhile (charge_already_refunded) may cover it: read again first.
      const again = await listStrayRefunds(payproc, { payment_intent: intentId })
        .then(settle, () => null);
      if (again && again.status !== "pending") return outcome(again);
      notices.push(...await recordRefundRefused(ctx, row, error.message));
      return { result: "failed", reversed, notices };
    }
    await ctx.db.query(
      `update public.deal_stray_payments set attempts = attempts + 1, last_error = $2
       where payproc_payment_intent_id = $1 and status in ('pending', 'refund_pending')`,
      [intentId, String(error instanceof Error ? error.message : error).slice(0, 1000)],
    );
    throw error;
  }
}

/**
 * Refunds what the refunds of `settled` leave of stray payment `row`: the
 * whole payment, or the rest after a partial refund, with the round's key.
 */
async function makeRefund(
  payproc: Stripe,
  row: StrayRow,
  settled: StraySettlement,
): Promise<Stripe.Refund> {
  const intentId = row.payproc_payment_intent_id;
  const rest = settled.standing.partial;
  return await payproc.refunds.create(
    {
      payment_intent: intentId,
      // The whole payment is what is left of it; the rest is named.
      ...(rest ? { amount: settled.standing.rest } : {}),
      reason: row.reason === "deal_already_paid" ? "duplicate" : "requested_by_customer",
      metadata: { deal_id: row.deal_id, kind: "stray_payment", reason: row.reason },
    },
    { idempotencyKey: strayRefundKey(intentId, settled.round, rest) },
  );
}

/** The processor refused the refund: `failed`, recorded on the deal, admins asked to act (once). */
async function recordRefundRefused(
  ctx: Context,
  row: StrayRow,
  error: string,
): Promise<NoticeOutcome[]> {
  return await ctx.db.tx(async (sql) => {
    // The deal's lock, then the row's, before the update and the deal event
    // (the lock order of `deal_rows.ts`).
    await strayRow(sql, "payproc_payment_intent_id", row.payproc_payment_intent_id, {
      lock: true,
    });
    const failed = await sql.maybeOne<{ refund_round: number }>(
      `update public.deal_stray_payments set status = 'failed', last_error = $2,
         attempts = attempts + 1
       where payproc_payment_intent_id = $1 and status = 'pending'
       returning refund_round`,
      [row.payproc_payment_intent_id, error.slice(0, 1000)],
    );
    if (!failed) return [];
    await recordDealEvent(
      sql,
      row.deal_id,
      "stray_payment_refund_failed",
      row.payproc_payment_intent_id,
      { detail: { error: error.slice(0, 500) } },
    );
    const alert = adminPaymentReturnFailedNotice({ ...factsOf(row), error });
    return await queueAdminAlert(ctx, sql, {
      // Once per round: a payment reopened after its refund failed may be refused again.
      key: failed.refund_round > 1
        ? `stray-refund-failed:${row.payproc_payment_intent_id}:${failed.refund_round}`
        : `stray-refund-failed:${row.payproc_payment_intent_id}`,
      title: alert.title,
      body: alert.body,
      link: `/admin/deals/${row.deal_id}`,
      data: { dealId: row.deal_id, paymentIntentId: row.payproc_payment_intent_id },
      emailType: "admin_payment_return_failed",
      email: alert.email,
    });
  });
}

/** The stray payment behind processor charge `chargeId`, if any (for charge events). */
export async function strayPaymentOfCharge(
  sql: Sql,
  chargeId: string,
): Promise<{ intentId: string; dealId: string; listingTitle: string } | null> {
  const row = await strayRow(sql, "payproc_charge_id", chargeId);
  return row
    ? {
      intentId: row.payproc_payment_intent_id,
      dealId: row.deal_id,
      listingTitle: row.listing_title,
    }
    : null;
}

/**
 * The daily run's sub-job `stray-refunds`: refunds every stray payment still
 * pending (one the request that found it could not refund — processor down,
 * process ended — or one reopened because its refund failed later) and looks
 * again at every one waiting on a pending refund, closing it once the refund
 * succeeded. A payment the processor still fails on is a failed item, so the
 * run answers 500 and someone looks. Items: `refunded`, `refund_pending`,
 * `refund_refused`, `reversed` (payments whose refund was found failed).
 */
export function runStrayRefunds(ctx: Context): Promise<JobOutput | JobSkipped> {
  return runGuardedJob(ctx, STRAY_REFUNDS_JOB, {}, async (tally) => {
    const open = await ctx.db.query<{ id: string }>(
      `select payproc_payment_intent_id as id from public.deal_stray_payments
       where status in ('pending', 'refund_pending') order by created_at limit 500`,
    );
    const notices: NoticeOutcome[] = [];
    for (const { id } of open) {
      tally.scanned += 1;
      const outcome = await tally.attempt(id, () => refundStrayPayment(ctx, id));
      if (!outcome) continue;
      if (outcome.result === "refunded") tally.list("refunded", id);
      if (outcome.result === "refund_pending") tally.list("refund_pending", id);
      if (outcome.result === "failed") tally.list("refund_refused", id);
      if (outcome.result === "waiting") tally.count("waiting");
      if (outcome.reversed.length > 0) tally.list("reversed", id);
      const changed = !["already_done", "waiting"].includes(outcome.result);
      if (changed || outcome.reversed.length > 0) tally.changed += 1;
      notices.push(...outcome.notices);
    }
    for (const outcome of await withDelivery(ctx, notices)) countNoticeOutcome(tally, outcome);
  });
}
