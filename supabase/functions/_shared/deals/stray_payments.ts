/**
 * Stray payments: a payment that succeeded for a deal that cannot take it —
 * the deal was cancelled, another payment already funded it, or it is not
 * the deal's payment — goes back to the buyer, once.
 *
 * 1. Record, in the transaction that found it (the webhook's): one
 *    `deal_stray_payments` row per payment intent (a repeated or concurrent
 *    delivery finds it and records nothing), and the deal event
 *    `stray_payment_received`. The refund is queued for after the request.
 * 2. Refund, outside any transaction: the processor is asked whether the
 *    payment was refunded already, else to refund it with the idempotency
 *    key `stray-refund:<intent>` — however many callers try, one refund.
 * 3. Finish, in a short transaction: the row `refunded` (once, whoever
 *    finishes first: this module or the webhook's `charge.refunded`), the
 *    deal event `stray_payment_refunded`, the buyer and every admin told.
 *
 * A refusal (the processor will not refund it) marks the row `failed` and
 * asks the admins to refund by hand; a passing failure (processor down)
 * leaves it `pending` for the daily run's `stray-refunds` sub-job.
 *
 * @module
 */
import type Stripe from "stripe";
import { isRefusal } from "../platform/payproc_calls.ts";
import type { Context } from "../platform/context.ts";
import type { Sql } from "../platform/db.ts";
import {
  adminPaymentReturnedNotice,
  adminPaymentReturnFailedNotice,
  paymentReturnedNotice,
  type StrayPaymentFacts,
} from "../email/templates/deal_alerts.ts";
import { type JobSkipped, runGuardedJob } from "../platform/jobs/guard.ts";
import type { JobOutput } from "../platform/jobs/runs.ts";
import { currencyCode, fromMinorUnits } from "../lib/money.ts";
import { queueAdminAlert } from "../notifications/admin_alerts.ts";
import { countNoticeOutcome } from "../notifications/counts.ts";
import { type NoticeOutcome, queueNotice, withDelivery } from "../notifications/notify.ts";
import { chargeIdOf, recordDealEvent } from "./deal_rows.ts";
import { payprocFor } from "../platform/payproc.ts";

/** Why a deal could not take a payment (`deal_stray_payments.reason`). */
export type StrayReason =
  | "deal_cancelled"
  | "deal_already_paid"
  | "not_the_deal_payment"
  | "amount_mismatch";

/** The job name of the retry sub-job in `job_runs`. */
export const STRAY_REFUNDS_JOB = "stray-refunds";

/** A `deal_stray_payments` row with what the notices say about its deal. */
interface StrayRow {
  payproc_payment_intent_id: string;
  deal_id: string;
  payproc_charge_id: string | null;
  amount: string;
  currency: string;
  reason: StrayReason;
  status: "pending" | "refunded" | "failed";
  buyer_id: string;
  listing_title: string;
}

const STRAY_COLUMNS = `s.payproc_payment_intent_id, s.deal_id, s.payproc_charge_id,
  s.amount::text as amount, s.currency, s.reason, s.status, d.buyer_id, l.title as listing_title`;

function strayRow(sql: Sql, where: string, value: string): Promise<StrayRow | null> {
  return sql.maybeOne<StrayRow>(
    `select ${STRAY_COLUMNS}
     from public.deal_stray_payments s
       join public.deals d on d.id = s.deal_id
       join public.listings l on l.id = d.listing_id
     where s.${where} = $1`,
    [value],
  );
}

function factsOf(row: StrayRow): StrayPaymentFacts {
  return {
    dealId: row.deal_id,
    listingTitle: row.listing_title,
    amount: row.amount,
    currency: row.currency,
    reason: row.reason,
    paymentIntentId: row.payproc_payment_intent_id,
  };
}

/**
 * Records succeeded payment `intent` of deal `dealId` as stray in
 * transaction `sql` (once per intent) and queues its refund for after the
 * request. Answers false when it was recorded before.
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

/** What one refund attempt of a stray payment ended in. */
export type StrayRefundResult = "refunded" | "failed" | "already_done";

/**
 * Refunds stray payment `intentId` if it is still pending (see the module
 * doc). Throws when the processor failed for a passing reason (the row stays
 * pending, its attempt counted); answers what became of it otherwise.
 */
export async function refundStrayPayment(
  ctx: Context,
  intentId: string,
): Promise<{ result: StrayRefundResult; notices: NoticeOutcome[] }> {
  const row = await strayRow(ctx.db, "payproc_payment_intent_id", intentId);
  if (!row || row.status !== "pending") return { result: "already_done", notices: [] };
  let refund: Stripe.Refund;
  try {
    refund = await findOrMakeRefund(ctx, row);
  } catch (error) {
    if (isRefusal(error)) {
      return { result: "failed", notices: await recordRefundRefused(ctx, row, error.message) };
    }
    await ctx.db.query(
      `update public.deal_stray_payments set attempts = attempts + 1, last_error = $2
       where payproc_payment_intent_id = $1 and status = 'pending'`,
      [intentId, String(error instanceof Error ? error.message : error).slice(0, 1000)],
    );
    throw error;
  }
  const notices = await ctx.db.tx((sql) => completeStrayRefund(ctx, sql, intentId, refund.id));
  return { result: notices === null ? "already_done" : "refunded", notices: notices ?? [] };
}

