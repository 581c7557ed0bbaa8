/**
 * Webhook handlers of what happens to a deal's money after it was paid:
 * `charge.refunded` (a refund, ours or the dashboard's; also of a stray
 * payment), `charge.dispute.created`, `.updated` and `.closed` (the buyer's
 * bank; after the money left escrow they reach the admins), `transfer.reversed`
 * (a payout taken back), `transfer.created` and `.updated` (a transfer to
 * the seller of a deal that is refunded reaches the admins, once). Each re-reads its object from the processor and
 * decides from that, not from the event: a dispute is open, won or lost as
 * the processor says now, so events arriving late or twice change nothing.
 *
 * @module
 */
import type Stripe from "stripe";
import type { Context } from "../platform/context.ts";
import type { Sql } from "../platform/db.ts";
import { orNullIfMissing } from "../platform/payproc_calls.ts";
import {
  applied,
  type EventOf,
  skipped,
  type WebhookHandler,
  type WebhookHandlers,
  type WebhookResult,
} from "../payproc_webhook/types.ts";
import {
  dealIdOf,
  dealIdOfGroup,
  findDeal,
  findDealByCharge,
  transitionDeal,
} from "./deal_rows.ts";
import { currencyCode, fromMinorUnits } from "../lib/money.ts";
import { recordPayoutAfterRefund } from "./late_payouts.ts";
import { OPEN_DISPUTE, recordLateDispute } from "./late_disputes.ts";
import { completeRefund, markPayoutReversed } from "./refunds.ts";
import { oweRepayout } from "./repayouts.ts";
import { holdbackOwed, settlementsOf } from "./settlements.ts";
import { strayPaymentOfCharge } from "./stray_payments.ts";
import { listStrayRefunds, settleStrayRefunds } from "./stray_refunds.ts";
import { payprocFor } from "../platform/payproc.ts";

type Read<T> = { object: T } | { refusal: string };

/** A refunded charge, its newest refund, and all of its refunds (newest first). */
interface ChargeRead {
  charge: Stripe.Charge;
  refundId: string | null;
  refunds: Stripe.Refund[];
}

const onChargeRefunded: WebhookHandler<EventOf<"charge.refunded">, Read<ChargeRead>> = {
  async read({ event, ctx }) {
    const payproc = await payprocFor(ctx);
    const charge = await orNullIfMissing(payproc.charges.retrieve(event.data.object.id));
    if (!charge) return { refusal: `charge "${event.data.object.id}" does not exist` };
    const refunds = await listStrayRefunds(payproc, { charge: charge.id });
    return { object: { charge, refundId: refunds[0]?.id ?? null, refunds } };
  },
  async write({ sql, read, ctx }) {
    if ("refusal" in read) return skipped(read.refusal);
    const { charge, refundId } = read.object;
    const deal = await findDealByCharge(sql, charge.id);
    if (!deal) {
      const stray = await strayPaymentOfCharge(sql, charge.id);
      if (!stray || !charge.refunded || refundId === null) {
        return skipped("no deal holds this charge");
      }
      // Closed only once succeeded refunds cover the whole payment (stray_refunds.ts).
      const settled = await settleStrayRefunds(ctx, sql, stray.intentId, read.object.refunds);
      return settled?.moved === "refunded"
        ? applied(`a payment of deal ${stray.dealId} it could not take was refunded`)
        : settled?.moved === "refund_pending"
        ? applied(`a refund of a payment of deal ${stray.dealId} it could not take is pending`)
        : applied("already up to date");
    }
    if (!charge.refunded || refundId === null) {
      return skipped("a partial refund: deals are refunded in full only");
    }
    return await completeRefund(ctx, sql, deal.id, refundId, null)
      ? applied(`deal ${deal.id} refunded`)
      : applied("already up to date");
  },
};

/**
 * Applies a dispute as the processor has it now (open, won or lost) to its
 * deal. While the money is in escrow the deal moves (disputed, back to
 * funded, refunded). Once it left — paid out to the seller, refunded to the
 * buyer, or a stray payment already returned — nothing moves, but the
 * dispute is recorded on the deal and every admin is told, once per dispute
 * (`late_disputes.ts`).
 */
