/**
 * Where the refunds of a stray payment stand, and what that makes of its
 * `deal_stray_payments` row (state machine in the stray_refunds migration).
 * Decided from every refund of the payment as the processor has it — never
 * from a webhook's payload — by {@linkcode settleStrayRefunds}, which every
 * path runs: the refund attempt after the webhook, the daily run,
 * `charge.refunded`, `charge.refund.updated` and `refund.failed`.
 *
 * - The row is `refunded` only once **succeeded** refunds add up to the
 *   whole payment: then the deal event `stray_payment_refunded`, the buyer
 *   and every admin told (once per round).
 * - Succeeded and pending refunds that add up to it make it
 *   `refund_pending`: the daily run looks again.
 * - Failed and cancelled refunds count for nothing. One the row counted on,
 *   or one of ours (its idempotency key is used up), is a reversal: the deal
 *   event `stray_payment_refund_reversed` and an admin alert, once per
 *   refund; the row is `pending` again in the next round, whose refund has
 *   a key of its own.
 * - A reading that misses a refund, or shows one still pending that has
 *   moved on, never moves a row back: only a failure does. So events late,
 *   twice or out of order change nothing.
 *
 * @module
 */
import type Stripe from "stripe";
import type { Context } from "../platform/context.ts";
import type { Sql } from "../platform/db.ts";
import {
  adminPaymentReturnedNotice,
  adminPaymentReturnReversedNotice,
  paymentReturnedNotice,
  type StrayPaymentFacts,
} from "../email/templates/deal_alerts.ts";
import { fromMinorUnits, toMinorUnits } from "../lib/money.ts";
import { queueAdminAlert } from "../notifications/admin_alerts.ts";
import { type NoticeOutcome, queueNotice } from "../notifications/notify.ts";
import { recordDealEvent } from "./deal_rows.ts";

/** Why a deal could not take a payment (`deal_stray_payments.reason`). */
export type StrayReason =
  | "deal_cancelled"
  | "deal_already_paid"
  | "not_the_deal_payment"
  | "amount_mismatch";

/** `deal_stray_payments.status`. */
export type StrayStatus = "pending" | "refund_pending" | "refunded" | "failed";

/** The statuses the daily run looks at: to refund, or waiting on a refund. */
export const OPEN_STRAY_STATUSES: readonly StrayStatus[] = ["pending", "refund_pending"];

/** The most refunds of one payment read (the processor's page; the row's bound). */
const MAX_REFUNDS = 100;

/** A `deal_stray_payments` row with what the notices say about its deal. */
export interface StrayRow {
  payproc_payment_intent_id: string;
  deal_id: string;
  payproc_charge_id: string | null;
  amount: string;
  currency: string;
  reason: StrayReason;
  status: StrayStatus;
  payproc_refund_id: string | null;
  payproc_refund_ids: string[];
  refund_round: number;
  buyer_id: string;
  listing_title: string;
}

const STRAY_COLUMNS = `s.payproc_payment_intent_id, s.deal_id, s.payproc_charge_id,
  s.amount::text as amount, s.currency, s.reason, s.status, s.payproc_refund_id,
  s.payproc_refund_ids, s.refund_round, d.buyer_id, l.title as listing_title`;

/**
 * The stray payment whose `column` is `value`. `lock` (in a transaction)
 * takes its deal's row lock, then its own: the lock order of
 * `deal_rows.ts` (ledger row, deal row, money rows, deal events). Every
 * writer of a stray payment that goes on to record a deal event locks it
 * so — the webhook that records it holds the deal first too
 * (`applyDealPayment`), so the two never wait for each other crosswise.
 */
export async function strayRow(
  sql: Sql,
  column: "payproc_payment_intent_id" | "payproc_charge_id",
  value: string,
  options: { lock?: boolean } = {},
): Promise<StrayRow | null> {
  if (options.lock) {
    // The deal first (its id never changes, so reading it unlocked is safe).
    await sql.query(
      `select d.id from public.deals d
       where d.id in (select s.deal_id from public.deal_stray_payments s where s.${column} = $1)
       order by d.id
       for update of d`,
      [value],
    );
  }
  return await sql.maybeOne<StrayRow>(
    `select ${STRAY_COLUMNS}
     from public.deal_stray_payments s
       join public.deals d on d.id = s.deal_id
       join public.listings l on l.id = d.listing_id
     where s.${column} = $1${options.lock ? " for update of s" : ""}`,
    [value],
  );
}