/** The payment's refund: one already at the processor (ours or the dashboard's), else a new one. */
async function findOrMakeRefund(ctx: Context, row: StrayRow): Promise<Stripe.Refund> {
  const payproc = await payprocFor(ctx);
  const existing = await payproc.refunds.list({
    payment_intent: row.payproc_payment_intent_id,
    limit: 10,
  });
  const made = existing.data.find((r) => r.status !== "failed" && r.status !== "canceled");
  if (made) return made;
  return await payproc.refunds.create(
    {
      payment_intent: row.payproc_payment_intent_id,
      reason: row.reason === "deal_already_paid" ? "duplicate" : "requested_by_customer",
      metadata: { deal_id: row.deal_id, kind: "stray_payment", reason: row.reason },
    },
    { idempotencyKey: `stray-refund:${row.payproc_payment_intent_id}` },
  );
}

/**
 * In transaction `sql`: stray payment `intentId` is `refunded` by `refundId`
 * (once: null when it was not pending any more), recorded on its deal, and
 * the buyer and every admin are told. Also used by `charge.refunded`.
 */
export async function completeStrayRefund(
  ctx: Context,
  sql: Sql,
  intentId: string,
  refundId: string,
): Promise<NoticeOutcome[] | null> {
  const done = await sql.maybeOne(
    `update public.deal_stray_payments
     set status = 'refunded', payproc_refund_id = $2, refunded_at = now(), last_error = null
     where payproc_payment_intent_id = $1 and status in ('pending', 'failed')
     returning payproc_payment_intent_id`,
    [intentId, refundId],
  );
  if (!done) return null;
  const row = (await strayRow(sql, "payproc_payment_intent_id", intentId))!;
  await recordDealEvent(sql, row.deal_id, "stray_payment_refunded", refundId, {
    detail: { payment_intent: intentId, amount: row.amount, currency: row.currency },
  });
  const facts = factsOf(row);
  const buyer = paymentReturnedNotice(facts);
  const outcomes = [
    await queueNotice(ctx, sql, {
      userId: row.buyer_id,
      type: "payments",
      title: buyer.title,
      body: buyer.body,
      link: `/deals/${row.deal_id}`,
      data: { dealId: row.deal_id, paymentIntentId: intentId, refundId },
      key: `stray-refund:${intentId}`,
      email: { emailType: "payment_returned", content: buyer.email },
    }),
  ];
  const admins = adminPaymentReturnedNotice({ ...facts, refundId });
  outcomes.push(
    ...await queueAdminAlert(ctx, sql, {
      key: `stray-refund:${intentId}`,
      title: admins.title,
      body: admins.body,
      link: `/admin/deals/${row.deal_id}`,
      data: { dealId: row.deal_id, paymentIntentId: intentId, refundId, reason: row.reason },
      emailType: "admin_payment_returned",
      email: admins.email,
    }),
  );
  return outcomes;
}

/** The processor refused the refund: `failed`, recorded on the deal, admins asked to act (once). */
async function recordRefundRefused(
  ctx: Context,
  row: StrayRow,
  error: string,
): Promise<NoticeOutcome[]> {
  return await ctx.db.tx(async (sql) => {
    const failed = await sql.maybeOne(
      `update public.deal_stray_payments set status = 'failed', last_error = $2,
         attempts = attempts + 1
       where payproc_payment_intent_id = $1 and status = 'pending'
       returning payproc_payment_intent_id`,
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
      key: `stray-refund-failed:${row.payproc_payment_intent_id}`,
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
 * pending (one the request that found it could not refund: processor down,
 * process ended). A payment the processor still fails on is a failed item,
 * so the run answers 500 and someone looks.
 */
export function runStrayRefunds(ctx: Context): Promise<JobOutput | JobSkipped> {
  return runGuardedJob(ctx, STRAY_REFUNDS_JOB, {}, async (tally) => {
    const pending = await ctx.db.query<{ id: string }>(
      `select payproc_payment_intent_id as id from public.deal_stray_payments
       where status = 'pending' order by created_at limit 500`,
    );
    const notices: NoticeOutcome[] = [];
    for (const { id } of pending) {
      tally.scanned += 1;
      const outcome = await tally.attempt(id, () => refundStrayPayment(ctx, id));
      if (!outcome) continue;
      if (outcome.result === "refunded") tally.list("refunded", id);
      if (outcome.result === "failed") tally.list("refund_refused", id);
      if (outcome.result !== "already_done") tally.changed += 1;
      notices.push(...outcome.notices);
    }
    for (const outcome of await withDelivery(ctx, notices)) countNoticeOutcome(tally, outcome);
  });
}
