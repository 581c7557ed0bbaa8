/**
 * zod schemas of the listing access RPCs and rows (`docs/listings.md`,
 * "Confidential listings"): the NDA acceptance (`request_listing_access`),
 * the decisions, and a request as the buyer and the seller read it. The
 * database is the authority (the listing access migration); these give a
 * form the same verdict before the call.
 *
 * @module
 */
import { z } from "zod";
import {
  ACCESS_DECISION_REASON_MAX,
  ACCESS_REQUEST_MESSAGE_MAX,
  ACCESS_REQUEST_STATUSES,
} from "./listing_access.ts";
import { UserText } from "./schemas.ts";

/** A request's status (`listing_access_requests.status`). */
export const AccessRequestStatus = z.enum(ACCESS_REQUEST_STATUSES);
/** A request's status. */
export type AccessRequestStatus = z.infer<typeof AccessRequestStatus>;

/** A version of the NDA (`nda_documents.version`). */
export const NdaVersion = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,19}$/);

/** A row of `nda_documents`: the platform's NDA, one version (readable by every signed-in user). */
export const NdaDocument = z.object({
  version: NdaVersion,
  body: z.string(),
  /** SHA-256 of the body's UTF-8 bytes, lower-case hex. */
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  published_at: z.string(),
});
/** One NDA version. */
export type NdaDocument = z.infer<typeof NdaDocument>;

/**
 * The NDA acceptance: `rpc("request_listing_access", args)` — the buyer
 * accepts `p_nda_version` (the current one: `rpc("current_nda_version")`)
 * and asks for access, with an optional note to the seller. Answers the
 * request's id (the same id while a request is pending or approved).
 */
export const RequestListingAccessArgs = z.object({
  p_listing: z.uuid(),
  p_nda_version: NdaVersion,
  p_message: UserText(ACCESS_REQUEST_MESSAGE_MAX, false).optional(),
});
/** The arguments of `request_listing_access`. */
export type RequestListingAccessArgs = z.input<typeof RequestListingAccessArgs>;

/** `rpc("decide_listing_access", args)`: the seller or an admin approves or declines. */
export const DecideListingAccessArgs = z.object({
  p_request: z.uuid(),
  p_approve: z.boolean(),
  p_reason: UserText(ACCESS_DECISION_REASON_MAX, false).optional(),
});
/** The arguments of `decide_listing_access`. */
export type DecideListingAccessArgs = z.input<typeof DecideListingAccessArgs>;

/** `rpc("withdraw_listing_access", args)`: the buyer takes a pending request back. */
export const WithdrawListingAccessArgs = z.object({ p_request: z.uuid() });
/** The arguments of `withdraw_listing_access`. */
export type WithdrawListingAccessArgs = z.input<typeof WithdrawListingAccessArgs>;

/** `rpc("revoke_listing_access", args)`: the seller or an admin takes approved access back. */
export const RevokeListingAccessArgs = z.object({
  p_request: z.uuid(),
  p_reason: UserText(ACCESS_DECISION_REASON_MAX, false).optional(),
});
/** The arguments of `revoke_listing_access`. */
export type RevokeListingAccessArgs = z.input<typeof RevokeListingAccessArgs>;

/** A row of `listing_access_requests` as the buyer and the seller read it. */
export const ListingAccessRequest = z.object({
  id: z.uuid(),
  listing_id: z.uuid(),
  buyer_id: z.uuid(),
  seller_id: z.uuid(),
  status: AccessRequestStatus,
  message: z.string().nullable(),
  nda_version: NdaVersion,
  nda_sha256: z.string(),
  nda_accepted_at: z.string(),
  expires_at: z.string(),
  decided_at: z.string().nullable(),
  decided_by: z.uuid().nullable(),
  decision_reason: z.string().nullable(),
  revoked_at: z.string().nullable(),
  revoked_by: z.uuid().nullable(),
  revoke_reason: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});
/** An access request. */
export type ListingAccessRequest = z.infer<typeof ListingAccessRequest>;
