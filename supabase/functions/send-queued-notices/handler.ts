/**
 * `send-queued-notices` (scheduled every minute; the scheduler, the
 * service-role key or an admin; the anon key locally with `LOCAL_DEV=true`):
 * writes the notices the database queued (`public.notice_queue`) — the
 * seller told of an access request, the buyer of each answer, a participant
 * of messages unread for 15 minutes, the admins of a reported conversation,
 * the other side of a counter-offer, the author of an accepted offer, the
 * buyer and seller of a deal's due diligence (confirmed, withdrawn,
 * exclusivity extended, ending in 48 hours, lapsed), the seller of the
 * buyer's acceptance of the delivery, and the buyer and seller of a dispute
 * case (opened, a settlement proposed, escalated — every admin too —
 * resolved) — once each, and answers the job counts (`items.<kind>` lists
 * the rows sent). A start while a run is in progress answers 200
 * `skipped`; a row that cannot be written makes the run answer 500
 * `partial_failure` and is tried again next run
 * (`_shared/notifications/notice_queue.ts`).
 *
 * @module
 */
import { defineFunction } from "../_shared/platform/function.ts";
import { type NoticeBuilders, runNoticeQueue } from "../_shared/notifications/notice_queue.ts";
import { LISTING_ACCESS_NOTICE_BUILDERS } from "../_shared/listing_access/notices.ts";
import { CONVERSATION_NOTICE_BUILDERS } from "../_shared/conversations/notices.ts";
import { LOI_NOTICE_BUILDERS } from "../_shared/deals/loi_notices.ts";
import { CASE_NOTICE_BUILDERS } from "../_shared/deals/case_notices.ts";

/** What each kind of queued notice says (`shared/notice_kinds.ts`). */
const BUILDERS: NoticeBuilders = {
  ...LISTING_ACCESS_NOTICE_BUILDERS,
  ...CONVERSATION_NOTICE_BUILDERS,
  ...LOI_NOTICE_BUILDERS,
  ...CASE_NOTICE_BUILDERS,
};

export default defineFunction({
  name: "send-queued-notices",
  access: "scheduled",
  group: "notifications",
  summary:
    "Writes the notices access requests, decisions, unread messages, reports, offers, deals in due diligence, accepted deliveries and dispute cases owe, once each (every minute)",
  beyondInterface:
    "Confidential listings, conversations, offers, due diligence, deliveries and dispute cases change state through RPCs with no function in the path; this delivers what those changes owe users (e-mail needs a function)",
  output: "JobAnswer",
  handle({ ctx }) {
    return runNoticeQueue(ctx, BUILDERS);
  },
});
