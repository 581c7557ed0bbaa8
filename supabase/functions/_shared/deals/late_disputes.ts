/**
 * Disputes after a deal's money left escrow — paid out to the seller,
 * refunded to the buyer, or a stray payment already returned. Nothing in
 * the deal's state can move any more; an admin decides (take the payout
 * back, answer the dispute, accept the loss). So the dispute is recorded on
 * the deal (`deal_events`: opened, and won or lost once decided, each once
 * per dispute) and every admin is told once per dispute, in the webhook's
 * transaction.
 *
 * @module
 */
import type Stripe from "stripe";
import type { WebhookResult } from "../payproc_webhook/types.ts";
import { applied } from "../payproc_webhook/types.ts";
import type { Context } from "../platform/context.ts";
import type { Sql } from "../platform/db.ts";
import {
  adminDisputeAfterPayoutNotice,
  adminPayoutDuringDisputeNotice,
  type DisputeFacts,
} from "../email/templates/deal_alerts.ts";
import { currencyCode, fromMinorUnits } from "../lib/money.ts";
import { queueAdminAlert } from "../notifications/admin_alerts.ts";
import { recordDealEvent } from "./deal_rows.ts";
import { settlementsOf } from "./settlements.ts";

/** Dispute statuses while the bank has not decided. */
export const OPEN_DISPUTE: readonly string[] = [
  "warning_needs_response",
  "warning_under_review",
  "needs_response",
  "under_review",
];

/** Where the deal's money had gone when the dispute came. */
export type LateDisputeAfter = DisputeFacts["after"];

/** The deal event causes of a late dispute: opened, then won or lost. */
export function lateDisputeCause(
  after: LateDisputeAfter,
  phase: "opened" | "won" | "lost",
): string {
  return after === "returned_payment"
    ? `dispute_${phase}_on_stray_payment`
    : `dispute_${phase}_after_${after}`;
}

/** What the deal events keep of a dispute. */
function detailOf(dispute: Stripe.Dispute): Record<string, unknown> {
  return {
    status: dispute.status,
    reason: dispute.reason,
    amount: fromMinorUnits(dispute.amount, dispute.currency),
    currency: currencyCode(dispute.currency),
    charge: typeof dispute.charge === "string" ? dispute.charge : dispute.charge.id,
    due_by: dispute.evidence_details?.due_by ?? null,
  };
}

/**
 * In transaction `sql`: records `dispute` on deal `dealId`, whose money had
 * gone `after`, and alerts every admin the first time it is seen. A
 * repeated or reordered event records nothing twice.
 */
export async function recordLateDispute(
  ctx: Context,
  sql: Sql,
  dealId: string,
  dispute: Stripe.Dispute,
  after: LateDisputeAfter,
): Promise<WebhookResult> {
  const detail = detailOf(dispute);
  const record = (phase: "opened" | "won" | "lost") =>
    recordDealEvent(sql, dealId, lateDisputeCause(after, phase), dispute.id, { detail });
  // The opening is recorded (and told) even when the first event seen is the
  // decision: an admin hears of every dispute.
  const opened = await record("opened");
  const outcome = dispute.status === "won" ? "won" : dispute.status === "lost" ? "lost" : null;
  const decided = outcome ? await record(outcome) : false;
  if (opened) await alertAdmins(ctx, sql, dealId, dispute, after);
  if (!opened && !decided) return applied("already recorded");
  return applied(
    `a dispute on deal ${dealId} after the ${after.replace("_", " ")}: recorded, admins told`,
  );
}

async function alertAdmins(
  ctx: Context,
  sql: Sql,
  dealId: string,
  dispute: Stripe.Dispute,
  after: LateDisputeAfter,
): Promise<void> {
  const deal = await sql.one<{ title: string }>(
    `select l.title from public.deals d join public.listings l on l.id = d.listing_id
     where d.id = $1`,
    [dealId],
  );
  const { payout } = await settlementsOf(sql, dealId);
  const dueBy = dispute.evidence_details?.due_by;
  const notice = adminDisputeAfterPayoutNotice({
    dealId,
    listingTitle: deal.title,
    disputeId: dispute.id,
    amount: fromMinorUnits(dispute.amount, dispute.currency),
    currency: currencyCode(dispute.currency),
    reason: dispute.reason,
    status: dispute.status,
    dueBy: dueBy ? new Date(dueBy * 1000) : null,
    after,
    payoutReversed: payout?.status === "reversed",
  });
  await queueAdminAlert(ctx, sql, {
    key: `dispute:${dispute.id}`,
    title: notice.title,
    body: notice.body,
    link: `/admin/deals/${dealId}`,
    data: { dealId, disputeId: dispute.id, after, status: dispute.status },
    emailType: "admin_dispute_after_payout",
    email: notice.email,
  });
}

/**
 * In transaction `sql`: the payout of deal `deal` went out (transfer
 * `transferId`) while a dispute opened on it — in the moment between the
 * payout's last check and its transfer. Recorded on the deal, every admin
 * told once.
 */
export async function recordPayoutDuringDispute(
  ctx: Context,
  sql: Sql,
  deal: { id: string; listing_id: string },
  transferId: string,
): Promise<void> {
  if (!(await recordDealEvent(sql, deal.id, "payout_released_during_dispute", transferId))) {
    return;
  }
  const { title } = await sql.one<{ title: string }>(
    "select title from public.listings where id = $1",
    [deal.listing_id],
  );
  const notice = adminPayoutDuringDisputeNotice({
    dealId: deal.id,
    listingTitle: title,
    transferId,
  });
  await queueAdminAlert(ctx, sql, {
    key: `payout-during-dispute:${deal.id}`,
    title: notice.title,
    body: notice.body,
    link: `/admin/deals/${deal.id}`,
    data: { dealId: deal.id, transferId },
    emailType: "admin_dispute_after_payout",
    email: notice.email,
  });
}
