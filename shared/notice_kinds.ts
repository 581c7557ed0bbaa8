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
} as const;

/** A kind of queued notice. */
export type NoticeKind = keyof typeof NOTICE_KINDS;

/**
 * The e-mail each kind writes (`email_logs.email_type`; its preference is
 * the notice's type). The queue's runs retry these when they fail, without
 * waiting for the daily e-mail retry.
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
} as const satisfies Record<NoticeKind, EmailType>;

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