/** What the notices say about stray payment `row`. */
export function factsOf(row: StrayRow): StrayPaymentFacts {
  return {
    dealId: row.deal_id,
    listingTitle: row.listing_title,
    amount: row.amount,
    currency: row.currency,
    reason: row.reason,
    paymentIntentId: row.payproc_payment_intent_id,
  };
}

/** The id of an expandable processor field. */
function idOf(field: string | { id: string } | null | undefined): string | null {
  return typeof field === "string" ? field : field?.id ?? null;
}

/** The payment intent a refund returns, if the processor names one. */
export function refundIntentId(refund: Stripe.Refund): string | null {
  return idOf(refund.payment_intent);
}

/** The charge a refund returns, if the processor names one. */
export function refundChargeId(refund: Stripe.Refund): string | null {
  return idOf(refund.charge);
}

/** Every refund of a payment intent (or of a charge), newest first, as the processor has them. */
export async function listStrayRefunds(
  payproc: Stripe,
  of: { payment_intent: string } | { charge: string },
): Promise<Stripe.Refund[]> {
  return await payproc.refunds.list({ ...of, limit: MAX_REFUNDS }).autoPagingToArray({
    limit: MAX_REFUNDS,
  });
}

/**
 * The idempotency key of a stray payment's refund: `stray-refund:<intent>`
 * for the whole payment, `stray-refund-rest:<intent>` for what is left
 * after a partial refund; `:<round>` appended from round 2 on.
 */
export function strayRefundKey(intentId: string, round: number, rest: boolean): string {
  const key = `${rest ? "stray-refund-rest" : "stray-refund"}:${intentId}`;
  return round > 1 ? `${key}:${round}` : key;
}

/** How a refund counts: toward the payment, maybe later, or not at all. */
type RefundCount = "succeeded" | "pending" | "dead";

function countOf(refund: Stripe.Refund, reversed: ReadonlySet<string>): RefundCount {
  if (reversed.has(refund.id)) return "dead";
  if (refund.status === "succeeded") return "succeeded";
  if (refund.status === "failed" || refund.status === "canceled") return "dead";
  // pending, requires_action, or a status this code does not know: the
  // money may still go, so it is neither counted as returned nor made again.
  return "pending";
}

/** Whether the server made `refund` (its metadata says so). */
function isOurs(refund: Stripe.Refund): boolean {
  return refund.metadata?.kind === "stray_payment";
}

/** Where a payment's refunds stand, in minor units. */
export interface RefundStanding {
  /** Succeeded refunds, newest first. */
  succeeded: Stripe.Refund[];
  /** Refunds still pending (or requiring action), newest first. */
  pending: Stripe.Refund[];
  /** The succeeded refunds cover the whole payment. */
  covered: boolean;
  /** Succeeded and pending refunds cover it, the succeeded alone do not. */
  waiting: boolean;
  /** What no refund that is not failed covers (0 when covered or waiting). */
  rest: number;
  /** Whether some refund that is not failed exists (the next refund is then of the rest). */
  partial: boolean;
}

/**
 * Where the refunds of a payment of `total` minor units stand; refunds in
 * `reversed` count as failed whatever their status says (a reading older
 * than the failure).
 */
export function refundStanding(
  total: number,
  refunds: readonly Stripe.Refund[],
  reversed: ReadonlySet<string> = new Set(),
): RefundStanding {
  const succeeded = refunds.filter((r) => countOf(r, reversed) === "succeeded");
  const pending = refunds.filter((r) => countOf(r, reversed) === "pending");
  const sum = (list: Stripe.Refund[]) => list.reduce((n, r) => n + r.amount, 0);
  const done = sum(succeeded);
  const live = done + sum(pending);
  return {
    succeeded,
    pending,
    covered: done >= total,
    waiting: done < total && live >= total,
    rest: Math.max(0, total - live),
    partial: live > 0,
  };
}

