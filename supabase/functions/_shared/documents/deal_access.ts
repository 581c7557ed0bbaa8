/**
 * Which deals take documents: every deal but a cancelled or refunded one
 * (nothing is being transferred any more). The data room opens with the
 * deal, so during due diligence (`in_diligence`, an accepted letter of
 * intent) both sides already exchange files and the agreement's draft. A
 * completed deal still does: proofs of transfer arrive after the payout too.
 *
 * @module
 */
import { conflict, notFound } from "../platform/errors.ts";
import type { Sql } from "../platform/db.ts";
import { type DealRow, findDeal } from "../deals/deal_rows.ts";

/** The deal, or 404; 409 `deal_closed` when it is cancelled or refunded. */
export async function dealTakingDocuments(
  sql: Sql,
  dealId: string,
  action: string,
): Promise<DealRow> {
  const deal = await findDeal(sql, dealId);
  if (!deal) throw notFound(`Deal "${dealId}" does not exist`);
  if (deal.status === "cancelled" || deal.status === "refunded") {
    throw conflict(`Cannot ${action}: the deal is ${deal.status}`, {
      reason: "deal_closed",
      status: deal.status,
    });
  }
  return deal;
}
