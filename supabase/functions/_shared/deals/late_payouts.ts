/**
 * Money that reached the seller of a deal that is refunded: the buyer has
 * the money back and the seller has it too. It can happen when a refund
 * comes between a transfer's last check and the transfer (a refund made in
 * the processor's dashboard, whose `charge.refunded` does not wait for a
 * payout in flight), when a refund settles on a deal whose payout went out
 * and was not taken back (its reversal failed, or the dashboard refunded
 * without reversing), or when a transfer is made at the processor for a
 * refunded deal. Nothing moves by itself: an admin decides (reverse the
 * transfer, or settle with the seller). So the transfer is recorded on the
 * deal (`deal_events`, cause `payout_reached_seller_after_refund`, once per
 * transfer) and every admin is told once (an `admin_alerts` notice and
 * e-mail, key `payout-after-refund:<transfer>`), in the caller's
 * transaction, whoever sees it first: the transfer's finish, the refund's,
 * or the processor's `transfer.created` / `transfer.updated`.
 *
 * @module
 */
import type { Context } from "../platform/context.ts";
import type { Sql } from "../platform/db.ts";
import { adminPayoutAfterRefundNotice } from "../email/templates/deal_alerts.ts";
import { queueAdminAlert } from "../notifications/admin_alerts.ts";
import { recordDealEvent } from "./deal_rows.ts";
import { settlementsOf } from "./settlements.ts";

/** The deal event cause of a transfer that reached the seller of a refunded deal. */
export const PAYOUT_AFTER_REFUND_CAUSE = "payout_reached_seller_after_refund";

/** A transfer to the seller that went out. */
export interface SellerTransfer {
  /** The processor's transfer id. */
  id: string;
  /** payout, holdback or repayout (or what the processor's metadata says). */
  kind: string;
  /** What the seller holds of it (not reversed), in major units. */
  amount: string;
  currency: string;
}

/**
 * In transaction `sql`, with deal `dealId` locked and `refunded`: records
 * `transfer` on the deal and alerts every admin, once per transfer. Answers
 * whether this call recorded it (false: seen before).
 */
export async function recordPayoutAfterRefund(
  ctx: Context,
  sql: Sql,
  dealId: string,
  transfer: SellerTransfer,
): Promise<boolean> {
  const recorded = await recordDealEvent(sql, dealId, PAYOUT_AFTER_REFUND_CAUSE, transfer.id, {
    detail: { kind: transfer.kind, amount: transfer.amount, currency: transfer.currency },
  });
  if (!recorded) return false;
  const { title } = await sql.one<{ title: string }>(
    `select l.title from public.deals d join public.listings l on l.id = d.listing_id
     where d.id = $1`,
    [dealId],
  );
  const notice = adminPayoutAfterRefundNotice({
    dealId,
    listingTitle: title,
    transferId: transfer.id,
    amount: transfer.amount,
    currency: transfer.currency,
    kind: transfer.kind,
  });
  await queueAdminAlert(ctx, sql, {
    key: `payout-after-refund:${transfer.id}`,
    title: notice.title,
    body: notice.body,
    link: `/admin/deals/${dealId}`,
    data: {
      dealId,
      transferId: transfer.id,
      amount: transfer.amount,
      currency: transfer.currency,
      kind: transfer.kind,
    },
    emailType: "admin_payout_after_refund",
    email: notice.email,
  });
  return true;
}

/**
 * In transaction `sql`, with deal `dealId` locked and just `refunded`: every
 * transfer to its seller that went out and was not taken back is recorded
 * and told (once each). Answers how many were new.
 */
export async function recordPaidTransfersAfterRefund(
  ctx: Context,
  sql: Sql,
  dealId: string,
): Promise<number> {
  const settlements = await settlementsOf(sql, dealId);
  let recorded = 0;
  for (const row of [settlements.payout, settlements.holdback, settlements.repayout]) {
    if (row?.status !== "succeeded" || !row.payproc_id) continue;
    const transfer = {
      id: row.payproc_id,
      kind: row.kind,
      amount: row.amount,
      currency: row.currency,
    };
    if (await recordPayoutAfterRefund(ctx, sql, dealId, transfer)) recorded++;
  }
  return recorded;
}
