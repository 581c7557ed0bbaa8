/**
 * Webhook handlers of what happens to a deal's money after it was paid:
 * `charge.refunded` (a refund, ours or the dashboard's), `charge.dispute.created`
 * and `charge.dispute.closed` (the buyer's bank), `transfer.reversed` (a
 * payout taken back). Each re-reads its object from the processor and
 * decides from that, not from the event: a dispute is open, won or lost as
 * the processor says now, so events arriving late or twice change nothing.
 *
 * @module
 */
import type Stripe from "stripe";
import type { Sql } from "../db.ts";
import { orNullIfMissing } from "../billing/processor.ts";
import {
  applied,
  type EventOf,
  skipped,
  type WebhookHandler,
  type WebhookHandlers,
  type WebhookResult,
} from "../billing/webhook_types.ts";
import { findDealByCharge, transitionDeal } from "./deal_rows.ts";
import { completeRefund, markPayoutReversed } from "./refunds.ts";

type Read<T> = { object: T } | { refusal: string };

/** A refunded charge, and its newest refund. */
interface ChargeRead {
  charge: Stripe.Charge;
  refundId: string | null;
}

const onChargeRefunded: WebhookHandler<EventOf<"charge.refunded">, Read<ChargeRead>> = {
  async read({ event, ctx }) {
    const payproc = await ctx.payproc();
    const charge = await orNullIfMissing(payproc.charges.retrieve(event.data.object.id));
    if (!charge) return { refusal: `charge "${event.data.object.id}" does not exist` };
    const refunds = await payproc.refunds.list({ charge: charge.id, limit: 1 });
    return { object: { charge, refundId: refunds.data[0]?.id ?? null } };
  },
  async write({ sql, read, ctx }) {
    if ("refusal" in read) return skipped(read.refusal);
    const { charge, refundId } = read.object;
    const deal = await findDealByCharge(sql, charge.id);
    if (!deal) return skipped("no deal holds this charge");
    if (!charge.refunded || refundId === null) {
      return skipped("a partial refund: deals are refunded in full only");
    }
    return await completeRefund(ctx, sql, deal.id, refundId, null)
      ? applied(`deal ${deal.id} refunded`)
      : applied("already up to date");
  },
};

/** Dispute statuses while the bank has not decided. */
const OPEN_DISPUTE: readonly string[] = [
  "warning_needs_response",
  "warning_under_review",
  "needs_response",
  "under_review",
];

/** Applies a dispute as the processor has it now (open, won or lost) to its deal. */
async function applyDispute(sql: Sql, dispute: Stripe.Dispute): Promise<WebhookResult> {
  const chargeId = typeof dispute.charge === "string" ? dispute.charge : dispute.charge.id;
  const deal = await findDealByCharge(sql, chargeId, { lock: true });
  if (!deal) return skipped("no deal holds the disputed charge");
  const move = (to: "disputed" | "funded" | "refunded", cause: string) =>
    transitionDeal(sql, deal.id, to, cause, { payprocObject: dispute.id })
      .then(() => applied(`deal ${deal.id} ${to}`));
  if (OPEN_DISPUTE.includes(dispute.status)) {
    if (deal.status === "funded" || deal.status === "in_handover") {
      return await move("disputed", "dispute_opened");
    }
    if (deal.status === "disputed") return applied("already up to date");
    return skipped(`a dispute on a deal that is ${deal.status}: handle it at the processor`);
  }
  if (dispute.status === "lost") {
    if (["disputed", "funded", "in_handover"].includes(deal.status)) {
      return await move("refunded", "dispute_lost");
    }
    return applied("already up to date");
  }
  // won, warning_closed: the money stays (or is back) in escrow.
  if (deal.status === "disputed") return await move("funded", "dispute_won");
  return applied("already up to date");
}

type DisputeEventType =
  | "charge.dispute.created"
  | "charge.dispute.closed"
  | "charge.dispute.updated";

const onDispute: WebhookHandler<EventOf<DisputeEventType>, Read<Stripe.Dispute>> = {
  async read({ event, ctx }) {
    const payproc = await ctx.payproc();
    const dispute = await orNullIfMissing(payproc.disputes.retrieve(event.data.object.id));
    return dispute ? { object: dispute } : { refusal: "the dispute does not exist" };
  },
  async write({ sql, read }) {
    if ("refusal" in read) return skipped(read.refusal);
    return await applyDispute(sql, read.object);
  },
};

const onTransferReversed: WebhookHandler<EventOf<"transfer.reversed">, Read<Stripe.Transfer>> = {
  async read({ event, ctx }) {
    const payproc = await ctx.payproc();
    const transfer = await orNullIfMissing(payproc.transfers.retrieve(event.data.object.id));
    return transfer ? { object: transfer } : { refusal: "the transfer does not exist" };
  },
  async write({ sql, read }) {
    if ("refusal" in read) return skipped(read.refusal);
    const transfer = read.object;
    if (transfer.amount_reversed < transfer.amount) {
      return skipped("a partial reversal: payouts are taken back in full only");
    }
    const marked = await markPayoutReversed(
      sql,
      transfer.id,
      transfer.reversals.data[0]?.id ?? null,
    );
    return marked ? applied("payout reversed") : applied("already up to date or not a payout");
  },
};

/** Handlers of refunds, disputes and reversals of deal money. */
export const DEAL_SETTLEMENT_EVENT_HANDLERS: WebhookHandlers = {
  "charge.refunded": onChargeRefunded,
  "charge.dispute.created": onDispute,
  "charge.dispute.updated": onDispute,
  "charge.dispute.closed": onDispute,
  "transfer.reversed": onTransferReversed,
};
