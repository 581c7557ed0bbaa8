/**
 * Notification types and e-mail types: what a user can opt in or out of
 * (`notification_preferences`), the defaults when they have not chosen, and
 * which preference each e-mail type answers to. The frontend renders the
 * preferences screen from {@linkcode NOTIFICATION_TYPES}; the server checks
 * every e-mail and in-app notice against it.
 *
 * @module
 */

/** A kind of notice a user can switch on or off, per channel. */
export interface NotificationTypeInfo {
  /** What the user sees on the preferences screen. */
  label: string;
  /** Whether e-mail is on when the user has not chosen. */
  email: boolean;
  /** Whether in-app notices are on when the user has not chosen. */
  inApp: boolean;
  /**
   * Whether a new in-app notice is pushed live over Realtime (private topic
   * `user:<id>`). Only notices of critical changes are — a listing's review,
   * a deal's money, a deal's handover; the app polls `notifications` for the
   * rest (digests, price alerts, sponsored placements, admin alerts, ...).
   */
  pushed: boolean;
}

/**
 * Every notification type with its defaults. The migration's check
 * constraints list the same keys (a test keeps them equal).
 */
export const NOTIFICATION_TYPES = {
  account: {
    label: "Your account and payout verification",
    email: true,
    inApp: true,
    pushed: false,
  },
  listing_review: { label: "Reviews of your listings", email: true, inApp: true, pushed: true },
  new_listings: {
    label: "Daily digest of new listings",
    email: false,
    inApp: false,
    pushed: false,
  },
  payments: { label: "Payments, payouts and refunds", email: true, inApp: true, pushed: true },
  messages: {
    label: "Messages from the marketplace team",
    email: true,
    inApp: true,
    pushed: false,
  },
  admin_digest: {
    label: "Admin digests (review queue, contact form)",
    email: true,
    inApp: true,
    pushed: false,
  },
  price_alerts: {
    label: "Matches of your price alerts and saved searches",
    email: true,
    inApp: true,
    pushed: false,
  },
  sponsored: {
    label: "Your sponsored placements starting and ending",
    email: true,
    inApp: true,
    pushed: false,
  },
  handover: {
    label:
      "Your deals: offers and counter-offers, due diligence, the handover, inspection and dispute cases",
    email: true,
    inApp: true,
    pushed: true,
  },
  admin_alerts: {
    label:
      "Admin alerts: payments returned, disputes after payout, long escrow holds, payouts waiting for a seller, escalated deal cases, contact form ceiling, reported conversations",
    email: true,
    inApp: true,
    pushed: false,
  },
  listing_access: {
    label: "Access requests to your confidential listings, and the answers to yours",
    email: true,
    inApp: true,
    pushed: false,
  },
  conversations: {
    label: "Messages from buyers and sellers",
    email: true,
    inApp: true,
    pushed: false,
  },
} as const satisfies Record<string, NotificationTypeInfo>;

/** A notification type. */
export type NotificationType = keyof typeof NOTIFICATION_TYPES;

/** Every notification type. */
export const NOTIFICATION_TYPE_NAMES = Object.keys(NOTIFICATION_TYPES) as NotificationType[];

/** A delivery channel of a notice. */
export type NotificationChannel = "email" | "inApp";

/**
 * The `email_type` label of every e-mail the server writes, with the
 * notification type whose e-mail preference it honours (null: always sent —
 * sign-in links and the like are never suppressed).
 */
export const EMAIL_TYPES = {
  welcome: "account",
  seller_verification: "account",
  notification: null,
  listing_approved: "listing_review",
  listing_resubmission: "listing_review",
  new_listings_digest: "new_listings",
  payment_received: "payments",
  payout_released: "payments",
  refund_issued: "payments",
  partial_refund_issued: "payments",
  payout_waiting: "payments",
  holdback_released: "payments",
  payment_failed: "payments",
  payment_returned: "payments",
  admin_message: "messages",
  admin_listing_digest: "admin_digest",
  admin_contact_digest: "admin_digest",
  price_alert: "price_alerts",
  sponsored_started: "sponsored",
  sponsored_ending: "sponsored",
  handover_reminder: "handover",
  handover_complete: "handover",
  offer_countered: "handover",
  offer_accepted: "handover",
  deal_diligence_confirmed: "handover",
  deal_withdrawn: "handover",
  deal_exclusivity_extended: "handover",
  deal_exclusivity_ending: "handover",
  deal_exclusivity_lapsed: "handover",
  inspection_started: "handover",
  deal_delivery_accepted: "handover",
  deal_case_opened: "handover",
  deal_case_settlement_proposed: "handover",
  deal_case_escalated: "handover",
  deal_case_resolved: "handover",
  admin_payment_returned: "admin_alerts",
  admin_payment_return_failed: "admin_alerts",
  admin_payment_return_reversed: "admin_alerts",
  admin_dispute_after_payout: "admin_alerts",
  admin_payout_after_refund: "admin_alerts",
  admin_escrow_hold: "admin_alerts",
  admin_payout_waiting: "admin_alerts",
  admin_repayout: "admin_alerts",
  admin_deal_case_escalated: "admin_alerts",
  admin_conversation_report: "admin_alerts",
  listing_access_requested: "listing_access",
  listing_access_approved: "listing_access",
  listing_access_declined: "listing_access",
  listing_access_revoked: "listing_access",
  listing_access_expired: "listing_access",
  conversation_unread: "conversations",
  auth_signup: null,
  auth_invite: null,
  auth_magiclink: null,
  auth_recovery: null,
  auth_email_change: null,
  auth_reauthentication: null,
} as const satisfies Record<string, NotificationType | null>;

/** An e-mail type the server's own templates write. */
export type EmailType = keyof typeof EMAIL_TYPES;

/**
 * `email_logs.send_status`: `pending` (written, not yet delivered: in the
 * outbox or being sent), `sent`, `failed` (retried with backoff, at most 5
 * attempts), `captured` (local development without a provider key: stored,
 * shown at `/_local/mail`), `suppressed` (the recipient's preference blocks it).
 */
export const EMAIL_SEND_STATUSES = ["pending", "sent", "failed", "captured", "suppressed"] as const;

/** An `email_logs.send_status`. */
export type EmailSendStatus = (typeof EMAIL_SEND_STATUSES)[number];

/** The payment e-mail kinds of `send-payment-email`. */
export const PAYMENT_EMAIL_KINDS = [
  "payment_received",
  "payout_released",
  "refund_issued",
  "payment_failed",
] as const;

/** A payment e-mail kind. */
export type PaymentEmailKind = (typeof PAYMENT_EMAIL_KINDS)[number];

/** Supabase Auth's `email_action_type`s the auth e-mails render. */
export const AUTH_EMAIL_ACTIONS = [
  "signup",
  "invite",
  "magiclink",
  "recovery",
  "email_change",
  "reauthentication",
] as const;

/** An auth e-mail action. */
export type AuthEmailAction = (typeof AUTH_EMAIL_ACTIONS)[number];
