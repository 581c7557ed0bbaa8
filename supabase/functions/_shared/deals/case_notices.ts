/**
 * What the notice queue's delivery and dispute-case rows tell
 * (`send-queued-notices`; the SQL that queues them is the escrow release
 * migration's): the buyer's acceptance of the delivery to the seller, and a
 * case's moves — opened (to both sides), a settlement proposed (to the
 * other side), escalated (to both sides and every admin), resolved (to both
 * sides). The parties' notices are of the `handover` notification type
 * ("Your deals", pushed), with the e-mail type named as the kind; an
 * admin's escalation alert is `admin_alerts` with the e-mail type
 * `admin_deal_case_escalated` (`NOTICE_ADMIN_EMAIL_TYPES`), as the reported
 * conversation's alert is.
 *
 * The subject (a deal for `deal_delivery_accepted`, a case for the others)
 * is read as it is now, without taking its lock (as `loi_notices.ts`: the
 * RPCs lock the deal and then the case while they queue; waiting for either
 * here could deadlock with a run's own claim):
 *
 * - `deal_delivery_accepted` is told while the delivery stands accepted,
 *   and dropped once the deal was refunded (a lost chargeback: there is no
 *   payout to announce).
 * - `deal_case_opened` is always told to both sides: the case was opened,
 *   whatever happened to it since (a later move has its own notice).
 * - `deal_case_settlement_proposed` is news while the case is open; once it
 *   was settled (the other side's equal proposal), escalated or resolved,
 *   the row is dropped: the resolution's or the escalation's notice tells
 *   what counts now. It tells the proposal as it is now (a side that
 *   changed its mind before the run is told once, with the latest).
 * - `deal_case_escalated` is news while the case is escalated; once it is
 *   resolved (an admin was quicker than the run, or the deal ended) it is
 *   dropped for everyone: "an admin will decide" would be false, and the
 *   resolution's notice tells the parties the decision. A recipient who is
 *   neither a party nor an admin any more is skipped.
 * - `deal_case_resolved` is always told (resolved is final).
 *
 * Keys are `<kind>:<deal or case id>`, per user (the notifications
 * module's keys are), so both sides get theirs and a row handled twice
 * writes nothing twice; a case is opened, escalated and resolved once, and
 * a delivery accepted once. A settlement proposal adds the case's
 * `updated_at` (`:<epoch ms>`): a side may propose, and change its
 * proposal, more than once, and every proposal moves the case's
 * `updated_at`, so each proposal told is its own notice.
 *
 * @module
 */
import {
  NOTICE_ADMIN_EMAIL_TYPES,
  NOTICE_EMAIL_TYPES,
  type NoticeKind,
} from "../../../../shared/notice_kinds.ts";
import { holdbackOf, type OfferTerms } from "../../../../shared/offer_terms.ts";
import {
  adminCaseEscalatedNotice,
  type CaseEscalatedBy,
  caseEscalatedNotice,
  type CaseFacts,
  type CaseNotice,
  caseOpenedNotice,
  type CaseOutcome,
  type CaseProposal,
  type CaseResolution,
  caseResolvedNotice,
  caseSettlementProposedNotice,
  type DealSide,
  deliveryAcceptedNotice,
} from "../email/templates/deal_cases.ts";
import type { NotificationType } from "../../../../shared/notifications.ts";
import type { Sql } from "../platform/db.ts";
import type { NoticeBuilder, NoticeDecision, QueuedNotice } from "../notifications/notice_queue.ts";

/** The delivery and dispute-case kinds of the queue. */
export type CaseKind = "deal_delivery_accepted" | Extract<NoticeKind, `deal_case_${string}`>;

