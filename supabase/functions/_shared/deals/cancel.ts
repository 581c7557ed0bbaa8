/**
 * Cancelling a deal before it is paid, without racing its payment: the
 * processor first, then the deal.
 *
 * 1. Stop the payment at the processor, outside any transaction: the deal's
 *    payment intent is cancelled and its hosted checkout expired. If the
 *    processor says the payment already succeeded, the deal is funded
 *    instead (as `payment-status` reconciles) and the caller gets 409
 *    `already_paid`; a payment still being processed (a bank debit, a 3-D
 *    Secure step the processor will not cancel) is 409 `payment_processing`.
 * 2. Cancel the deal in a short transaction under its row lock — only if its
 *    payment objects are still the ones stopped in step 1. When they changed
 *    meanwhile (the buyer opened a checkout while we cancelled the intent),
 *    step 1 runs again for the new ones; after three rounds, 409
 *    `changed_meanwhile`.
 *
 * A deal that never started a payment skips step 1. A cancelled deal
 * answers again as it is (`alreadyCancelled`).
 *
 * @module
 */
import { isRefusal, orNullIfMissing } from "../platform/payproc_calls.ts";
import type { Context } from "../platform/context.ts";
import { conflict, type HttpError } from "../platform/errors.ts";
import { type DealRow, findDeal, paymentIntentIdOf, transitionDeal } from "./deal_rows.ts";
import { applyDealPayment, readDealPayment } from "./deal_payment.ts";
import { payprocFor } from "../platform/payproc.ts";

/** Rounds of "stop the payment, then cancel" before giving up on a deal that keeps changing. */
const ROUNDS = 3;

/** A cancellation request. */
export interface CancelRequest {
  dealId: string;
  /** Who asks: the buyer, the seller or an admin. */
  actor: string;
  reason?: string;
}

/** What `cancel-deal` answers. */
export interface CancelAnswer {
  dealId: string;
  status: "cancelled";
  alreadyCancelled: boolean;
  payment: { paymentIntent: "cancelled" | "none"; checkoutSession: "expired" | "none" };
}

/** Cancels the deal once; see the module doc. */
export async function cancelDeal(ctx: Context, request: CancelRequest): Promise<CancelAnswer> {
  for (let round = 1; round <= ROUNDS; round++) {
    const deal = (await findDeal(ctx.db, request.dealId))!;
    if (deal.status === "cancelled") return answer(deal, true);
    refuseUnlessPending(deal);
    const payment = {
      paymentIntent: deal.payproc_payment_intent_id
        ? await stopIntent(ctx, deal, deal.payproc_payment_intent_id)
        : "none" as const,
      checkoutSession: deal.payproc_checkout_session_id
        ? await stopCheckout(ctx, deal, deal.payproc_checkout_session_id)
        : "none" as const,
    };
    const cancelled = await ctx.db.tx(async (sql) => {
      const current = (await findDeal(sql, deal.id, { lock: true }))!;
      if (current.status === "cancelled") return "already" as const;
      refuseUnlessPending(current);
      if (
        current.payproc_payment_intent_id !== deal.payproc_payment_intent_id ||
        current.payproc_checkout_session_id !== deal.payproc_checkout_session_id
      ) {
        return "changed" as const;
      }
      await transitionDeal(sql, deal.id, "cancelled", "cancelled", {
        actor: request.actor,
        detail: { reason: request.reason ?? null, payment },
      });
      return "cancelled" as const;
    });
    if (cancelled === "already") return answer(deal, true);
    if (cancelled === "cancelled") return { ...answer(deal, false), payment };
  }
  throw conflict("Cannot cancel the deal: its payment keeps changing; try again", {
    reason: "changed_meanwhile",
  });
}

function answer(deal: DealRow, alreadyCancelled: boolean): CancelAnswer {
  return {
    dealId: deal.id,
    status: "cancelled",
    alreadyCancelled,
    payment: { paymentIntent: "none", checkoutSession: "none" },
  };
}

/**
 * 409 unless the deal still awaits payment, or is in due diligence (which
 * takes no payment: nothing to stop at the processor). A cancelled one is
 * answered before this.
 */
function refuseUnlessPending(deal: DealRow): void {
  if (deal.status === "pending_payment" || deal.status === "in_diligence") return;
  throw conflict(`Cannot cancel a deal that is ${deal.status.replace("_", " ")}`, {
    reason: "already_paid",
    status: deal.status,
  });
}

function processing(): HttpError {
  return conflict(
    "Cannot cancel the deal: the buyer's payment is being processed; try again once it settles",
    { reason: "payment_processing" },
  );
}

/**
 * Cancels payment intent `intentId` at the processor. A payment that
 * succeeded funds the deal and answers 409 `already_paid`.
 */
async function stopIntent(
  ctx: Context,
  deal: DealRow,
  intentId: string,
): Promise<"cancelled" | "none"> {
  const payproc = await payprocFor(ctx);
  let intent = await orNullIfMissing(payproc.paymentIntents.retrieve(intentId));
  if (!intent || intent.status === "canceled") return "none";
  if (intent.status !== "succeeded") {
    try {
      await payproc.paymentIntents.cancel(intentId, {
        cancellation_reason: "requested_by_customer",
      });
      return "cancelled";
    } catch (error) {
      if (!isRefusal(error)) throw error;
      // Refused: it moved on meanwhile. What is it now?
      intent = await payproc.paymentIntents.retrieve(intentId);
      if (intent.status === "canceled") return "cancelled";
    }
  }
  if (intent.status === "succeeded") throw await fundInstead(ctx, deal, intent.id, null);
  throw processing();
}

/**
 * Expires hosted checkout `sessionId` at the processor. A checkout that was
 * paid funds the deal and answers 409 `already_paid`.
 */
async function stopCheckout(
  ctx: Context,
  deal: DealRow,
  sessionId: string,
): Promise<"expired" | "none"> {
  const payproc = await payprocFor(ctx);
  let session = await orNullIfMissing(payproc.checkout.sessions.retrieve(sessionId));
  if (!session || session.status === "expired") return "none";
  if (session.status === "open") {
    try {
      await payproc.checkout.sessions.expire(sessionId);
      return "expired";
    } catch (error) {
      if (!isRefusal(error)) throw error;
      session = await payproc.checkout.sessions.retrieve(sessionId);
      if (session.status === "expired") return "expired";
    }
  }
  if (session.payment_status === "paid") {
    throw await fundInstead(ctx, deal, paymentIntentIdOf(session), session.id);
  }
  throw processing();
}

/**
 * The payment succeeded after all: funds the deal with it (the webhook's
 * path), and answers the 409 the caller gets.
 */
async function fundInstead(
  ctx: Context,
  deal: DealRow,
  intentId: string | null,
  sessionId: string | null,
): Promise<HttpError> {
  if (intentId) {
    const read = await readDealPayment(ctx, intentId, { sessionId });
    if (!("refusal" in read)) await ctx.db.tx((sql) => applyDealPayment(ctx, sql, read));
  }
  const now = await findDeal(ctx.db, deal.id);
  return conflict("Cannot cancel the deal: the buyer's payment already succeeded", {
    reason: "already_paid",
    status: now?.status ?? deal.status,
  });
}
