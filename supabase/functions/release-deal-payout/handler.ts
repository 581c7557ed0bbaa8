/**
 * `release-deal-payout` (admin) `{ dealId, force? }`: pays the seller the
 * deal's amount minus its frozen commission — one transfer to their payout
 * account from the deal's charge, idempotency key `payout:<dealId>` — and
 * completes the deal. Only once the handover is complete (`in_handover`
 * with every step confirmed: `apa-auto-handover` stamps it), or earlier with
 * `force: true` (from `funded` or `in_handover`), only when the seller's account has payouts enabled and
 * nothing past due (409 naming the reason in `details.reason`). Repeating
 * it answers the same result; a crash midway is resumed, never doubled
 * (`_shared/deals/payouts.ts`). Answers the deal's state, payout and refund.
 *
 * @module
 */
import { releasePayout } from "../_shared/deals/payouts.ts";
import { defineFunction } from "../_shared/platform/function.ts";

export default defineFunction({
  name: "release-deal-payout",
  access: "admin",
  group: "deals",
  summary: "Releases a deal's payout (amount minus commission) to the seller",
  input: () =>
    import("../../../shared/deal_schemas.ts").then((schemas) => schemas.ReleaseDealPayoutInput),
  output: "DealSettlementOutput",
  async handle({ input, caller, ctx }) {
    return await releasePayout(ctx, { dealId: input.dealId, force: input.force, actor: caller.id });
  },
});
