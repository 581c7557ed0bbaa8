/**
 * Admin alerts: one notice to every admin about something an admin must act
 * on (a payment returned or not, a dispute after the money left escrow, a
 * long escrow hold), in-app and by e-mail, written in the caller's
 * transaction. Idempotent per alert key: the same alert written twice (a
 * webhook delivered again, a job run again) reaches no admin twice.
 *
 * @module
 */
import type { EmailType } from "../../../../shared/notifications.ts";
import type { Context } from "../platform/context.ts";
import type { Sql } from "../platform/db.ts";
import type { EmailContent } from "../email/render.ts";
import { adminIds, type NoticeOutcome, queueNotice } from "./notify.ts";

/** One alert to every admin. */
export interface AdminAlert {
  /** What makes it unique (e.g. `dispute:<id>`): written once per admin. */
  key: string;
  title: string;
  /** Plain text for the in-app notice. */
  body: string;
  /** Where the admin acts (a frontend path). */
  link: string;
  data?: Record<string, unknown>;
  emailType: EmailType;
  email: EmailContent;
}

/** Writes `alert` for every admin in transaction `sql` (e-mails go out after the request). */
export async function queueAdminAlert(
  ctx: Context,
  sql: Sql,
  alert: AdminAlert,
): Promise<NoticeOutcome[]> {
  const admins = await adminIds(sql);
  if (admins.length === 0) {
    ctx.log.warn("admin alert not sent: there is no admin", { key: alert.key });
  }
  const outcomes: NoticeOutcome[] = [];
  for (const userId of admins) {
    outcomes.push(
      await queueNotice(ctx, sql, {
        userId,
        type: "admin_alerts",
        title: alert.title,
        body: alert.body,
        link: alert.link,
        data: alert.data,
        key: alert.key,
        email: { emailType: alert.emailType, content: alert.email },
      }),
    );
  }
  return outcomes;
}
