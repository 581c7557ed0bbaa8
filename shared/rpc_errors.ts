/**
 * The SQLSTATEs the listing access, conversation, offer and due-diligence
 * RPCs answer a caller's mistakes with, as supabase-js shows them
 * (`error.code`), and the HTTP status PostgREST gives each (a `PT<nnn>`
 * code is status nnn). Anything else is a server fault (HTTP 500).
 *
 * @module
 */

/** Each SQLSTATE with its HTTP status and what it means for the caller. */
export const RPC_ERRORS = {
  "22023": {
    status: 400,
    meaning: "A bad argument: missing, unknown, too long, or not plain text",
  },
  "23514": {
    status: 400,
    meaning: "A value a table's rules refuse (an offer's currency, amount, letter-of-intent terms)",
  },
  "42501": {
    status: 403,
    meaning:
      "Not allowed: not yours to do, or not signed in (401 for a caller without a user token); hint listing_under_loi: the listing is off the market during another buyer's due diligence",
  },
  "PT404": {
    status: 404,
    meaning: "No such listing, request, conversation, offer or deal, or none the caller may see",
  },
  "PT409": {
    status: 409,
    meaning: "Not in a state for it: decided, closed, expired, on sale no more",
  },
  "PT429": {
    status: 429,
    meaning: "Over a per-user or per-client limit; the message says when to retry",
  },
} as const;

/** A SQLSTATE an RPC answers a caller's mistake with. */
export type RpcErrorCode = keyof typeof RPC_ERRORS;
