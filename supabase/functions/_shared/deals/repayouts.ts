/**
 * The seller paid again after a chargeback the platform won. When an admin
 * took a completed deal's payout back for a chargeback
 * (`refund-deal-payment` with `reverseTransfer`) and the bank then decides
 * for the platform, the platform holds both the charge and the seller's
 * money. The dispute's webhook records that a repayout is owed (deal event
 * `payout_owed_after_dispute_won`, once per dispute), alerts every admin,
 * and pays the seller what was reversed after the request — a transfer of
 * kind `repayout` with its own key `repayout:<dealId>` (`payouts.ts`), so it
 * moves once however often the event comes. The `repayouts` step of
 * `deal-deadlines` finishes a repayout the request could not make.
 *
 * @module
 */
import type Stripe from "stripe";
import type { Context } from "../platform/context.ts";
import type { Sql } from "../platform/db.ts";
import type { JobTally } from "../platform/jobs/tally.ts";
import { adminRepayoutNotice, ESCROW_EMAIL_TYPES } from "../email/templates/escrow_release.ts";
import { queueAdminAlert } from "../notifications/admin_alerts.ts";
import { type DealRow, recordDealEvent } from "./deal_rows.ts";
import { attemptTransfer } from "./releases.ts";

/**
 * In the webhook's transaction: if deal `deal` (completed) had transfers
 * reversed, a repayout is owed — recorded once per dispute, the admins told,
 * the transfer queued for after the request. False when nothing was reversed.
 */
export async function oweRepayout(
  ctx: Context,
  sql: Sql,
  deal: DealRow,
  dispute: Stripe.Dispute,
): Promise<boolean> {
  const { amount } = await sql.one<{ amount: string | null }>(
    "select public.deal_transfer_amount($1, 'repayout')::text as amount",
    [deal.id],
  );
  if (amount === null) return false;
  const recorded = await recordDealEvent(
    sql,
    deal.id,
    "payout_owed_after_dispute_won",
    dispute.id,
    {
      detail: { amount, currency: deal.currency },
    },
  );
  if (!recorded) return true;
  const { title } = await sql.one<{ title: string }>(
    "select title from public.listings where id = $1",
    [deal.listing_id],
  );
  const notice = adminRepayoutNotice({
    dealId: deal.id,
    listingTitle: title,
    currency: deal.currency,
    amount,
    disputeId: dispute.id,
  });
  await queueAdminAlert(ctx, sql, {
    key: `repayout:${deal.id}`,
    title: notice.title,
    body: notice.body,
    link: `/admin/deals/${deal.id}`,
    data: { dealId: deal.id, disputeId: dispute.id, amount },
    emailType: ESCROW_EMAIL_TYPES.adminRepayoutNotice,
    email: notice.email,
  });
  ctx.afterwards(() =>
    attemptTransfer(ctx, { dealId: deal.id, kind: "repayout", origin: "automatic", actor: null })
  );
  return true;
}

/** Completed deals owed a repayout that has not gone out yet. */
export async function dealsOwedRepayout(sql: Sql, limit: number): Promise<string[]> {
  const rows = await sql.query<{ id: string }>(
    `select d.id from public.deals d
     where d.status = 'completed'
       and exists (
         select 1 from public.deal_events e
         where e.deal_id = d.id and e.cause = 'payout_owed_after_dispute_won'
       )
       and not exists (
         select 1 from public.deal_settlements s
         where s.deal_id = d.id and s.kind = 'repayout' and s.status in ('succeeded', 'reversed')
       )
     order by d.id
     limit $1`,
    [limit],
  );
  return rows.map((row) => row.id);
}

/** The step `repayouts`: every owed repayout is made (counts `repayouts_made`, `repayouts_waiting`). */
export async function runRepayouts(ctx: Context, tally: JobTally, limit = 200): Promise<void> {
  tally.count("repayouts_made", 0);
  for (const dealId of await dealsOwedRepayout(ctx.db, limit)) {
    tally.scanned++;
    const outcome = await tally.attempt(
      `repayouts:${dealId}`,
      () => attemptTransfer(ctx, { dealId, kind: "repayout", origin: "automatic", actor: null }),
    );
    if (outcome === "made") {
      tally.changed++;
      tally.list("repayouts_made", dealId);
    } else if (outcome) {
      tally.count(`repayouts_${outcome}`);
    }
  }
}
