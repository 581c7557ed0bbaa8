/**
 * The notifications module: one notice to one user, on the channels their
 * preferences allow — an in-app row (broadcast live by its trigger) and,
 * when asked, an e-mail through the one sender. Idempotent per `key`: the
 * same key for the same user writes neither again.
 *
 * @module
 */
import type { z } from "zod";
import type { NoticeResult } from "../../../../shared/notification_schemas.ts";
import type { EmailType, NotificationType } from "../../../../shared/notifications.ts";
import type { Context } from "../platform/context.ts";
import type { Sql } from "../platform/db.ts";
import { type EmailContent, renderEmail } from "../email/render.ts";
import { flushEmails, queueEmail } from "../email/send.ts";
import { channelsFor } from "../email/preferences.ts";

/** What one notice did (`shared/notification_schemas.ts`). */
export type NoticeOutcome = z.infer<typeof NoticeResult>;

/** The longest in-app body (`notifications.body` allows 5000 characters). */
export const MAX_NOTICE_BODY = 5000;

/** `text` cut to the in-app limit. */
function clipped(text: string): string {
  return text.length <= MAX_NOTICE_BODY ? text : `${text.slice(0, MAX_NOTICE_BODY - 1)}…`;
}

/** The e-mail idempotency key of notice `key` to `userId` (keys are per user; e-mail keys global). */
export function noticeEmailKey(key: string, userId: string): string {
  return `${key}:${userId}`;
}

/** Whether notice `key` was written for `userId` before (its in-app row or its e-mail). */
export async function wasNotified(sql: Sql, userId: string, key: string): Promise<boolean> {
  const row = await sql.one<{ done: boolean }>(
    `select exists (
       select 1 from public.notifications where user_id = $1 and dedupe_key = $2
     ) or exists (
       select 1 from public.email_logs where idempotency_key = $3
     ) as done`,
    [userId, key, noticeEmailKey(key, userId)],
  );
  return row.done;
}

/** One notice to one user. */
export interface Notice {
  userId: string;
  type: NotificationType;
  title: string;
  /** Plain text; clipped to {@linkcode MAX_NOTICE_BODY} in the app. */
  body: string;
  /** A frontend path or an http(s) address. */
  link?: string;
  data?: Record<string, unknown>;
  /** Makes the notice idempotent per user (in-app row and e-mail alike). */
  key?: string;
  /** Whether to write the in-app row (default true). */
  inApp?: boolean;
  /** The e-mail to send as well; omitted: in-app only. */
  email?: { emailType: EmailType; content: EmailContent; replyTo?: string };
}

/**
 * Writes `notice` in transaction `sql`: the in-app row when wanted and
 * allowed, and the e-mail into the request's outbox (or `suppressed`).
 */
export async function queueNotice(ctx: Context, sql: Sql, notice: Notice): Promise<NoticeOutcome> {
  const channels = await channelsFor(sql, notice.userId, notice.type);
  let notificationId: string | null = null;
  let inApp: NoticeOutcome["inApp"] = "skipped";
  if (notice.inApp !== false) {
    if (!channels.inApp) {
      inApp = "suppressed";
    } else {
      const row = await sql.maybeOne<{ id: string }>(
        `insert into public.notifications (user_id, type, title, body, link, data, dedupe_key)
         values ($1, $2, $3, $4, $5, $6::jsonb, $7)
         on conflict (user_id, dedupe_key) do nothing
         returning id`,
        [
          notice.userId,
          notice.type,
          notice.title,
          clipped(notice.body),
          notice.link ?? null,
          JSON.stringify(notice.data ?? {}),
          notice.key ?? null,
        ],
      );
      if (row) {
        notificationId = row.id;
        inApp = "created";
      } else {
        const existing = await sql.one<{ id: string }>(
          "select id from public.notifications where user_id = $1 and dedupe_key = $2",
          [notice.userId, notice.key ?? null],
        );
        notificationId = existing.id;
        inApp = "duplicate";
      }
    }
  }
  let email: NoticeOutcome["email"] = null;
  if (notice.email) {
    const to = await sql.maybeOne<{ email: string | null }>(
      "select email from public.profiles where id = $1",
      [notice.userId],
    );
    if (to?.email) {
      const rendered = renderEmail(notice.email.content, ctx.env.values.SITE_URL);
      const outcome = await queueEmail(ctx, sql, {
        to: to.email,
        ...rendered,
        emailType: notice.email.emailType,
        userId: notice.userId,
        replyTo: notice.email.replyTo,
        idempotencyKey: notice.key ? noticeEmailKey(notice.key, notice.userId) : undefined,
        preference: notice.type,
      });
      email = { id: outcome.id, status: outcome.status };
    } else {
      ctx.log.warn("notice not e-mailed: the user has no address", { user_id: notice.userId });
    }
  }
  return { userId: notice.userId, notificationId, inApp, email };
}

/**
 * Writes `notices` in one transaction, then delivers their e-mails and
 * answers each notice's outcome with its e-mail's status after delivery.
 */
export async function sendNotices(ctx: Context, notices: Notice[]): Promise<NoticeOutcome[]> {
  const results = await ctx.db.tx(async (sql) => {
    const out: NoticeOutcome[] = [];
    for (const notice of notices) out.push(await queueNotice(ctx, sql, notice));
    return out;
  });
  return await withDelivery(ctx, results);
}

/** Flushes the outbox and puts each e-mail's delivered status into `results`. */
export async function withDelivery(
  ctx: Context,
  results: NoticeOutcome[],
): Promise<NoticeOutcome[]> {
  const delivered = await flushEmails(ctx);
  return results.map((result) => {
    const outcome = result.email ? delivered.get(result.email.id) : undefined;
    return outcome ? { ...result, email: { id: outcome.id, status: outcome.status } } : result;
  });
}

/** Ids of every admin. */
export async function adminIds(sql: Sql): Promise<string[]> {
  const rows = await sql.query<{ user_id: string }>(
    "select user_id from public.user_roles where role = 'admin' order by created_at, user_id",
  );
  return rows.map((row) => row.user_id);
}