async function applyDispute(
  ctx: Context,
  sql: Sql,
  dispute: Stripe.Dispute,
): Promise<WebhookResult> {
  const chargeId = typeof dispute.charge === "string" ? dispute.charge : dispute.charge.id;
  const deal = await findDealByCharge(sql, chargeId, { lock: true });
  if (!deal) {
    const stray = await strayPaymentOfCharge(sql, chargeId);
    if (!stray) return skipped("no deal holds the disputed charge");
    return await recordLateDispute(ctx, sql, stray.dealId, dispute, "returned_payment");
  }
  // The payout matters only once the money left escrow, or might have.
  const payoutOf = async () => (await settlementsOf(sql, deal.id)).payout;
  const move = (to: "disputed" | "funded" | "in_handover" | "refunded", cause: string) =>
    transitionDeal(sql, deal.id, to, cause, { payprocObject: dispute.id });
  const open = OPEN_DISPUTE.includes(dispute.status);
  if (deal.status === "completed" || deal.status === "refunded") {
    // A dispute that moved the deal while its money was in escrow (opened,
    // won, lost) is not late: its events, replayed or reordered, are done.
    if (await movedDeal(sql, deal.id, dispute.id)) return applied("already up to date");
  }
  if (deal.status === "completed") {
    const result = await recordLateDispute(ctx, sql, deal.id, dispute, "payout");
    // Lost after the payout was taken back: the buyer got the money through
    // the bank, and the seller has it no more.
    if (dispute.status === "lost" && (await payoutOf())?.status === "reversed") {
      await move("refunded", "dispute_lost");
      return applied(`deal ${deal.id} refunded (dispute lost after the payout was reversed)`);
    }
    // Won after the payout was taken back: the platform keeps the charge, so
    // the seller is paid again — once (`repayouts.ts`).
    if (dispute.status === "won" && await oweRepayout(ctx, sql, deal, dispute)) {
      return applied(
        `deal ${deal.id}: dispute won after the payout was reversed; the seller is paid again`,
      );
    }
    return result;
  }
  if (deal.status === "refunded") {
    return await recordLateDispute(ctx, sql, deal.id, dispute, "refund");
  }
  if (open) {
    if (deal.status === "funded" || deal.status === "in_handover") {
      await move("disputed", "dispute_opened");
      return applied(`deal ${deal.id} disputed`);
    }
    if (deal.status === "disputed") return applied("already up to date");
    return skipped(`a dispute on a deal that is ${deal.status}: handle it at the processor`);
  }
  if (dispute.status === "lost") {
    if (!["disputed", "funded", "in_handover"].includes(deal.status)) {
      return applied("already up to date");
    }
    await move("refunded", "dispute_lost");
    // The payout went out while the dispute opened: the seller has the money too.
    if ((await payoutOf())?.status === "succeeded") {
      await recordLateDispute(ctx, sql, deal.id, dispute, "payout");
    }
    return applied(`deal ${deal.id} refunded`);
  }
  // won, warning_closed: the money stays (or is back) in escrow, and the
  // deal goes back to where the dispute found it (funded, or in handover).
  if (deal.status !== "disputed") return applied("already up to date");
  const back = await stateBeforeDispute(sql, deal.id);
  await move(back, "dispute_won");
  // A transfer that went out while the dispute was open: with nothing more
  // owed (no holdback to come), the deal is complete now.
  const { payout, holdback } = await settlementsOf(sql, deal.id);
  const paidInFull = holdback?.status === "succeeded" ||
    (payout?.status === "succeeded" && !(await holdbackOwed(sql, deal.id)));
  if (paidInFull) {
    const last = holdback?.status === "succeeded" ? holdback : payout!;
    await transitionDeal(
      sql,
      deal.id,
      "completed",
      last.kind === "holdback" ? "holdback_released" : "payout_released",
      { payprocObject: last.payproc_id },
    );
    return applied(`deal ${deal.id} completed (dispute won; the payout had gone out)`);
  }
  return applied(`deal ${deal.id} ${back.replace("_", " ")}`);
}

