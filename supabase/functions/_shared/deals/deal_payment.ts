/**
 * A deal's escrow payment: reading its payment intent from the processor
 * (never trusting a webhook's copy) and applying what was read — mirror the
 * processor's status, and fund the deal once when the payment succeeded.
 * Used by the webhook (`payment_intent.*`, `checkout.session.completed` in
 * payment mode) and by `payment-status`, which reconciles a deal still
 * pending payment. Reads happen before, writes in the caller's short
 * transaction under the deal's row lock, so any order or repetition of
 * events funds the deal exactly once.
 *
 * @module
 */
import type Stripe from "stripe";
import type { Context } from "../platform/context.ts";
import type { Sql } from "../platform/db.ts";
import { processorCurrency, toMinorUnits } from "../lib/money.ts";
import { orNullIfMissing } from "../platform/payproc_calls.ts";
import {
  chargeIdOf,
  DEAL_COLUMNS,
  dealIdOf,
  type DealRow,
  findDeal,
  transitionDeal,
} from "./deal_rows.ts";
import { queuePaymentNotices } from "./payment_notices.ts";
import { recordStrayPayment, type StrayReason } from "./stray_payments.ts";
import { payprocFor } from "../platform/payproc.ts";

/** A payment intent read from the processor, and what ties it to its deal. */
export interface PaymentRead {
  dealId: string;
  intent: Stripe.PaymentIntent;
  /** The hosted checkout that created the intent, when it came from one. */
  sessionId: string | null;
  /** When it was read (taken before the request). */
  readAt: Date;
}

/** Why a payment cannot be applied (recorded as the event's detail). */
export interface PaymentRefusal {
  refusal: string;
}

/**
 * Reads payment intent `intentId`, and the checkout session behind it when
 * the deal paid through one (`sessionId` when the caller already knows it).
 */
export async function readDealPayment(
  ctx: Context,
  intentId: string,
  options: { sessionId?: string | null } = {},
): Promise<PaymentRead | PaymentRefusal> {
  const payproc = await payprocFor(ctx);
  const readAt = new Date();
  const intent = await orNullIfMissing(payproc.paymentIntents.retrieve(intentId));
  if (!intent) return { refusal: `payment intent "${intentId}" does not exist at the processor` };
  const dealId = dealIdOf(intent.metadata);
  if (!dealId) return { refusal: "the payment intent is not a deal's payment" };
  let sessionId = options.sessionId ?? null;
  if (sessionId === null) {
    const deal = await findDeal(ctx.db, dealId);
    if (deal && deal.payproc_payment_intent_id !== intent.id && deal.payproc_checkout_session_id) {
      const sessions = await payproc.checkout.sessions.list({
        payment_intent: intent.id,
        limit: 1,
      });
      sessionId = sessions.data[0]?.id ?? null;
    }
  }
  return { dealId, intent, sessionId, readAt };
}

/** What {@linkcode applyDealPayment} did. */
export type PaymentApplied =
  | { result: "funded" | "failed" | "updated" | "unchanged"; deal: DealRow }
  | { result: "stray"; reason: StrayReason; recorded: boolean; deal: DealRow }
  | { result: "refused"; reason: string; deal: DealRow | null };

/**
 * Applies a read payment in transaction `sql`: mirrors its status (unless a
 * newer read is stored), funds a deal pending payment when it succeeded
 * (commission frozen by `transition_deal`; `payment_received` notices), and
 * tells the buyer when an attempt failed (`payment_failed`). A payment that
 * succeeded but cannot fund its deal — cancelled, paid by another payment,
 * not its payment — is recorded stray and refunded (`stray_payments.ts`);
 * it never touches the deal's own payment columns.
 */
export async function applyDealPayment(
  ctx: Context,
  sql: Sql,
  read: PaymentRead,
): Promise<PaymentApplied> {
  const { intent } = read;
  // The deal's row lock before anything of it is written — its stray payment
  // row, its deal events (the lock order of `deal_rows.ts`; the webhook's
  // ledger row is the only lock a caller holds before it).
  const deal = await findDeal(sql, read.dealId, { lock: true });
  if (!deal) return { result: "refused", reason: `deal "${read.dealId}" does not exist`, deal };
  const ours = deal.payproc_payment_intent_id === intent.id ||
    (read.sessionId !== null && read.sessionId === deal.payproc_checkout_session_id);
  const matches = intent.amount === toMinorUnits(deal.amount, deal.currency) &&
    intent.currency === processorCurrency(deal.currency);
  const charge = chargeIdOf(intent);
  if (intent.status === "succeeded") {
    const stray = strayReasonOf(deal, { ours, matches, charge });
    if (stray) {
      const recorded = await recordStrayPayment(ctx, sql, deal.id, intent, stray);
      return { result: "stray", reason: stray, recorded, deal };
    }
  }
  if (!ours) {
    return { result: "refused", reason: "the payment intent is not this deal's payment", deal };
  }
  if (!matches) {
    return {
      result: "refused",
      reason: "the payment's amount or currency is not the deal's",
      deal,
    };
  }
  // A payment intent never leaves succeeded, so a read that saw it succeed
  // is news however early it started: a reconcile that started later but
  // was answered first (still processing) must not keep the deal from
  // recording the charge its payout and disputes name.
  const fresh = deal.payment_synced_at === null || read.readAt >= deal.payment_synced_at ||
    (intent.status === "succeeded" && deal.payment_status !== "succeeded");
  let current = deal;
  if (fresh) {
    current = await sql.one<DealRow>(
      `update public.deals d set
         payproc_payment_intent_id = $2,
         payment_status = $3,
         payment_synced_at = greatest(d.payment_synced_at, $4),
         payproc_charge_id = case when $3 = 'succeeded' then coalesce(d.payproc_charge_id, $5)
                                  else d.payproc_charge_id end
       where d.id = $1
       returning ${DEAL_COLUMNS}`,
      [deal.id, intent.id, intent.status, read.readAt, charge],
    );
  }
  if (intent.status === "succeeded") {
    if (deal.status !== "pending_payment") return { result: "unchanged", deal: current };
    const funded = await transitionDeal(sql, deal.id, "funded", "payment_succeeded", {
      payprocObject: intent.id,
    });
    await queuePaymentNotices(ctx, sql, deal.id, "payment_received");
    return { result: "funded", deal: funded };
  }
  if (
    intent.status === "requires_payment_method" && intent.last_payment_error &&
    deal.status === "pending_payment"
  ) {
    await queuePaymentNotices(ctx, sql, deal.id, "payment_failed");
    return { result: "failed", deal: current };
  }
  return { result: fresh ? "updated" : "unchanged", deal: current };
}

/**
 * Why deal `deal` cannot take a succeeded payment, or null when it can (it
 * funds the deal, or it is the payment that already did).
 */
function strayReasonOf(
  deal: DealRow,
  payment: { ours: boolean; matches: boolean; charge: string | null },
): StrayReason | null {
  if (!payment.ours) return "not_the_deal_payment";
  if (!payment.matches) return "amount_mismatch";
  if (deal.status === "cancelled") return "deal_cancelled";
  // Funded by another charge: this is a second payment of the same deal.
  if (deal.payproc_charge_id !== null && deal.payproc_charge_id !== payment.charge) {
    return "deal_already_paid";
  }
  return null;
}
