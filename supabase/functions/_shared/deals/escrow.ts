/**
 * The buyer's ways to pay a deal into escrow — a payment intent for the
 * client payment form (`create-deal-payment`) or a hosted checkout in payment
 * mode (`create-deal-checkout`) — and `payment-status`'s reconciliation.
 * One way at a time: switching cancels (or expires) the other at the
 * processor first, so a deal is never paid twice. Each creation has an
 * idempotency key derived from the deal, its amount and what it replaces,
 * so a double click gets the same object. The processor is called outside
 * any transaction; the deal row is then updated only if nobody changed its
 * payment meanwhile.
 *
 * @module
 */
import type Stripe from "stripe";
import type { Context } from "../platform/context.ts";
import { conflict, forbidden, HttpError, notFound } from "../platform/errors.ts";
import { sha256Hex } from "../lib/hex.ts";
import { isRefusal, orNullIfMissing } from "../platform/payproc_calls.ts";
import { processorCurrency, toMinorUnits } from "../lib/money.ts";
import { type DealRow, findDeal, paymentIntentIdOf, transferGroupOf } from "./deal_rows.ts";
import {
  applyDealPayment,
  type PaymentRead,
  type PaymentRefusal,
  readDealPayment,
} from "./deal_payment.ts";
import { payprocFor } from "../platform/payproc.ts";

/** Payment intent states in which the buyer can still pay with the same intent. */
const PAYABLE: readonly Stripe.PaymentIntent.Status[] = [
  "requires_payment_method",
  "requires_confirmation",
  "requires_action",
];

/** The deal, when `userId` is its buyer (the seller gets 403) and it still awaits payment. */
export async function buyersPendingDeal(
  ctx: Context,
  dealId: string,
  userId: string,
): Promise<DealRow> {
  const deal = await findDeal(ctx.db, dealId);
  if (!deal) throw notFound(`Deal "${dealId}" does not exist`);
  if (deal.buyer_id !== userId) throw forbidden("Only the deal's buyer pays for it");
  requirePendingPayment(deal);
  return deal;
}

function requirePendingPayment(deal: DealRow): void {
  if (deal.status === "pending_payment") return;
  if (deal.status === "in_diligence") {
    throw conflict(
      "Cannot take a payment yet: the buyer is in due diligence; confirm it first (rpc confirm_diligence)",
      { reason: "in_diligence", status: deal.status },
    );
  }
  const paid = deal.status !== "cancelled";
  throw conflict(
    paid
      ? `Cannot take a payment: the deal is already paid (${deal.status.replace("_", " ")})`
      : "Cannot take a payment: the deal was cancelled",
    { reason: paid ? "already_paid" : "cancelled", status: deal.status },
  );
}

function alreadyPaid(processing: boolean): HttpError {
  return conflict(
    processing
      ? "Cannot take another payment: the buyer's payment is being processed"
      : "Cannot take another payment: the deal is already paid; payment-status shows it",
    { reason: processing ? "payment_processing" : "already_paid" },
  );
}

/**
 * The client secret of the deal's payment intent: the existing one while it
 * can still be paid, else a new one (an open hosted checkout is expired
 * first).
 */
export async function ensurePaymentIntent(ctx: Context, deal: DealRow): Promise<string> {
  const payproc = await payprocFor(ctx);
  const amount = toMinorUnits(deal.amount, deal.currency);
  const currency = processorCurrency(deal.currency);
  if (deal.payproc_payment_intent_id) {
    const current = await orNullIfMissing(
      payproc.paymentIntents.retrieve(deal.payproc_payment_intent_id),
    );
    if (current && current.amount === amount && current.currency === currency) {
      if (PAYABLE.includes(current.status) && current.client_secret) return current.client_secret;
      if (current.status === "succeeded" || current.status === "processing") {
        throw alreadyPaid(current.status === "processing");
      }
    }
  } else if (deal.payproc_checkout_session_id) {
    await closeCheckout(ctx, deal.payproc_checkout_session_id);
  }
  const replaces = deal.payproc_payment_intent_id ?? deal.payproc_checkout_session_id ?? "first";
  const intent = await payproc.paymentIntents.create(
    {
      amount,
      currency,
      automatic_payment_methods: { enabled: true },
      transfer_group: transferGroupOf(deal.id),
      metadata: { deal_id: deal.id, buyer_id: deal.buyer_id },
      description: `Marketplace deal ${deal.id}`,
    },
    { idempotencyKey: `deal-payment:${deal.id}:${amount}${currency}:${replaces}` },
  );
  // Stored only if nobody changed the deal's payment meanwhile (another
  // intent, or a hosted checkout opened while this one was being created).
  const stored = await ctx.db.maybeOne(
    `update public.deals
     set payproc_payment_intent_id = $2, payment_status = $3, payment_synced_at = now()
     where id = $1 and status = 'pending_payment'
       and (payproc_payment_intent_id is not distinct from $4 or payproc_payment_intent_id = $2)
       and payproc_checkout_session_id is not distinct from $5
     returning id`,
    [
      deal.id,
      intent.id,
      intent.status,
      deal.payproc_payment_intent_id,
      deal.payproc_checkout_session_id,
    ],
  );
  if (!stored) {
    // Ours lost: it must not stay payable beside the deal's real payment.
    await cancelIntent(ctx, intent.id);
    throw changedMeanwhile();
  }
  return intent.client_secret!;
}