/** Where deal `dealId` was when its dispute opened: funded or in handover. */
async function stateBeforeDispute(sql: Sql, dealId: string): Promise<"funded" | "in_handover"> {
  const row = await sql.maybeOne<{ from_status: string }>(
    `select from_status from public.deal_events
     where deal_id = $1 and to_status = 'disputed' and from_status <> 'disputed'
     order by id desc limit 1`,
    [dealId],
  );
  return row?.from_status === "in_handover" ? "in_handover" : "funded";
}

/** Whether dispute `disputeId` moved deal `dealId`'s state before. */
async function movedDeal(sql: Sql, dealId: string, disputeId: string): Promise<boolean> {
  const row = await sql.one<{ moved: boolean }>(
    `select exists (
       select 1 from public.deal_events
       where deal_id = $1 and payproc_object_id = $2 and from_status is distinct from to_status
     ) as moved`,
    [dealId, disputeId],
  );
  return row.moved;
}

type DisputeEventType =
  | "charge.dispute.created"
  | "charge.dispute.closed"
  | "charge.dispute.updated";

const onDispute: WebhookHandler<EventOf<DisputeEventType>, Read<Stripe.Dispute>> = {
  async read({ event, ctx }) {
    const payproc = await payprocFor(ctx);
    const dispute = await orNullIfMissing(payproc.disputes.retrieve(event.data.object.id));
    return dispute ? { object: dispute } : { refusal: "the dispute does not exist" };
  },
  async write({ sql, read, ctx }) {
    if ("refusal" in read) return skipped(read.refusal);
    return await applyDispute(ctx, sql, read.object);
  },
};

const onTransferReversed: WebhookHandler<EventOf<"transfer.reversed">, Read<Stripe.Transfer>> = {
  async read({ event, ctx }) {
    const payproc = await payprocFor(ctx);
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

/** The deal transfer `transfer` went to the seller of: by our settlement row, else its metadata or group. */
async function dealOfTransfer(sql: Sql, transfer: Stripe.Transfer): Promise<string | null> {
  const row = await sql.maybeOne<{ deal_id: string }>(
    `select deal_id from public.deal_settlements
     where payproc_id = $1 and kind in ('payout', 'holdback', 'repayout')`,
    [transfer.id],
  );
  if (row) return row.deal_id;
  return dealIdOf(transfer.metadata) ?? dealIdOfGroup(transfer.transfer_group);
}

type TransferEventType = "transfer.created" | "transfer.updated";

/**
 * A transfer the processor reports made (or changed): if it paid the seller
 * of a deal that is refunded and is not taken back in full, the admins hear
 * of it once (`late_payouts.ts`). Anything else is ours already (the payout
 * records its own transfer) and changes nothing.
 */
const onTransfer: WebhookHandler<EventOf<TransferEventType>, Read<Stripe.Transfer>> = {
  async read({ event, ctx }) {
    const payproc = await payprocFor(ctx);
    const transfer = await orNullIfMissing(payproc.transfers.retrieve(event.data.object.id));
    return transfer ? { object: transfer } : { refusal: "the transfer does not exist" };
  },
  async write({ sql, read, ctx }) {
    if ("refusal" in read) return skipped(read.refusal);
    const transfer = read.object;
    const dealId = await dealOfTransfer(sql, transfer);
    const deal = dealId ? await findDeal(sql, dealId, { lock: true }) : null;
    if (!deal) return applied("not a transfer of a deal");
    const held = transfer.amount - transfer.amount_reversed;
    if (deal.status !== "refunded" || held <= 0) return applied("nothing to do");
    const recorded = await recordPayoutAfterRefund(ctx, sql, deal.id, {
      id: transfer.id,
      kind: transfer.metadata?.kind ?? "transfer",
      amount: fromMinorUnits(held, transfer.currency),
      currency: currencyCode(transfer.currency),
    });
    return recorded
      ? applied(`deal ${deal.id} is refunded and its seller was paid: admins told`)
      : applied("already recorded");
  },
};

/** Handlers of refunds, disputes, transfers and reversals of deal money. */
export const DEAL_SETTLEMENT_EVENT_HANDLERS: WebhookHandlers = {
  "transfer.created": onTransfer,
  "transfer.updated": onTransfer,
  "charge.refunded": onChargeRefunded,
  "charge.dispute.created": onDispute,
  "charge.dispute.updated": onDispute,
  "charge.dispute.closed": onDispute,
  "transfer.reversed": onTransferReversed,
};
