/**
 * `connect-onboarding-link` (signed-in user, at most 10 calls a minute): the
 * user's payout account — created once, Express with the transfers
 * capability, and stored — and a hosted onboarding page for it. Any
 * signed-in user may call it: starting onboarding is how a user without a
 * listing becomes a seller. Answers `{ url }` of an `account_onboarding`
 * account link; the page sends the seller back to
 * `$SITE_URL/seller/payouts?onboarding=return` when done, or to
 * `?onboarding=refresh` when the link expired (call this again for a new
 * one). Links are single-use, so every call makes a new one.
 *
 * @module
 */
import { siteUrl } from "../_shared/billing/redirects.ts";
import { findUser } from "../_shared/billing/users.ts";
import { ensurePayoutAccount } from "../_shared/connect/payout_account.ts";
import { defineFunction } from "../_shared/platform/function.ts";
import { payprocFor } from "../_shared/platform/payproc.ts";

export default defineFunction({
  name: "connect-onboarding-link",
  // Any signed-in user: starting onboarding is how one becomes a seller.
  access: "user",
  group: "connect",
  summary: "Payout account onboarding link",
  output: "ConnectLinkOutput",
  // Each call creates an account link at the processor (and, once, the account).
  rateLimit: { limit: 10, windowSeconds: 60 },
  async handle({ caller, ctx }) {
    // Before anything is created: 503 not_configured without SITE_URL.
    const refreshUrl = siteUrl(ctx.env, "/seller/payouts?onboarding=refresh");
    const returnUrl = siteUrl(ctx.env, "/seller/payouts?onboarding=return");
    const user = await findUser(ctx.db, { userId: caller.id });
    const account = await ensurePayoutAccount(ctx, {
      id: caller.id,
      email: user?.email ?? caller.email,
    });
    const payproc = await payprocFor(ctx);
    const link = await payproc.accountLinks.create({
      account: account.accountId,
      type: "account_onboarding",
      refresh_url: refreshUrl,
      return_url: returnUrl,
    });
    return { url: link.url };
  },
});
