/**
 * Confidential listings and NDA-gated access requests, as the frontend
 * calls them (supabase-js `rpc` and `from` under RLS; `docs/listings.md`,
 * "Confidential listings"): the request's states and moves, and its
 * limits. The zod schemas of the NDA acceptance and of each RPC's
 * arguments are in `listing_access_schemas.ts`; the access modes and the
 * blur rule that confidential fields add are in `blur.ts`.
 *
 * @module
 */
/** `listing_access_requests.status`, every value. */
export const ACCESS_REQUEST_STATUSES = [
  "pending",
  "approved",
  "suspended",
  "declined",
  "withdrawn",
  "expired",
  "revoked",
] as const;
/** A request's status (`AccessRequestStatus` of `listing_access_schemas.ts` is its zod schema). */
type Status = (typeof ACCESS_REQUEST_STATUSES)[number];

/**
 * The statuses of an open request: asking again while one is pending or
 * approved answers it; a suspended one (another buyer's letter of intent
 * holds the listing) cannot be asked again until it comes back.
 */
export const OPEN_ACCESS_REQUEST_STATUSES = [
  "pending",
  "approved",
  "suspended",
] as const satisfies readonly Status[];

/**
 * Who may make a move: the buyer who asked, the listing's seller or an
 * admin, the daily run, or another buyer's letter of intent (accepted:
 * suspends; its deal cancelled or refunded: restores).
 */
export type AccessRequestActor = "buyer" | "seller_or_admin" | "daily_run" | "letter_of_intent";

/** One move of the state machine (the listing access migration's table). */
export interface AccessRequestMove {
  from: Status;
  to: Status;
  by: AccessRequestActor;
  /** The RPC that makes it (the daily run: none). */
  rpc:
    | "decide_listing_access"
    | "withdraw_listing_access"
    | "revoke_listing_access"
    | "accept_offer"
    | null;
}

/**
 * Every allowed move; any other is refused with SQLSTATE PT409 (HTTP 409).
 * A seller blocking the conversation also makes `approved → revoked` and
 * `pending → declined`.
 */
export const ACCESS_REQUEST_MOVES: readonly AccessRequestMove[] = [
  { from: "pending", to: "approved", by: "seller_or_admin", rpc: "decide_listing_access" },
  { from: "pending", to: "declined", by: "seller_or_admin", rpc: "decide_listing_access" },
  { from: "pending", to: "withdrawn", by: "buyer", rpc: "withdraw_listing_access" },
  { from: "pending", to: "expired", by: "daily_run", rpc: null },
  { from: "approved", to: "revoked", by: "seller_or_admin", rpc: "revoke_listing_access" },
  { from: "approved", to: "suspended", by: "letter_of_intent", rpc: "accept_offer" },
  { from: "suspended", to: "approved", by: "letter_of_intent", rpc: null },
  { from: "suspended", to: "revoked", by: "seller_or_admin", rpc: "revoke_listing_access" },
];

/** A pending request lapses this many days after it was made (the daily run expires it). */
export const ACCESS_REQUEST_EXPIRY_DAYS = 14;

/** New requests a buyer may make per day (`client_limits` `access_request:per_day`, its default). */
export const ACCESS_REQUEST_LIMIT_PER_DAY = 30;

/** The longest note a buyer may send with a request. */
export const ACCESS_REQUEST_MESSAGE_MAX = 2000;

/** The longest reason of a decision or a revocation. */
export const ACCESS_DECISION_REASON_MAX = 500;