/** What {@linkcode settleStrayRefunds} made of a stray payment. */
export interface StraySettlement {
  /** The row's status now. */
  status: StrayStatus;
  /** The status it moved to, or null when it stayed. */
  moved: StrayStatus | null;
  /** The round now (the key of the next refund). */
  round: number;
  /** Where its refunds stand. */
  standing: RefundStanding;
  /** Refunds recorded as reversed by this call (each told to the admins). */
  reversed: string[];
  /** Notices written. */
  notices: NoticeOutcome[];
}

/**
 * In transaction `sql`, under its deal's lock and then its own (the lock
 * order of `deal_rows.ts`: a caller may hold its webhook event's ledger row
 * before, and nothing that comes after the deal): stray payment `intentId` as
 * `refunds` (every refund of the payment, read from the processor) make it
 * — see the module doc. Null when it is not a stray payment.
 */
export async function settleStrayRefunds(
  ctx: Context,
  sql: Sql,
  intentId: string,
  refunds: readonly Stripe.Refund[],
): Promise<StraySettlement | null> {
  const row = await strayRow(sql, "payproc_payment_intent_id", intentId, { lock: true });
  if (!row) return null;
  const own = refunds.filter((r) =>
    refundIntentId(r) === intentId ||
    (row.payproc_charge_id !== null && refundChargeId(r) === row.payproc_charge_id)
  );
  const reversedBefore = new Set(
    (await sql.query<{ id: string }>(
      `select payproc_object_id as id from public.deal_events
       where deal_id = $1 and cause = 'stray_payment_refund_reversed'
         and payproc_object_id is not null`,
      [row.deal_id],
    )).map((r) => r.id),
  );
  const counting = row.status === "refunded" || row.status === "refund_pending";
  const counted = new Set(counting ? row.payproc_refund_ids : []);
  const notices: NoticeOutcome[] = [];

  // Refunds that failed or were cancelled after they were made: one the row
  // counted on, or one of ours (its key is used up). Each is recorded once.
  const reversed: string[] = [];
  for (const refund of own) {
    if (countOf(refund, new Set()) !== "dead" || reversedBefore.has(refund.id)) continue;
    if (!counted.has(refund.id) && !isOurs(refund)) continue;
    const told = await recordReversal(ctx, sql, row, refund);
    if (told) {
      reversed.push(refund.id);
      notices.push(...told);
    }
  }
  const gone = new Set([...reversedBefore, ...reversed]);
  const standing = refundStanding(toMinorUnits(row.amount, row.currency), own, gone);
  const lostCounted = [...counted].some((id) => gone.has(id));

  let next: StrayStatus = row.status;
  if (standing.covered) next = "refunded";
  else if (standing.waiting) {
    next = row.status === "refunded" && !lostCounted ? "refunded" : "refund_pending";
  } else if (counting && lostCounted) next = "pending";
  const reopened = counting && next === "pending";
  const round = row.refund_round + (reversed.length > 0 || reopened ? 1 : 0);

  if (next === "refunded" && row.status !== "refunded") {
    notices.push(...await closeStrayPayment(ctx, sql, row, standing.succeeded, round));
  } else if (next === "refund_pending") {
    const waitingOn = standing.pending[0]!.id;
    const ids = [...standing.succeeded, ...standing.pending].map((r) => r.id);
    const same = row.status === "refund_pending" && row.payproc_refund_id === waitingOn &&
      row.refund_round === round && ids.join() === row.payproc_refund_ids.join();
    if (!same) {
      await sql.query(
        `update public.deal_stray_payments
         set status = 'refund_pending', payproc_refund_id = $2, payproc_refund_ids = $3,
           refund_round = $4, refunded_at = null, last_error = null
         where payproc_payment_intent_id = $1`,
        [intentId, waitingOn, ids, round],
      );
    }
  } else if (reopened) {
    const failure = own.find((r) => gone.has(r.id) && counted.has(r.id));
    await sql.query(
      `update public.deal_stray_payments
       set status = 'pending', payproc_refund_id = null, payproc_refund_ids = '{}',
         refunded_at = null, refund_round = $2, last_error = coalesce($3, last_error)
       where payproc_payment_intent_id = $1`,
      [intentId, round, failure ? failureText(failure) : null],
    );
  } else if (round !== row.refund_round) {
    // One of ours failed while the row did not count on it: a new key next time.
    const failure = own.find((r) => reversed.includes(r.id));
    await sql.query(
      `update public.deal_stray_payments
       set refund_round = $2, last_error = coalesce($3, last_error)
       where payproc_payment_intent_id = $1`,
      [intentId, round, failure ? failureText(failure) : null],
    );
  }
  return {
    status: next,
    moved: next === row.status ? null : next,
    round,
    standing,
    reversed,
    notices,
  };
}

