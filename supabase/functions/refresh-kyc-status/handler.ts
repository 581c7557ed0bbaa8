/**
 * `refresh-kyc-status` (seller, at most 20 calls a minute): re-reads the
 * seller's payout account from the processor, writes its KYC and payout
 * status to `connect_accounts` and the profile (a change of payouts sends the
 * seller-verification notices, once), and answers `{ summary: {
 * currently_due_count, past_due_count, disabled_reason, payouts_enabled } }`
 * (`docs/deals.md#seller-payout-accounts`; `disabled_reason` is "" when the account is not disabled).
 * A seller without a payout account gets 409 `conflict` with
 * `details.next = "connect-onboarding-link"`.
 *
 * @module
 */
import { requirePayoutAccount } from "../_shared/connect/payout_account.ts";
import { defineFunction } from "../_shared/platform/function.ts";

export default defineFunction({
  name: "refresh-kyc-status",
  access: "seller",
  group: "connect",
  summary: "Refreshes the payout account's KYC status",
  output: "RefreshKycStatusOutput",
  // Each call re-reads the payout account at the processor.
  rateLimit: { limit: 20, windowSeconds: 60 },
  async handle({ caller, ctx }) {
    const account = await requirePayoutAccount(
      ctx,
      caller.id,
      "Cannot refresh your verification status",
    );
    return { summary: account.summary };
  },
});
