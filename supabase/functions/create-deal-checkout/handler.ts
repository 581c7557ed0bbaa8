/**
 * `create-deal-checkout` (the deal's buyer; the seller gets 403): a hosted
 * checkout in payment mode for the deal's escrow payment, answering
 * `{ url }` to open. The open session is reused; redirects go only to
 * `SITE_URL`'s origin or `ALLOWED_REDIRECT_ORIGINS` (default: back to the
 * deal's page). A payment intent made by create-deal-payment is cancelled
 * first, so the deal is paid one way only. 409 once paid or cancelled.
 *
 * @module
 */
import { allowedRedirectOrigins, checkRedirect, siteUrl } from "../_shared/billing/redirects.ts";
import { buyersPendingDeal, ensureCheckoutSession } from "../_shared/deals/escrow.ts";
import { defineFunction } from "../_shared/platform/function.ts";

export default defineFunction({
  name: "create-deal-checkout",
  access: "deal-participant",
  group: "deals",
  summary: "Creates a hosted checkout (payment mode) for a deal's escrow payment",
  input: () =>
    import("../../../shared/deal_schemas.ts").then((schemas) => schemas.CreateDealCheckoutInput),
  output: "CreateDealCheckoutOutput",
  rateLimit: { limit: 30, windowSeconds: 60 },
  async handle({ input, caller, ctx }) {
    const allowed = allowedRedirectOrigins(ctx.env);
    const action = "create a deal checkout";
    const page = `/deals/${input.dealId}`;
    const successUrl = checkRedirect(
      input.successUrl ?? siteUrl(ctx.env, `${page}?payment=success`),
      "successUrl",
      allowed,
      action,
    );
    const cancelUrl = checkRedirect(
      input.cancelUrl ?? siteUrl(ctx.env, `${page}?payment=cancelled`),
      "cancelUrl",
      allowed,
      action,
    );
    const deal = await buyersPendingDeal(ctx, input.dealId, caller.id);
    const url = await ensureCheckoutSession(ctx, deal, caller.email ?? null, {
      successUrl,
      cancelUrl,
    });
    return { url };
  },
});
