/**
 * What the notice queue's conversation rows tell (`send-queued-notices`):
 *
 * - `conversation_unread`: an e-mail (no in-app notice: the conversation's
 *   one in-app notice is kept up to date by the database as messages come
 *   and are read) to a participant whose messages from the other side are
 *   still unread 15 minutes after they were sent, at most one per
 *   conversation an hour. The timing is the database's
 *   (`conversation_email_due()`), asked again now: nothing unread (read
 *   meanwhile, or the conversation closed) drops the row, a message not
 *   yet 15 minutes old moves it later. The builder holds the conversation's
 *   row lock (for share) while it reads, so no message is being sent while
 *   the e-mail is written, and the row's `done_at` (the clock, under that
 *   lock) is exactly where the next e-mail's messages begin.
 * - `conversation_reported`: every admin's alert (in-app and e-mail, type
 *   `admin_alerts`), once per report; a recipient who is no longer an admin
 *   is skipped.
 *
 * @module
 */
import { NOTICE_EMAIL_TYPES, type NoticeKind } from "../../../../shared/notice_kinds.ts";
import {
  conversationLink,
  conversationReportedNotice,
  type ConversationSide,
  conversationUnreadEmail,
  MESSAGES_QUOTED,
} from "../email/templates/conversations.ts";
import type { NoticeBuilder, NoticeDecision } from "../notifications/notice_queue.ts";

/** The conversation kinds of the queue. */
export type ConversationKind = Extract<NoticeKind, `conversation_${string}`>;

/** The e-mail about unread messages. */
const unreadBuilder: NoticeBuilder = async (_ctx, sql, row): Promise<NoticeDecision> => {
  // Waits for a message being sent, and keeps the next one out until commit.
  const conversation = await sql.maybeOne<{
    id: string;
    buyer_id: string;
    seller_id: string;
    closed_at: Date | null;
    title: string;
  }>(
    `select c.id, c.buyer_id, c.seller_id, c.closed_at, l.title
     from public.conversations c join public.listings l on l.id = c.listing_id
     where c.id = $1
     for share of c`,
    [row.subjectId],
  );
  if (!conversation) return { action: "drop", reason: "conversation gone" };
  const due = await sql.one<{ due_at: Date | null; since: Date | null; now: Date }>(
    `select d.due_at, d.since, clock_timestamp() as now
     from public.conversation_email_due($1, $2) d`,
    [conversation.id, row.userId],
  );
  if (due.due_at === null) {
    return { action: "drop", reason: conversation.closed_at ? "closed" : "read" };
  }
  if (due.due_at > due.now) return { action: "later", dueAt: due.due_at };
  const messages = await sql.query<{ body: string; created_at: Date; total: number }>(
    `select m.body, m.created_at, count(*) over ()::integer as total
     from public.messages m
     where m.conversation_id = $1 and m.sender_id <> $2
       and ($3::timestamptz is null or m.created_at > $3)
     order by m.created_at desc
     limit $4`,
    [conversation.id, row.userId, due.since, MESSAGES_QUOTED],
  );
  const from: ConversationSide = row.userId === conversation.seller_id ? "buyer" : "seller";
  const content = conversationUnreadEmail({
    conversationId: conversation.id,
    title: conversation.title,
    from,
    messages: messages.reverse().map((m) => ({ body: m.body, sentAt: m.created_at })),
    total: messages[0]?.total ?? 0,
  });
  return {
    action: "notice",
    notice: {
      userId: row.userId,
      type: "conversations",
      title: content.heading,
      body: content.subject,
      link: conversationLink(conversation.id),
      inApp: false,
      key: `conversation_unread:${row.id}`,
      email: { emailType: NOTICE_EMAIL_TYPES.conversation_unread, content },
    },
  };
};

/** The admins' alert about a report. */
const reportedBuilder: NoticeBuilder = async (_ctx, sql, row): Promise<NoticeDecision> => {
  const report = await sql.maybeOne<{
    id: string;
    conversation_id: string;
    reason: string;
    created_at: Date;
    reporter_is_seller: boolean;
    title: string;
    to_admin: boolean;
  }>(
    `select r.id, r.conversation_id, r.reason, r.created_at,
            r.reporter_id = c.seller_id as reporter_is_seller, l.title,
            exists (
              select 1 from public.user_roles a where a.user_id = $2 and a.role = 'admin'
            ) as to_admin
     from public.conversation_reports r
     join public.conversations c on c.id = r.conversation_id
     join public.listings l on l.id = c.listing_id
     where r.id = $1`,
    [row.subjectId, row.userId],
  );
  if (!report) return { action: "drop", reason: "report gone" };
  if (!report.to_admin) return { action: "drop", reason: "no longer an admin" };
  const notice = conversationReportedNotice({
    conversationId: report.conversation_id,
    title: report.title,
    reporter: report.reporter_is_seller ? "seller" : "buyer",
    reason: report.reason,
    reportedAt: report.created_at,
  });
  return {
    action: "notice",
    notice: {
      userId: row.userId,
      type: "admin_alerts",
      title: notice.title,
      body: notice.body,
      link: notice.link,
      data: { reportId: report.id, conversationId: report.conversation_id },
      key: `conversation_reported:${report.id}`,
      email: { emailType: NOTICE_EMAIL_TYPES.conversation_reported, content: notice.email },
    },
  };
};

/** The builders of the conversation kinds. */
export const CONVERSATION_NOTICE_BUILDERS: Readonly<Record<ConversationKind, NoticeBuilder>> = {
  conversation_unread: unreadBuilder,
  conversation_reported: reportedBuilder,
};