/** Why a refund stopped counting, for `last_error`. */
function failureText(refund: Stripe.Refund): string {
  const reason = refund.failure_reason ? ` (${refund.failure_reason})` : "";
  return `Refund ${refund.id} ${refund.status}${reason} after it was made`.slice(0, 1000);
}

/** The key of the buyer's and the admins' notices of round `round`'s refund. */
function closedKey(intentId: string, round: number): string {
  return strayRefundKey(intentId, round, false);
}

/**
 * Stray payment `row` is `refunded` by `succeeded` (newest first): the row,
 * the deal event `stray_payment_refunded` (once per refund), the buyer and
 * every admin told (once per round).
 */
async function closeStrayPayment(
  ctx: Context,
  sql: Sql,
  row: StrayRow,
  succeeded: Stripe.Refund[],
  round: number,
): Promise<NoticeOutcome[]> {
  const intentId = row.payproc_payment_intent_id;
  const refundId = succeeded[0]!.id;
  const ids = succeeded.map((r) => r.id);
  await sql.query(
    `update public.deal_stray_payments
     set status = 'refunded', payproc_refund_id = $2, payproc_refund_ids = $3,
       refund_round = $4, refunded_at = now(), last_error = null
     where payproc_payment_intent_id = $1`,
    [intentId, refundId, ids, round],
  );
  await recordDealEvent(sql, row.deal_id, "stray_payment_refunded", refundId, {
    detail: { payment_intent: intentId, amount: row.amount, currency: row.currency, refunds: ids },
  });
  const facts = factsOf(row);
  const key = closedKey(intentId, round);
  const buyer = paymentReturnedNotice(facts);
  const outcomes = [
    await queueNotice(ctx, sql, {
      userId: row.buyer_id,
      type: "payments",
      title: buyer.title,
      body: buyer.body,
      link: `/deals/${row.deal_id}`,
      data: { dealId: row.deal_id, paymentIntentId: intentId, refundId },
      key,
      email: { emailType: "payment_returned", content: buyer.email },
    }),
  ];
  const admins = adminPaymentReturnedNotice({ ...facts, refundId });
  outcomes.push(
    ...await queueAdminAlert(ctx, sql, {
      key,
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

/**
 * Refund `refund` of stray payment `row` failed or was cancelled after it
 * was made: the deal event `stray_payment_refund_reversed` and every admin
 * told, once per refund. Null when it was recorded before.
 */
async function recordReversal(
  ctx: Context,
  sql: Sql,
  row: StrayRow,
  refund: Stripe.Refund,
): Promise<NoticeOutcome[] | null> {
  const intentId = row.payproc_payment_intent_id;
  const refundAmount = fromMinorUnits(refund.amount, row.currency);
  const recorded = await recordDealEvent(
    sql,
    row.deal_id,
    "stray_payment_refund_reversed",
    refund.id,
    {
      detail: {
        payment_intent: intentId,
        amount: refundAmount,
        currency: row.currency,
        status: refund.status,
        failure_reason: refund.failure_reason ?? null,
        round: row.refund_round,
      },
    },
  );
  if (!recorded) return null;
  const alert = adminPaymentReturnReversedNotice({
    ...factsOf(row),
    refundId: refund.id,
    refundAmount,
    refundStatus: refund.status ?? "failed",
    failureReason: refund.failure_reason ?? null,
    buyerWasTold: row.status === "refunded",
  });
  return await queueAdminAlert(ctx, sql, {
    key: `stray-refund-reversed:${refund.id}`,
    title: alert.title,
    body: alert.body,
    link: `/admin/deals/${row.deal_id}`,
    data: { dealId: row.deal_id, paymentIntentId: intentId, refundId: refund.id },
    emailType: "admin_payment_return_reversed",
    email: alert.email,
  });
}
