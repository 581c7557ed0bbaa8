/**
 * What the notice queue's offer and due-diligence rows tell
 * (`send-queued-notices`; the SQL that queues them is the letters of intent
 * migration's): a counter-offer to the other side, an acceptance to the
 * version's author, and a deal's moves through due diligence — confirmed,
 * withdrawn, exclusivity extended, ending in 48 hours, lapsed. All are of
 * the `handover` notification type ("Your deals", pushed), with the e-mail
 * type named as the kind.
 *
 * The subject is read as it is now, without taking its lock (a move holds
 * the deal's lock while it moves the pending reminder row this run may
 * hold; waiting for the deal here could deadlock with it):
 *
 * - `offer_countered` (subject: the new version) is news while that version
 *   is pending and not past its expiry; answered, countered again,
 *   withdrawn or lapsed first, it is dropped.
 * - `deal_exclusivity_extended` and `deal_exclusivity_ending` are news while
 *   the deal is in due diligence with its window open; the reminder is
 *   also dropped when the window ends more than 49 hours away (it was
 *   extended: the extension queued the reminder of the new end).
 * - The others are always told.
 *
 * Each notice's key is `<kind>:<offer or deal id>`, per user (the
 * notifications module's keys are), so a row handled twice writes nothing
 * twice and both sides of one deal get theirs; the extension's and the
 * reminder's keys add the window's end (`:<exclusive_until in epoch ms>`),
 * as one deal is extended, and reminded, more than once.
 *
 * @module
 */
import { NOTICE_EMAIL_TYPES, type NoticeKind } from "../../../../shared/notice_kinds.ts";
import type { OfferTerms } from "../../../../shared/offer_terms.ts";
import {
  type DealSide,
  dealWithdrawnNotice,
  diligenceConfirmedNotice,
  exclusivityEndingNotice,
  exclusivityExtendedNotice,
  exclusivityLapsedNotice,
  type LoiDealFacts,
  type LoiNotice,
  offerAcceptedNotice,
  offerCounteredNotice,
  type OfferFacts,
  otherSide,
  type WithdrawnBy,
} from "../email/templates/letters_of_intent.ts";
import type { Sql } from "../platform/db.ts";
import type { NoticeBuilder, NoticeDecision, QueuedNotice } from "../notifications/notice_queue.ts";

/**
 * The offer and due-diligence kinds of the queue (the deal's later kinds,
 * the delivery and its dispute cases, are `case_notices.ts`').
 */
export type LoiKind = Extract<
  NoticeKind,
  `offer_${string}` | `deal_diligence_${string}` | "deal_withdrawn" | `deal_exclusivity_${string}`
>;

/**
 * A reminder due 48 hours before the window ends is still about that end
 * while the end is at most this far away (an hour of slack for a late run).
 */
export const EXCLUSIVITY_REMINDER_HORIZON_MS = 49 * 3_600_000;

/** An offer version with its listing and deal, as the notices read it. */
interface OfferRead extends OfferFacts {
  status: string;
  /** Whether it is past `expires_at` (the database's clock). */
  lapsed: boolean;
  sellerId: string;
  buyerId: string;
  parentOfferId: string | null;
  deal: LoiDealFacts | null;
}

/** The offer `offerId`, or null when it is gone. */
async function readOffer(sql: Sql, offerId: string): Promise<OfferRead | null> {
  const offer = await sql.maybeOne<{
    id: string;
    listing_id: string;
    title: string;
    seller_id: string;
    buyer_id: string;
    status: string;
    amount: string;
    currency: string;
    terms: OfferTerms | null;
    proposed_by: DealSide;
    message: string | null;
    expires_at: Date;
    lapsed: boolean;
    parent_offer_id: string | null;
    deal_id: string | null;
    deal_amount: string | null;
    deal_currency: string | null;
    deal_status: string | null;
    exclusive_until: Date | null;
  }>(
    `select o.id, o.listing_id, l.title, l.seller_id, o.buyer_id, o.status, o.amount::text as amount,
            o.currency, o.terms, o.proposed_by, o.message, o.expires_at, o.expires_at <= now() as lapsed,
            o.parent_offer_id, d.id as deal_id, d.amount::text as deal_amount,
            d.currency as deal_currency, d.status as deal_status, d.exclusive_until
     from public.offers o
     join public.listings l on l.id = o.listing_id
     left join public.deals d on d.id = o.deal_id
     where o.id = $1`,
    [offerId],
  );
  if (!offer) return null;
  return {
    offerId: offer.id,
    listingId: offer.listing_id,
    title: offer.title,
    by: offer.proposed_by,
    amount: offer.amount,
    currency: offer.currency,
    terms: offer.terms,
    message: offer.message,
    expiresAt: offer.expires_at,
    status: offer.status,
    lapsed: offer.lapsed,
    sellerId: offer.seller_id,
    buyerId: offer.buyer_id,
    parentOfferId: offer.parent_offer_id,
    deal: offer.deal_id === null ? null : {
      dealId: offer.deal_id,
      listingId: offer.listing_id,
      title: offer.title,
      amount: offer.deal_amount ?? offer.amount,
      currency: offer.deal_currency ?? offer.currency,
      status: offer.deal_status ?? "pending_payment",
      exclusiveUntil: offer.exclusive_until,
    },
  };
}

