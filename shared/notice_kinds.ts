/**
 * The kinds of `public.notice_queue`: what a change made through an RPC
 * owes a user, written once by `send-queued-notices` (every minute). The
 * migration's check constraint lists the same keys (a test keeps them
 * equal). Admins read the queue; the console shows it.
 *
 * @module
 */
import type { EmailType } from "./notifications.ts";

/** Each kind, with whom it tells what. */
export const NOTICE_KINDS = {
  listing_access_requested: "To the listing's seller: a buyer accepted the NDA and asks for access",
  listing_access_approved: "To the buyer: the seller approved their access",
  listing_access_declined: "To the buyer: the seller declined their request",
  listing_access_revoked: "To the buyer: the seller revoked their access",
  listing_access_expired: "To the buyer: their request lapsed after 14 days without an answer",
  conversation_unread: "To a participant: messages still unread 15 minutes after they were sent",
  conversation_reported: "To each admin: a participant reported a conversation",
  offer_countered:
    "To the other side of a new offer version: the buyer or the seller countered with new terms",
  offer_accepted:
    "To the author of the accepted version: the deal is made, in due diligence or awaiting payment",
  deal_diligence_confirmed:
    "To the seller: the buyer confirmed due diligence and proceeds to payment",
  deal_withdrawn: "To the other side: the buyer or the seller withdrew during due diligence",
  deal_exclusivity_extended: "To the buyer: the seller extended their exclusivity",
  deal_exclusivity_ending:
    "To the buyer and the seller: the exclusivity for due diligence ends in 48 hours",
  deal_exclusivity_lapsed:
    "To the buyer and the seller: the exclusivity ended without confirmation; the deal is cancelled",
  deal_delivery_accepted:
    "To the seller: the buyer accepted the delivery, ending the inspection window; the payout is released shortly",
  deal_case_opened:
    "To the buyer and the seller: one of them opened a dispute case; they have 7 days to settle it before an admin decides",
  deal_case_settlement_proposed:
    "To the other side of an open dispute case: the buyer or the seller proposes how to settle it",
  deal_case_escalated:
    "To the buyer, the seller and each admin: a dispute case was escalated; an admin decides it",
  deal_case_resolved:
    "To the buyer and the seller: a dispute case was resolved, with its outcome and what happens to the money",
} as const;

/** A kind of queued notice. */
export type NoticeKind = keyof typeof NOTICE_KINDS;

/**
 * The e-mail each kind writes (`email_logs.email_type`; its preference is
 * the notice's type). The queue's runs retry these (and
 * {@linkcode NOTICE_ADMIN_EMAIL_TYPES}') when they fail, without waiting for
 * the daily e-mail retry.
 */
export const NOTICE_EMAIL_TYPES = {
  listing_access_requested: "listing_access_requested",
  listing_access_approved: "listing_access_approved",
  listing_access_declined: "listing_access_declined",
  listing_access_revoked: "listing_access_revoked",
  listing_access_expired: "listing_access_expired",
  conversation_unread: "conversation_unread",
  conversation_reported: "admin_conversation_report",
  offer_countered: "offer_countered",
  offer_accepted: "offer_accepted",
  deal_diligence_confirmed: "deal_diligence_confirmed",
  deal_withdrawn: "deal_withdrawn",
  deal_exclusivity_extended: "deal_exclusivity_extended",
  deal_exclusivity_ending: "deal_exclusivity_ending",
  deal_exclusivity_lapsed: "deal_exclusivity_lapsed",
  deal_delivery_accepted: "deal_delivery_accepted",
  deal_case_opened: "deal_case_opened",
  deal_case_settlement_proposed: "deal_case_settlement_proposed",
  deal_case_escalated: "deal_case_escalated",
  deal_case_resolved: "deal_case_resolved",
} as const satisfies Record<NoticeKind, EmailType>;

/**
 * The e-mail a kind told to the parties and to the admins alike writes for
 * an admin (its preference `admin_alerts`): the admin's alert says another
 * thing than the parties' notice, under its own `admin_*` type as every
 * admin e-mail has. Kinds told only to admins (`conversation_reported`)
 * name their admin type in {@linkcode NOTICE_EMAIL_TYPES}.
 */
export const NOTICE_ADMIN_EMAIL_TYPES = {
  deal_case_escalated: "admin_deal_case_escalated",
} as const satisfies Partial<Record<NoticeKind, EmailType>>;

/** Every kind. */
export const NOTICE_KIND_NAMES = Object.keys(NOTICE_KINDS) as NoticeKind[];

/**
 * `notice_queue.status`: `pending` (waiting for its due time or a run),
 * `sent` (the notice was written; its e-mail may still be suppressed by the
 * user's preference), `dropped` (nothing left to tell: `outcome` says why),
 * `failed` (5 attempts could not write it).
 */
export const NOTICE_QUEUE_STATUSES = ["pending", "sent", "dropped", "failed"] as const;

/** A `notice_queue.status`. */
export type NoticeQueueStatus = (typeof NOTICE_QUEUE_STATUSES)[number];
