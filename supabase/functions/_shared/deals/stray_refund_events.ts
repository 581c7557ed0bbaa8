/**
 * Webhook handlers of a refund that changed after it was made:
 * `charge.refund.updated` (a pending refund succeeded, failed or was
 * cancelled; a succeeded one failed) and `refund.failed`. For the refund of
 * a stray payment (`stray_refunds.ts`), each re-reads the refund and every
 * other refund of its payment from the processor — never trusting the
 * payload — and settles the payment as they stand now: closed once
 * succeeded refunds cover it, reopened (and the admins told, once per
 * refund) when one it counted on failed. Events late, twice or out of
 * order change nothing: failed is final, and a reading that misses a
 * refund never moves the payment back.
 *
 * Refunds of a deal's own payment are not handled here (skipped).
 *
 * @module
 */
import type Stripe from "stripe";
import { orNullIfMissing } from "../platform/payproc_calls.ts";
import {
  applied,
  type EventOf,
  skipped,
  type WebhookHandler,
  type WebhookHandlers,
} from "../payproc_webhook/types.ts";
import { payprocFor } from "../platform/payproc.ts";
import {
  listStrayRefunds,
  refundChargeId,
  refundIntentId,
  settleStrayRefunds,
  strayRow,
} from "./stray_refunds.ts";

type Read<T> = { object: T } | { refusal: string };

/** The refund an event names, and every refund of its payment (newest first). */
interface RefundRead {
  refund: Stripe.Refund;
  refunds: Stripe.Refund[];
}

type RefundEventType = "charge.refund.updated" | "refund.failed";

const onRefundChanged: WebhookHandler<EventOf<RefundEventType>, Read<RefundRead>> = {
  async read({ event, ctx }) {
    const payproc = await payprocFor(ctx);
    const id = event.data.object.id;
    const refund = await orNullIfMissing(payproc.refunds.retrieve(id));
    if (!refund) return { refusal: `refund "${id}" does not exist` };
    const intentId = refundIntentId(refund);
    const chargeId = refundChargeId(refund);
    const refunds = intentId
      ? await listStrayRefunds(payproc, { payment_intent: intentId })
      : chargeId
      ? await listStrayRefunds(payproc, { charge: chargeId })
      : [];
    // The list was read last; the refund itself is in it unless the list is cut short.
    const all = refunds.some((r) => r.id === refund.id) ? refunds : [refund, ...refunds];
    return { object: { refund, refunds: all } };
  },
  async write({ sql, read, ctx }) {
    if ("refusal" in read) return skipped(read.refusal);
    const { refund, refunds } = read.object;
    const intentId = refundIntentId(refund);
    const chargeId = refundChargeId(refund);
    const stray = (intentId ? await strayRow(sql, "payproc_payment_intent_id", intentId) : null) ??
      (chargeId ? await strayRow(sql, "payproc_charge_id", chargeId) : null);
    if (!stray) return skipped("not a refund of a payment a deal could not take");
    const settled = await settleStrayRefunds(
      ctx,
      sql,
      stray.payproc_payment_intent_id,
      refunds,
    );
    const payment = `a payment of deal ${stray.deal_id} it could not take`;
    if (settled?.moved === "pending") {
      return applied(`the refund of ${payment} failed: it is refunded again`);
    }
    if (settled?.moved === "refunded") return applied(`${payment} was refunded`);
    if (settled?.moved === "refund_pending") return applied(`the refund of ${payment} is pending`);
    if (settled && settled.reversed.length > 0) {
      return applied(`a refund of ${payment} failed: the admins were told`);
    }
    return applied("already up to date");
  },
};

/** Handlers of refunds that changed after they were made (stray payments' refunds). */
export const STRAY_REFUND_EVENT_HANDLERS: WebhookHandlers = {
  "charge.refund.updated": onRefundChanged,
  "refund.failed": onRefundChanged,
};
