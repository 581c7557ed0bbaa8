/**
 * `resolve-deal-case` (admin) `{ caseId, outcome, refundAmount? }`: decides
 * an escalated (or still open) dispute case — `release` (the money goes on
 * to the seller as the terms say), `refund` (the buyer gets back what is
 * still held) or `partial_refund` with `refundAmount` (a decimal string in
 * major units: the buyer gets it back, the seller the rest minus the
 * commission on it) — and moves the outcome's money at once, each amount
 * once (`_shared/deals/cases.ts`). Repeating the same decision answers the
 * same result and finishes what could not move (the seller's payout account
 * not ready: the job tries again); another decision on a resolved case is
 * 409 `case_resolved`. Answers the case, the deal's state and its
 * settlements.
 *
 * @module
 */
import { carryOutCase, type DealCaseRow, findCase } from "../_shared/deals/cases.ts";
import { settlementAnswer } from "../_shared/deals/settlements.ts";
import { invalidInput, notFound } from "../_shared/platform/errors.ts";
import { defineFunction } from "../_shared/platform/function.ts";

export default defineFunction({
  name: "resolve-deal-case",
  access: "admin",
  group: "deals",
  summary:
    "Decides an escalated dispute case (release, refund or partial refund) and moves its money",
  beyondInterface:
    "Dispute cases escalate to an admin after 7 days without a settlement; the admin's decision moves money at the processor, which an RPC cannot do",
  input: () =>
    import("../../../shared/deal_schemas.ts").then((schemas) => schemas.ResolveDealCaseInput),
  output: "ResolveDealCaseOutput",
  async handle({ input, caller, ctx }) {
    await ctx.db.tx((sql) =>
      sql.query("select public.resolve_deal_case($1, $2, $3::numeric, $4)", [
        input.caseId,
        input.outcome,
        input.refundAmount ?? null,
        caller.id,
      ])
    ).catch((error: unknown) => {
      const code = (error as { code?: unknown }).code;
      const message = error instanceof Error ? error.message : String(error);
      if (code === "PT404") throw notFound(`Dispute case "${input.caseId}" does not exist`);
      if (code === "22023") throw invalidInput(message, { field: "refundAmount" });
      throw error;
    });
    await carryOutCase(ctx, input.caseId, caller.id);
    const found = (await findCase(ctx.db, input.caseId))!;
    return { ...(await settlementAnswer(ctx.db, found.deal_id)), case: caseReport(found) };
  },
});

/** A case as the answer reports it. */
function caseReport(row: DealCaseRow) {
  return {
    id: row.id,
    dealId: row.deal_id,
    status: row.status,
    reason: row.reason,
    openedBySide: row.opened_by_side,
    negotiateUntil: row.negotiate_until.toISOString(),
    escalatedAt: row.escalated_at?.toISOString() ?? null,
    outcome: row.outcome,
    refundAmount: row.refund_amount,
    phase: row.phase,
    resolution: row.resolution,
    resolvedAt: row.resolved_at?.toISOString() ?? null,
    moneyMovedAt: row.money_moved_at?.toISOString() ?? null,
  };
}