/** A deal as the notices read it. */
interface DealRead extends LoiDealFacts {
  buyerId: string;
  sellerId: string;
  /** How long until the window ends (the database's clock); null without one. */
  msLeft: number | null;
}

/** The deal `dealId`, or null when it is gone. */
async function readDeal(sql: Sql, dealId: string): Promise<DealRead | null> {
  const deal = await sql.maybeOne<{
    id: string;
    listing_id: string;
    title: string;
    buyer_id: string;
    seller_id: string;
    amount: string;
    currency: string;
    status: string;
    exclusive_until: Date | null;
    ms_left: number | null;
  }>(
    `select d.id, d.listing_id, l.title, d.buyer_id, d.seller_id, d.amount::text as amount,
            d.currency, d.status, d.exclusive_until,
            (extract(epoch from d.exclusive_until - now()) * 1000)::float8 as ms_left
     from public.deals d join public.listings l on l.id = d.listing_id
     where d.id = $1`,
    [dealId],
  );
  if (!deal) return null;
  return {
    dealId: deal.id,
    listingId: deal.listing_id,
    title: deal.title,
    amount: deal.amount,
    currency: deal.currency,
    status: deal.status,
    exclusiveUntil: deal.exclusive_until,
    buyerId: deal.buyer_id,
    sellerId: deal.seller_id,
    msLeft: deal.ms_left,
  };
}

/** Whether `value` names who withdrew (`deal_events.detail.by`). */
function isWithdrawnBy(value: unknown): value is WithdrawnBy {
  return value === "buyer" || value === "seller" || value === "service";
}

/** Which side of `deal` `userId` is, or null for neither. */
function sideOf(deal: { buyerId: string; sellerId: string }, userId: string): DealSide | null {
  return userId === deal.buyerId ? "buyer" : userId === deal.sellerId ? "seller" : null;
}

/** The decision to write `notice` of `row`'s kind to its user, under `key`. */
function noticeOf(
  row: QueuedNotice,
  notice: LoiNotice,
  key: string,
  data: Record<string, unknown>,
): NoticeDecision {
  return {
    action: "notice",
    notice: {
      userId: row.userId,
      type: "handover",
      title: notice.title,
      body: notice.body,
      link: notice.link,
      data,
      key,
      email: { emailType: NOTICE_EMAIL_TYPES[row.kind], content: notice.email },
    },
  };
}

/** The in-app data of a deal's notices. */
function dealData(deal: DealRead): Record<string, unknown> {
  return {
    dealId: deal.dealId,
    listingId: deal.listingId,
    status: deal.status,
    exclusiveUntil: deal.exclusiveUntil?.toISOString() ?? null,
  };
}

/** The key of a notice about `deal`'s current window (`<kind>:<deal>:<end in epoch ms>`). */
function windowKey(kind: LoiKind, deal: DealRead & { exclusiveUntil: Date }): string {
  return `${kind}:${deal.dealId}:${deal.exclusiveUntil.getTime()}`;
}

/** Why a deal's window is no longer news, or null while it is open. */
function windowClosed(deal: DealRead): string | null {
  if (deal.status !== "in_diligence") return `deal ${deal.status}`;
  if (deal.exclusiveUntil === null || deal.msLeft === null || deal.msLeft <= 0) {
    return "exclusivity over";
  }
  return null;
}

/** To the other side: a counter-offer, while it is still the live version. */
const offerCountered: NoticeBuilder = async (_ctx, sql, row): Promise<NoticeDecision> => {
  const offer = await readOffer(sql, row.subjectId);
  if (!offer) return { action: "drop", reason: "offer gone" };
  if (offer.status !== "pending") return { action: "drop", reason: `offer ${offer.status}` };
  if (offer.lapsed) return { action: "drop", reason: "offer expired" };
  return noticeOf(row, offerCounteredNotice(offer), `offer_countered:${offer.offerId}`, {
    offerId: offer.offerId,
    listingId: offer.listingId,
    parentOfferId: offer.parentOfferId,
    proposedBy: offer.by,
    status: offer.status,
  });
};

/** To the version's author: it was accepted, and what the deal does next. */
const offerAccepted: NoticeBuilder = async (_ctx, sql, row): Promise<NoticeDecision> => {
  const offer = await readOffer(sql, row.subjectId);
  if (!offer) return { action: "drop", reason: "offer gone" };
  if (!offer.deal) return { action: "drop", reason: "no deal" };
  return noticeOf(row, offerAcceptedNotice(offer, offer.deal), `offer_accepted:${offer.offerId}`, {
    offerId: offer.offerId,
    listingId: offer.listingId,
    dealId: offer.deal.dealId,
    dealStatus: offer.deal.status,
    exclusiveUntil: offer.deal.exclusiveUntil?.toISOString() ?? null,
  });
};

