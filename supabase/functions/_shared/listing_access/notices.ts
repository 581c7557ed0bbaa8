/**
 * What the notice queue's `listing_access_*` rows tell (`send-queued-notices`):
 * the seller of a new request, the buyer of each answer and of a request
 * that lapsed. The request is read as it is now: a request its buyer
 * withdrew (or that was answered, or lapsed) before the seller heard of it
 * is not news any more, and is dropped; an answer is always told. Each
 * notice's key is `<kind>:<request id>`, so a row handled twice (a run that
 * died after writing) writes nothing twice.
 *
 * @module
 */
import { NOTICE_EMAIL_TYPES, type NoticeKind } from "../../../../shared/notice_kinds.ts";
import {
  accessApprovedNotice,
  accessDeclinedNotice,
  accessExpiredNotice,
  type AccessNotice,
  accessRequestedNotice,
  type AccessRequestFacts,
  accessRevokedNotice,
} from "../email/templates/listing_access.ts";
import type { Sql } from "../platform/db.ts";
import type { NoticeBuilder, NoticeDecision, QueuedNotice } from "../notifications/notice_queue.ts";

/** The listing access kinds of the queue. */
export type ListingAccessKind = Extract<NoticeKind, `listing_access_${string}`>;

/** Per kind: the template, and the request status that makes it still news (null: always). */
const KINDS: Record<
  ListingAccessKind,
  { template: (facts: AccessRequestFacts) => AccessNotice; newsWhile: string | null }
> = {
  listing_access_requested: { template: accessRequestedNotice, newsWhile: "pending" },
  listing_access_approved: { template: accessApprovedNotice, newsWhile: null },
  listing_access_declined: { template: accessDeclinedNotice, newsWhile: null },
  listing_access_revoked: { template: accessRevokedNotice, newsWhile: null },
  listing_access_expired: { template: accessExpiredNotice, newsWhile: null },
};

/** The request of `row` with what its notices say, or null when it is gone. */
async function readRequest(
  sql: Sql,
  row: QueuedNotice,
): Promise<(AccessRequestFacts & { status: string }) | null> {
  const request = await sql.maybeOne<{
    id: string;
    listing_id: string;
    title: string;
    status: string;
    nda_version: string;
    message: string | null;
    expires_at: Date;
    decision_reason: string | null;
    revoke_reason: string | null;
  }>(
    `select r.id, r.listing_id, l.title, r.status, r.nda_version, r.message, r.expires_at,
            r.decision_reason, r.revoke_reason
     from public.listing_access_requests r
     join public.listings l on l.id = r.listing_id
     where r.id = $1`,
    [row.subjectId],
  );
  if (!request) return null;
  return {
    requestId: request.id,
    listingId: request.listing_id,
    title: request.title,
    status: request.status,
    ndaVersion: request.nda_version,
    message: request.message,
    expiresAt: request.expires_at,
    reason: row.kind === "listing_access_revoked"
      ? request.revoke_reason
      : row.kind === "listing_access_requested"
      ? null
      : request.decision_reason,
  };
}

/** The builder of one listing access kind. */
function builderOf(kind: ListingAccessKind): NoticeBuilder {
  const { template, newsWhile } = KINDS[kind];
  return async (_ctx, sql, row): Promise<NoticeDecision> => {
    const request = await readRequest(sql, row);
    if (!request) return { action: "drop", reason: "request gone" };
    if (newsWhile !== null && request.status !== newsWhile) {
      return { action: "drop", reason: `request ${request.status}` };
    }
    const notice = template(request);
    return {
      action: "notice",
      notice: {
        userId: row.userId,
        type: "listing_access",
        title: notice.title,
        body: notice.body,
        link: notice.link,
        data: {
          requestId: request.requestId,
          listingId: request.listingId,
          status: request.status,
        },
        key: `${kind}:${request.requestId}`,
        email: { emailType: NOTICE_EMAIL_TYPES[kind], content: notice.email },
      },
    };
  };
}

/** The builders of every listing access kind. */
export const LISTING_ACCESS_NOTICE_BUILDERS: Readonly<Record<ListingAccessKind, NoticeBuilder>> = {
  listing_access_requested: builderOf("listing_access_requested"),
  listing_access_approved: builderOf("listing_access_approved"),
  listing_access_declined: builderOf("listing_access_declined"),
  listing_access_revoked: builderOf("listing_access_revoked"),
  listing_access_expired: builderOf("listing_access_expired"),
};