/** A case with its deal, as the notices read it. */
interface CaseRead extends CaseFacts {
  listingId: string;
  buyerId: string;
  sellerId: string;
  dealStatus: string;
  status: "open" | "escalated" | "resolved";
  openedAt: Date;
  updatedAt: Date;
  escalatedBy: CaseEscalatedBy | null;
  buyerProposal: CaseProposal | null;
  sellerProposal: CaseProposal | null;
  outcome: CaseOutcome | null;
  refundAmount: string | null;
  phase: "escrow" | "holdback" | null;
  resolution: CaseResolution | null;
  terms: OfferTerms | null;
  inspectionEndsAt: Date | null;
  holdbackReleaseAt: Date | null;
  /** What the deal still holds for the buyer now (`deal_held_amount`). */
  held: string;
  /** What the seller receives at the release now (`deal_transfer_amount(deal, 'payout')`). */
  payoutAmount: string | null;
  /** What the seller receives of the holdback now (`deal_transfer_amount(deal, 'holdback')`). */
  holdbackAmount: string | null;
  /** The database's clock. */
  now: Date;
  /** Whether the recipient is an admin. */
  toAdmin: boolean;
}

/** A proposal from a case's columns, or null without one. */
function proposalOf(outcome: string | null, amount: string | null): CaseProposal | null {
  return outcome === null ? null : { outcome: outcome as CaseOutcome, refundAmount: amount };
}

/** Case `caseId` with its deal, as `userId` is told of it; null when it is gone. */
async function readCase(sql: Sql, caseId: string, userId: string): Promise<CaseRead | null> {
  const row = await sql.maybeOne<{
    id: string;
    deal_id: string;
    opened_by_side: DealSide;
    reason: string;
    details: string;
    status: CaseRead["status"];
    negotiate_until: Date;
    created_at: Date;
    updated_at: Date;
    escalated_by: CaseEscalatedBy | null;
    buyer_outcome: string | null;
    buyer_refund_amount: string | null;
    seller_outcome: string | null;
    seller_refund_amount: string | null;
    outcome: CaseOutcome | null;
    refund_amount: string | null;
    phase: CaseRead["phase"];
    resolution: CaseResolution | null;
    listing_id: string;
    title: string;
    buyer_id: string;
    seller_id: string;
    deal_status: string;
    amount: string;
    currency: string;
    terms: OfferTerms | null;
    inspection_ends_at: Date | null;
    holdback_release_at: Date | null;
    held: string;
    payout_amount: string | null;
    holdback_amount: string | null;
    now: Date;
    to_admin: boolean;
  }>(
    `select c.id, c.deal_id, c.opened_by_side, c.reason, c.details, c.status, c.negotiate_until,
            c.created_at, c.updated_at, c.escalated_by,
            c.buyer_outcome, c.buyer_refund_amount::text as buyer_refund_amount,
            c.seller_outcome, c.seller_refund_amount::text as seller_refund_amount,
            c.outcome, c.refund_amount::text as refund_amount, c.phase, c.resolution,
            d.listing_id, l.title, d.buyer_id, d.seller_id, d.status as deal_status,
            d.amount::text as amount, d.currency, d.terms, d.inspection_ends_at,
            d.holdback_release_at,
            public.deal_held_amount(d.id)::numeric(12, 2)::text as held,
            public.deal_transfer_amount(d.id, 'payout')::text as payout_amount,
            public.deal_transfer_amount(d.id, 'holdback')::text as holdback_amount,
            clock_timestamp() as now,
            exists (
              select 1 from public.user_roles r where r.user_id = $2 and r.role = 'admin'
            ) as to_admin
     from public.deal_cases c
     join public.deals d on d.id = c.deal_id
     join public.listings l on l.id = d.listing_id
     where c.id = $1`,
    [caseId, userId],
  );
  if (!row) return null;
  return {
    caseId: row.id,
    dealId: row.deal_id,
    listingId: row.listing_id,
    title: row.title,
    amount: row.amount,
    currency: row.currency,
    openedBy: row.opened_by_side,
    reason: row.reason,
    details: row.details,
    negotiateUntil: row.negotiate_until,
    buyerId: row.buyer_id,
    sellerId: row.seller_id,
    dealStatus: row.deal_status,
    status: row.status,
    openedAt: row.created_at,
    updatedAt: row.updated_at,
    escalatedBy: row.escalated_by,
    buyerProposal: proposalOf(row.buyer_outcome, row.buyer_refund_amount),
    sellerProposal: proposalOf(row.seller_outcome, row.seller_refund_amount),
    outcome: row.outcome,
    refundAmount: row.refund_amount,
    phase: row.phase,
    resolution: row.resolution,
    terms: row.terms,
    inspectionEndsAt: row.inspection_ends_at,
    holdbackReleaseAt: row.holdback_release_at,
    held: row.held,
    payoutAmount: row.payout_amount,
    holdbackAmount: row.holdback_amount,
    now: row.now,
    toAdmin: row.to_admin,
  };
}