/** To the seller: the buyer proceeds to payment. */
const diligenceConfirmed: NoticeBuilder = async (_ctx, sql, row): Promise<NoticeDecision> => {
  const deal = await readDeal(sql, row.subjectId);
  if (!deal) return { action: "drop", reason: "deal gone" };
  return noticeOf(
    row,
    diligenceConfirmedNotice(deal),
    `deal_diligence_confirmed:${deal.dealId}`,
    dealData(deal),
  );
};

/** To the other side: a withdrawal during due diligence, with its reason. */
const dealWithdrawn: NoticeBuilder = async (_ctx, sql, row): Promise<NoticeDecision> => {
  const deal = await readDeal(sql, row.subjectId);
  if (!deal) return { action: "drop", reason: "deal gone" };
  const to = sideOf(deal, row.userId);
  if (!to) return { action: "drop", reason: "not a participant" };
  const event = await sql.maybeOne<{ by: string | null; reason: string | null }>(
    `select e.detail ->> 'by' as by, e.detail ->> 'reason' as reason
     from public.deal_events e
     where e.deal_id = $1 and e.cause = 'withdrawn'
     order by e.id desc
     limit 1`,
    [deal.dealId],
  );
  // withdraw_from_deal() puts the side on the event; without it, the side not told withdrew.
  const by: WithdrawnBy = isWithdrawnBy(event?.by) ? event.by : otherSide(to);
  const reason = event?.reason ?? null;
  return noticeOf(
    row,
    dealWithdrawnNotice(deal, { by, reason }, to),
    `deal_withdrawn:${deal.dealId}`,
    {
      ...dealData(deal),
      by,
    },
  );
};

/** To the buyer: the seller extended the window (while it is still open). */
const exclusivityExtended: NoticeBuilder = async (_ctx, sql, row): Promise<NoticeDecision> => {
  const deal = await readDeal(sql, row.subjectId);
  if (!deal) return { action: "drop", reason: "deal gone" };
  const closed = windowClosed(deal);
  if (closed || !deal.exclusiveUntil) return { action: "drop", reason: closed ?? "no window" };
  return noticeOf(
    row,
    exclusivityExtendedNotice(deal),
    windowKey("deal_exclusivity_extended", { ...deal, exclusiveUntil: deal.exclusiveUntil }),
    dealData(deal),
  );
};

/** To either side: the window ends in 48 hours (unless it moved or closed). */
const exclusivityEnding: NoticeBuilder = async (_ctx, sql, row): Promise<NoticeDecision> => {
  const deal = await readDeal(sql, row.subjectId);
  if (!deal) return { action: "drop", reason: "deal gone" };
  const to = sideOf(deal, row.userId);
  if (!to) return { action: "drop", reason: "not a participant" };
  const closed = windowClosed(deal);
  if (closed || !deal.exclusiveUntil) return { action: "drop", reason: closed ?? "no window" };
  if ((deal.msLeft ?? 0) > EXCLUSIVITY_REMINDER_HORIZON_MS) {
    return { action: "drop", reason: "exclusivity extended" };
  }
  return noticeOf(
    row,
    exclusivityEndingNotice(deal, to),
    windowKey("deal_exclusivity_ending", { ...deal, exclusiveUntil: deal.exclusiveUntil }),
    { ...dealData(deal), side: to },
  );
};

/** To either side: the window lapsed and the deal is cancelled. */
const exclusivityLapsed: NoticeBuilder = async (_ctx, sql, row): Promise<NoticeDecision> => {
  const deal = await readDeal(sql, row.subjectId);
  if (!deal) return { action: "drop", reason: "deal gone" };
  const to = sideOf(deal, row.userId);
  if (!to) return { action: "drop", reason: "not a participant" };
  if (!deal.exclusiveUntil) return { action: "drop", reason: "no window" };
  return noticeOf(
    row,
    exclusivityLapsedNotice(deal, to),
    `deal_exclusivity_lapsed:${deal.dealId}`,
    { ...dealData(deal), side: to },
  );
};

/** The builders of the offer and due-diligence kinds. */
export const LOI_NOTICE_BUILDERS: Readonly<Record<LoiKind, NoticeBuilder>> = {
  offer_countered: offerCountered,
  offer_accepted: offerAccepted,
  deal_diligence_confirmed: diligenceConfirmed,
  deal_withdrawn: dealWithdrawn,
  deal_exclusivity_extended: exclusivityExtended,
  deal_exclusivity_ending: exclusivityEnding,
  deal_exclusivity_lapsed: exclusivityLapsed,
};
