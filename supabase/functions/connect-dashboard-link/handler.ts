/**
 * `connect-dashboard-link` (seller, at most 10 calls a minute): a one-time
 * login link to the seller's Express dashboard at the processor (payouts,
 * bank details, tax forms). The account is re-read first and mirrored, so
 * the decision is made on its state now: until onboarding is complete
 * (`details_submitted`), and for a seller without a payout account, 409
 * `conflict` with `details.next = "connect-onboarding-link"`. Answers
 * `{ url }`.
 *
 * @module
 */
import { requirePayoutAccount } from "../_shared/connect/payout_account.ts";
import { conflict } from "../_shared/platform/errors.ts";
import { defineFunction } from "../_shared/platform/function.ts";
import { payprocFor } from "../_shared/platform/payproc.ts";

export default defineFunction({
  name: "connect-dashboard-link",
  access: "seller",
  group: "connect",
  summary: "Payout account dashboard link",
  output: "ConnectLinkOutput",
  // Each call re-reads the account and creates a login link at the processor.
  rateLimit: { limit: 10, windowSeconds: 60 },
  async handle({ caller, ctx }) {
    const account = await requirePayoutAccount(ctx, caller.id, "Cannot open the payout dashboard");
    if (!account.detailsSubmitted) {
      throw conflict(
        "Cannot open the payout dashboard: finish onboarding first",
        { next: "connect-onboarding-link", accountId: account.accountId },
      );
    }
    const payproc = await payprocFor(ctx);
    const link = await payproc.accounts.createLoginLink(account.accountId);
    return { url: link.url };
  },
});
