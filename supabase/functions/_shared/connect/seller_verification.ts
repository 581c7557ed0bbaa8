/**
 * Seller verification notices (`docs/deals.md#seller-payout-accounts`): when the processor switches a
 * seller's payouts on or off, the seller gets one e-mail and one in-app
 * notice. Called by the one write of connected accounts, in its
 * transaction, only when that write changed `payouts_enabled`.
 *
 * @module
 */
import type { KycSummary } from "../../../../shared/schemas.ts";
import type { Context } from "../platform/context.ts";
import type { Sql } from "../platform/db.ts";
import { sellerVerificationNotice } from "../email/templates/account.ts";
import { queueNotice } from "../notifications/notify.ts";

/**
 * Writes the notice of `userId`'s payouts becoming `summary.payouts_enabled`,
 * as read from the processor at `readAt` (each change has its own read).
 */
export async function notifySellerVerification(
  ctx: Context,
  sql: Sql,
  userId: string,
  summary: KycSummary,
  readAt: Date,
): Promise<void> {
  const notice = sellerVerificationNotice(summary.payouts_enabled, {
    currentlyDue: summary.currently_due_count,
    pastDue: summary.past_due_count,
    disabledReason: summary.disabled_reason,
  });
  await queueNotice(ctx, sql, {
    userId,
    type: "account",
    title: notice.title,
    body: notice.body,
    link: "/dashboard/payouts",
    data: { payoutsEnabled: summary.payouts_enabled, ...summary },
    // Each change is its own notice: the key carries the read that saw it.
    key: `payouts:${summary.payouts_enabled ? "on" : "off"}:${readAt.toISOString()}`,
    email: { emailType: "seller_verification", content: notice.email },
  });
}