/** Which side of `deal` `userId` is, or null for neither. */
function sideOf(deal: { buyerId: string; sellerId: string }, userId: string): DealSide | null {
  return userId === deal.buyerId ? "buyer" : userId === deal.sellerId ? "seller" : null;
}

/** The decision to write `notice` to `row`'s user under `key`, as a party's `handover` notice. */
function noticeOf(
  row: QueuedNotice,
  notice: CaseNotice,
  key: string,
  data: Record<string, unknown>,
  admin = false,
): NoticeDecision {
  const type: NotificationType = admin ? "admin_alerts" : "handover";
  const emailType = admin && row.kind === "deal_case_escalated"
    ? NOTICE_ADMIN_EMAIL_TYPES.deal_case_escalated
    : NOTICE_EMAIL_TYPES[row.kind];
  return {
    action: "notice",
    notice: {
      userId: row.userId,
      type,
      title: notice.title,
      body: notice.body,
      link: notice.link,
      data,
      key,
      email: { emailType, content: notice.email },
    },
  };
}

/** The in-app data of a case's notices. */
function caseData(c: CaseRead, side: DealSide | null): Record<string, unknown> {
  return {
    caseId: c.caseId,
    dealId: c.dealId,
    listingId: c.listingId,
    status: c.status,
    reason: c.reason,
    openedBySide: c.openedBy,
    negotiateUntil: c.negotiateUntil.toISOString(),
    ...(side ? { side } : {}),
  };
}

/** To the seller: the buyer accepted the delivery; the payout comes shortly. */
const deliveryAccepted: NoticeBuilder = async (_ctx, sql, row): Promise<NoticeDecision> => {
  const deal = await sql.maybeOne<{
    id: string;
    listing_id: string;
    title: string;
    seller_id: string;
    status: string;
    amount: string;
    currency: string;
    terms: OfferTerms | null;
    delivery_accepted_at: Date | null;
    inspection_ends_at: Date | null;
    payout_amount: string | null;
    holdback_amount: string | null;
  }>(
    `select d.id, d.listing_id, l.title, d.seller_id, d.status, d.amount::text as amount,
            d.currency, d.terms, d.delivery_accepted_at, d.inspection_ends_at,
            public.deal_transfer_amount(d.id, 'payout')::text as payout_amount,
            public.deal_transfer_amount(d.id, 'holdback')::text as holdback_amount
     from public.deals d join public.listings l on l.id = d.listing_id
     where d.id = $1`,
    [row.subjectId],
  );
  if (!deal) return { action: "drop", reason: "deal gone" };
  if (row.userId !== deal.seller_id) return { action: "drop", reason: "not the seller" };
  if (!deal.delivery_accepted_at) return { action: "drop", reason: "delivery not accepted" };
  if (deal.status === "refunded") return { action: "drop", reason: "deal refunded" };
  const notice = deliveryAcceptedNotice({
    dealId: deal.id,
    title: deal.title,
    amount: deal.amount,
    currency: deal.currency,
    payoutAmount: deal.payout_amount,
    holdbackAmount: deal.holdback_amount,
    holdbackDays: deal.terms?.holdback_days ?? 0,
  });
  return noticeOf(row, notice, `deal_delivery_accepted:${deal.id}`, {
    dealId: deal.id,
    listingId: deal.listing_id,
    status: deal.status,
    deliveryAcceptedAt: deal.delivery_accepted_at.toISOString(),
    inspectionEndsAt: deal.inspection_ends_at?.toISOString() ?? null,
  });
};

/** To both sides: a case was opened (the opener hears it was, the other side why). */
const caseOpened: NoticeBuilder = async (_ctx, sql, row): Promise<NoticeDecision> => {
  const c = await readCase(sql, row.subjectId, row.userId);
  if (!c) return { action: "drop", reason: "case gone" };
  const to = sideOf(c, row.userId);
  if (!to) return { action: "drop", reason: "not a participant" };
  return noticeOf(row, caseOpenedNotice(c, to), `deal_case_opened:${c.caseId}`, caseData(c, to));
};

