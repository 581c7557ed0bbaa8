/**
 * `cancel-deal` (the deal's buyer, its seller, or an admin) `{ dealId,
 * reason? }`: cancels a deal still pending payment. A deal whose payment was
 * started is stopped at the processor first — its payment intent cancelled,
 * its hosted checkout expired — and only then cancelled; a payment that
 * already succeeded funds the deal instead and answers 409 `already_paid`.
 * Answers `{ dealId, status: "cancelled", alreadyCancelled, payment }`.
 *
 * @module
 */
import { isAdmin } from "../_shared/access.ts";
import { cancelDeal } from "../_shared/deals/cancel.ts";
import { findDeal } from "../_shared/deals/deal_rows.ts";
import { forbidden, notFound } from "../_shared/errors.ts";
import { defineFunction } from "../_shared/function.ts";

export default defineFunction("cancel-deal", {
  rateLimit: { limit: 10, windowSeconds: 60 },
  async handle({ input, caller, ctx }) {
    const deal = await findDeal(ctx.db, input.dealId);
    if (!deal) throw notFound(`Deal "${input.dealId}" does not exist`);
    const participant = deal.buyer_id === caller.id || deal.seller_id === caller.id;
    if (!participant && !(await isAdmin(ctx, caller.id))) {
      throw forbidden("Only the deal's buyer, its seller and admins may cancel it");
    }
    return await cancelDeal(ctx, { dealId: deal.id, actor: caller.id, reason: input.reason });
  },
});
