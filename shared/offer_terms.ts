/**
 * Letters of intent (`docs/deals.md`, "Letters of intent"): the terms an
 * offer may carry (`offers.terms`, frozen on the deal as `deals.terms`) as
 * stored, their bounds, the holdback they leave, and the offer chain's and
 * due diligence's states and moves. The zod schemas — the terms as a form
 * sends them, and each RPC's arguments — are in `offer_terms_schemas.ts`
 * (this module loads no library: the server reads stored terms with it).
 *
 * @module
 */

/** The bounds of each term (days are whole days). */
export const OFFER_TERM_LIMITS = {
  holdbackDays: { min: 0, max: 60 },
  inspectionDays: { min: 1, max: 30, default: 7 },
  exclusivityDays: { min: 0, max: 45, default: 14 },
  conditions: { max: 10, maxLength: 500 },
} as const;

/**
 * The inspection and the holdback together last at most this many days:
 * the payment processor holds a charge's funds 90 days from payment, and the
 * holdback is paid within 80 days of funding (`offer_terms_checked()`).
 */
export const INSPECTION_AND_HOLDBACK_MAX_DAYS = 80;

/** An exclusivity window never lasts longer than this many days from acceptance, extensions included. */
export const EXCLUSIVITY_MAX_DAYS = 45;

/** Both sides are reminded this many hours before the exclusivity ends. */
export const EXCLUSIVITY_REMINDER_HOURS = 48;

/** A negotiation holds at most this many versions (`counter_offer` answers PT409 beyond). */
export const OFFER_CHAIN_MAX_VERSIONS = 20;

/** Counter-offers a user may make per day (`client_limits` `offer_counter:per_day`, its default). */
export const OFFER_COUNTER_LIMIT_PER_DAY = 50;

/**
 * The hint (`error.hint`) of the 42501 that refuses an offer, an access
 * request or an approval while another buyer's letter of intent holds the
 * listing.
 */
export const LISTING_UNDER_LOI = "listing_under_loi";

/**
 * The terms as stored (`offers.terms`, `deals.terms`): every key present,
 * defaults filled, checked by `public.offer_terms_checked()`.
 */
export interface OfferTerms {
  /** Paid to the seller when escrow releases, major units with two decimals ("900.00"). */
  cash_at_close: string;
  /** Days the holdback (the rest of the amount) is kept after the release; 0 without one. */
  holdback_days: number;
  /** The buyer's inspection period after the handover, in days. */
  inspection_days: number;
  /** The buyer's exclusivity for due diligence, in days; 0: straight to payment. */
  exclusivity_days: number;
  /** `YYYY-MM-DD`, or null. */
  proposed_close_date: string | null;
  /** The conditions, cleaned; possibly none. */
  conditions: string[];
}

/** `"900.5"` → 90050n hundredths (exact). */
export function hundredths(amount: string): bigint {
  const [whole, fraction = ""] = amount.split(".");
  return BigInt(whole!) * 100n + BigInt(fraction.padEnd(2, "0"));
}

/** 90050n → `"900.50"`. */
export function fromHundredths(value: bigint): string {
  const text = value.toString().padStart(3, "0");
  return `${text.slice(0, -2).replace(/^0+(?=\d)/, "")}.${text.slice(-2)}`;
}

/** The holdback of a deal or offer: `amount − cash_at_close`, a decimal string (`"0.00"` without one). */
export function holdbackOf(amount: string, terms: Pick<OfferTerms, "cash_at_close">): string {
  return fromHundredths(hundredths(amount) - hundredths(terms.cash_at_close));
}

/** `offers.status`, every value. */
export const OFFER_STATUSES = [
  "pending",
  "accepted",
  "declined",
  "withdrawn",
  "expired",
  "countered",
] as const;
/** An offer's status. */
export type OfferStatus = (typeof OFFER_STATUSES)[number];

/** `offers.decline_reason`: why an offer was declined without a party deciding. */
export const OFFER_DECLINE_REASONS = ["listing_under_loi", "another_offer_accepted"] as const;

/** Who makes a move on an offer version: the side that wrote it, the other side, or nobody (a lapse). */
export type OfferActor = "author" | "recipient" | "system";

/** One move of an offer version (the letters of intent migration's table). */
export interface OfferMove {
  from: OfferStatus;
  to: OfferStatus;
  by: OfferActor;
  /** The RPC that makes it (null: the expiry sweep, or another offer's acceptance). */
  rpc: "accept_offer" | "decline_offer" | "counter_offer" | "withdraw_offer" | null;
}

/** Every allowed move of an offer version; any other is refused (PT409, or 42501 for the wrong side). */
export const OFFER_MOVES: readonly OfferMove[] = [
  { from: "pending", to: "accepted", by: "recipient", rpc: "accept_offer" },
  { from: "pending", to: "declined", by: "recipient", rpc: "decline_offer" },
  { from: "pending", to: "countered", by: "recipient", rpc: "counter_offer" },
  { from: "pending", to: "withdrawn", by: "author", rpc: "withdraw_offer" },
  { from: "pending", to: "expired", by: "system", rpc: null },
  { from: "pending", to: "declined", by: "system", rpc: null },
];

/** One move into or out of due diligence (`deals.status`; the rest is in `docs/deals.md`). */
export interface DiligenceMove {
  from: "in_diligence" | null;
  to: "in_diligence" | "pending_payment" | "cancelled";
  /** `deal_events.cause` of the move. */
  cause:
    | "offer_accepted"
    | "diligence_confirmed"
    | "withdrawn"
    | "exclusivity_lapsed"
    | "cancelled";
  by: "recipient" | "buyer" | "either" | "job" | "participant_or_admin";
  rpc:
    | "accept_offer"
    | "confirm_diligence"
    | "withdraw_from_deal"
    | "cancel_deal"
    | null;
}

/** The moves of due diligence, as the letters of intent migration allows them. */
export const DILIGENCE_MOVES: readonly DiligenceMove[] = [
  { from: null, to: "in_diligence", cause: "offer_accepted", by: "recipient", rpc: "accept_offer" },
  {
    from: "in_diligence",
    to: "pending_payment",
    cause: "diligence_confirmed",
    by: "buyer",
    rpc: "confirm_diligence",
  },
  {
    from: "in_diligence",
    to: "cancelled",
    cause: "withdrawn",
    by: "either",
    rpc: "withdraw_from_deal",
  },
  { from: "in_diligence", to: "cancelled", cause: "exclusivity_lapsed", by: "job", rpc: null },
  {
    from: "in_diligence",
    to: "cancelled",
    cause: "cancelled",
    by: "participant_or_admin",
    rpc: "cancel_deal",
  },
];

/** The longest reason of a withdrawal. */
export const WITHDRAW_REASON_MAX = 500;