/** To the other side: a settlement proposal, while the case is open. */
const settlementProposed: NoticeBuilder = async (_ctx, sql, row): Promise<NoticeDecision> => {
  const c = await readCase(sql, row.subjectId, row.userId);
  if (!c) return { action: "drop", reason: "case gone" };
  const to = sideOf(c, row.userId);
  if (!to) return { action: "drop", reason: "not a participant" };
  if (c.status !== "open") return { action: "drop", reason: `case ${c.status}` };
  const by: DealSide = to === "buyer" ? "seller" : "buyer";
  const proposal = by === "buyer" ? c.buyerProposal : c.sellerProposal;
  if (!proposal) return { action: "drop", reason: "no proposal" };
  const yours = to === "buyer" ? c.buyerProposal : c.sellerProposal;
  return noticeOf(
    row,
    caseSettlementProposedNotice(c, by, proposal, c.held, yours),
    `deal_case_settlement_proposed:${c.caseId}:${c.updatedAt.getTime()}`,
    {
      ...caseData(c, to),
      proposedBy: by,
      outcome: proposal.outcome,
      refundAmount: proposal.refundAmount,
    },
  );
};

/** To both sides and every admin: the case was escalated (while it is still undecided). */
const caseEscalated: NoticeBuilder = async (_ctx, sql, row): Promise<NoticeDecision> => {
  const c = await readCase(sql, row.subjectId, row.userId);
  if (!c) return { action: "drop", reason: "case gone" };
  if (c.status !== "escalated" || !c.escalatedBy) {
    return { action: "drop", reason: `case ${c.status}` };
  }
  const key = `deal_case_escalated:${c.caseId}`;
  const to = sideOf(c, row.userId);
  if (to) {
    return noticeOf(row, caseEscalatedNotice(c, c.escalatedBy, to), key, {
      ...caseData(c, to),
      escalatedBy: c.escalatedBy,
    });
  }
  if (!c.toAdmin) return { action: "drop", reason: "no longer an admin" };
  const notice = adminCaseEscalatedNotice({
    ...c,
    escalatedBy: c.escalatedBy,
    openedAt: c.openedAt,
    held: c.held,
    buyerProposal: c.buyerProposal,
    sellerProposal: c.sellerProposal,
  });
  return noticeOf(row, notice, key, { ...caseData(c, null), escalatedBy: c.escalatedBy }, true);
};

/** To both sides: the case is resolved, and what happens to the money. */
const caseResolved: NoticeBuilder = async (_ctx, sql, row): Promise<NoticeDecision> => {
  const c = await readCase(sql, row.subjectId, row.userId);
  if (!c) return { action: "drop", reason: "case gone" };
  const to = sideOf(c, row.userId);
  if (!to) return { action: "drop", reason: "not a participant" };
  if (c.status !== "resolved" || !c.outcome || !c.resolution || !c.phase) {
    return { action: "drop", reason: `case ${c.status}` };
  }
  const notice = caseResolvedNotice(c, {
    outcome: c.outcome,
    refundAmount: c.refundAmount,
    resolution: c.resolution,
    phase: c.phase,
    payoutAmount: c.payoutAmount,
    holdbackAmount: c.holdbackAmount,
    heldBack: c.terms ? holdbackOf(c.amount, c.terms) : "0.00",
    holdbackDays: c.terms?.holdback_days ?? 0,
    inspectionEndsAt: c.inspectionEndsAt,
    holdbackReleaseAt: c.holdbackReleaseAt,
    now: c.now,
  }, to);
  return noticeOf(row, notice, `deal_case_resolved:${c.caseId}`, {
    ...caseData(c, to),
    outcome: c.outcome,
    refundAmount: c.refundAmount,
    phase: c.phase,
    resolution: c.resolution,
  });
};

/** The builders of the delivery and dispute-case kinds. */
export const CASE_NOTICE_BUILDERS: Readonly<Record<CaseKind, NoticeBuilder>> = {
  deal_delivery_accepted: deliveryAccepted,
  deal_case_opened: caseOpened,
  deal_case_settlement_proposed: settlementProposed,
  deal_case_escalated: caseEscalated,
  deal_case_resolved: caseResolved,
};