/** Expires an open hosted checkout; 409 when it was completed (the deal is being paid). */
async function closeCheckout(ctx: Context, sessionId: string): Promise<void> {
  const payproc = await payprocFor(ctx);
  const session = await orNullIfMissing(payproc.checkout.sessions.retrieve(sessionId));
  if (!session || session.status === "expired") return;
  if (session.status === "complete") throw alreadyPaid(session.payment_status !== "paid");
  try {
    await payproc.checkout.sessions.expire(sessionId);
  } catch (error) {
    // Completed in the meantime: the deal is being paid.
    if (isRefusal(error)) throw alreadyPaid(true);
    throw error;
  }
}

/** Cancels a payment intent nobody paid; 409 when it was paid or is being processed. */
async function cancelIntent(ctx: Context, intentId: string): Promise<void> {
  const payproc = await payprocFor(ctx);
  const intent = await orNullIfMissing(payproc.paymentIntents.retrieve(intentId));
  if (!intent || intent.status === "canceled") return;
  if (intent.status === "succeeded" || intent.status === "processing") {
    throw alreadyPaid(intent.status === "processing");
  }
  try {
    await payproc.paymentIntents.cancel(intentId, { cancellation_reason: "abandoned" });
  } catch (error) {
    if (isRefusal(error)) throw alreadyPaid(true);
    throw error;
  }
}

function changedMeanwhile(): HttpError {
  return conflict("Cannot take the payment: the deal's payment changed meanwhile; try again", {
    reason: "changed_meanwhile",
  });
}

/** Where a hosted deal checkout returns to. */
export interface CheckoutRedirects {
  successUrl: string;
  cancelUrl: string;
}

/**
 * The url of the deal's hosted checkout: the open one, else a new one (a
 * payment intent from `create-deal-payment` is cancelled first).
 */
export async function ensureCheckoutSession(
  ctx: Context,
  deal: DealRow,
  buyerEmail: string | null,
  redirects: CheckoutRedirects,
): Promise<string> {
  const payproc = await payprocFor(ctx);
  const amount = toMinorUnits(deal.amount, deal.currency);
  const currency = processorCurrency(deal.currency);
  if (deal.payproc_checkout_session_id) {
    const current = await orNullIfMissing(
      payproc.checkout.sessions.retrieve(deal.payproc_checkout_session_id),
    );
    if (current?.status === "open" && current.url && current.amount_total === amount) {
      return current.url;
    }
    if (current?.status === "complete") throw alreadyPaid(current.payment_status !== "paid");
  }
  if (deal.payproc_payment_intent_id) await cancelIntent(ctx, deal.payproc_payment_intent_id);
  const listing = await ctx.db.one<{ title: string }>(
    "select title from public.listings where id = $1",
    [deal.listing_id],
  );
  const replaces = deal.payproc_checkout_session_id ?? deal.payproc_payment_intent_id ?? "first";
  const session = await payproc.checkout.sessions.create(
    {
      mode: "payment",
      line_items: [{
        quantity: 1,
        price_data: { currency, unit_amount: amount, product_data: { name: listing.title } },
      }],
      payment_intent_data: {
        transfer_group: transferGroupOf(deal.id),
        metadata: { deal_id: deal.id, buyer_id: deal.buyer_id },
        description: `Marketplace deal ${deal.id}`,
      },
      client_reference_id: deal.buyer_id,
      ...(buyerEmail ? { customer_email: buyerEmail } : {}),
      metadata: { deal_id: deal.id },
      success_url: redirects.successUrl,
      cancel_url: redirects.cancelUrl,
    },
    {
      idempotencyKey: `deal-checkout:${deal.id}:${amount}${currency}:${replaces}:${await digest(
        `${redirects.successUrl}\n${redirects.cancelUrl}`,
      )}`,
    },
  );
  if (!session.url) {
    throw new HttpError(502, "upstream_rejected", "The payment processor returned no checkout url");
  }
  // Stored only if nobody changed the deal's payment meanwhile: the intent
  // cancelled above is the one forgotten here, never one made since.
  const stored = await ctx.db.maybeOne(
    `update public.deals
     set payproc_checkout_session_id = $2, payproc_payment_intent_id = null,
         payment_status = null, payment_synced_at = now()
     where id = $1 and status = 'pending_payment'
       and (payproc_checkout_session_id is not distinct from $3 or payproc_checkout_session_id = $2)
       and payproc_payment_intent_id is not distinct from $4
     returning id`,
    [deal.id, session.id, deal.payproc_checkout_session_id, deal.payproc_payment_intent_id],
  );
  if (!stored) {
    // Ours lost: it must not stay payable beside the deal's real payment.
    await closeCheckout(ctx, session.id);
    throw changedMeanwhile();
  }
  return session.url;
}

async function digest(text: string): Promise<string> {
  return (await sha256Hex(text)).slice(0, 24);
}

/**
 * Brings a deal still pending payment up to date with the processor (its
 * intent, or its hosted checkout's): a payment whose webhook has not arrived
 * yet funds the deal now. Returns the deal as stored afterwards.
 */
export async function reconcilePayment(ctx: Context, deal: DealRow): Promise<DealRow> {
  if (deal.status !== "pending_payment") return deal;
  let read: PaymentRead | PaymentRefusal | null = null;
  if (deal.payproc_payment_intent_id) {
    read = await readDealPayment(ctx, deal.payproc_payment_intent_id);
  } else if (deal.payproc_checkout_session_id) {
    const payproc = await payprocFor(ctx);
    const session = await orNullIfMissing(
      payproc.checkout.sessions.retrieve(deal.payproc_checkout_session_id),
    );
    const intent = session ? paymentIntentIdOf(session) : null;
    if (session && intent) read = await readDealPayment(ctx, intent, { sessionId: session.id });
  }
  if (read === null || "refusal" in read) return deal;
  const payment = read;
  const applied = await ctx.db.tx((sql) => applyDealPayment(ctx, sql, payment));
  return applied.deal ?? deal;
}
