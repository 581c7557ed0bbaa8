/**
 * Rows of `public.email_logs` (state machine in its migration): writing a
 * message, claiming it for an attempt, and recording how the attempt ended.
 * One column list for every query.
 *
 * Sign-in e-mails ({@linkcode isSignInEmail}: magic links, recovery and
 * confirmation links, one-time codes) carry credentials, and admins read
 * `email_logs`: their body is kept apart, in `email_sign_in_bodies`, which
 * only the service connection reads, while the message may still be sent or
 * in captured rows (the local mail viewer), and dropped once it was sent or
 * will not be tried again. Their `email_logs` row has no body (a check
 * constraint holds it so). Only {@linkcode claimEmailLog}, the attempt that
 * needs it, reads the body back.
 *
 * @module
 */
import type { EmailSendStatus, NotificationType } from "../../../../shared/notifications.ts";
import type { Sql } from "../platform/db.ts";
import { conflict } from "../platform/errors.ts";

/** Attempts a message gets in all (the first one included). */
export const MAX_ATTEMPTS = 5;

/** Wait after failed attempt n (1-based) before attempt n + 1. */
export const RETRY_BACKOFF_SECONDS = [60, 5 * 60, 30 * 60, 2 * 60 * 60] as const;

/** How long a claim keeps other senders off a row (longer than any provider call). */
export const CLAIM_SECONDS = 5 * 60;

/** An `email_logs` row as the sender reads it. */
export interface EmailLogRow {
  id: string;
  recipient_email: string;
  email_type: string;
  send_status: EmailSendStatus;
  error_message: string | null;
  user_id: string | null;
  from_address: string | null;
  reply_to: string | null;
  subject: string;
  html: string | null;
  text_body: string | null;
  idempotency_key: string | null;
  provider_message_id: string | null;
  attempts: number;
  next_attempt_at: Date | null;
  created_at: Date;
  sent_at: Date | null;
}

const COLUMN_NAMES = [
  "id",
  "recipient_email",
  "email_type",
  "send_status",
  "error_message",
  "user_id",
  "from_address",
  "reply_to",
  "subject",
  "html",
  "text_body",
  "idempotency_key",
  "provider_message_id",
  "attempts",
  "next_attempt_at",
  "created_at",
  "sent_at",
] as const;

const COLUMNS = COLUMN_NAMES.join(", ");

/**
 * The columns of row `r` with the body of a sign-in e-mail read from
 * `email_sign_in_bodies` `b` (left-joined on `b.email_log_id = r.id`).
 */
const COLUMNS_WITH_BODY = COLUMN_NAMES.map((name) =>
  name === "html" || name === "text_body"
    ? `coalesce(b.${name}, r.${name}) as ${name}`
    : `r.${name}`
).join(", ");

/**
 * Whether e-mails of `emailType` are sign-in e-mails (Supabase Auth's, sent
 * by `auth-email-webhook` and `send-auth-email`), whose body is a credential
 * kept apart from `email_logs` (see the module doc). The migration's check
 * constraint on `email_logs` uses the same rule (`starts_with(email_type,
 * 'auth_')`).
 */
export function isSignInEmail(emailType: string): boolean {
  return emailType.startsWith("auth_");
}

/** A message to write. */
export interface EmailToLog {
  to: string;
  subject: string;
  html: string;
  text: string;
  emailType: string;
  userId?: string | null;
  replyTo?: string | null;
  idempotencyKey?: string | null;
  /**
   * The notification type whose e-mail preference decides (null: always
   * sent); omitted: the one `emailType` maps to in `shared/notifications.ts`.
   */
  preference?: NotificationType | null;
}

/** What writing found: the row, and whether this call wrote it (false: its key was used before). */
export interface LoggedEmail {
  row: EmailLogRow;
  created: boolean;
}

/**
 * Writes `email` as `pending` (due now) or `suppressed` (with `note` as the
 * reason). With an idempotency key used before, writes nothing and answers
 * that row; 409 when that row is a different message (recipient, type or
 * subject).
 */
export async function insertEmailLog(
  sql: Sql,
  email: EmailToLog,
  status: "pending" | "suppressed",
  note?: string,
): Promise<LoggedEmail> {
  // A sign-in e-mail's body goes to email_sign_in_bodies in the same statement.
  const inserted = await sql.maybeOne<EmailLogRow>(
    `with inserted as (
       insert into public.email_logs (
         recipient_email, email_type, send_status, error_message, user_id, reply_to, subject,
         html, text_body, idempotency_key, next_attempt_at)
       values ($1, $2, $3, $4, $5, $6, $7,
         case when $11::boolean then null else $8::text end,
         case when $11::boolean then null else $9::text end,
         $10, case when $3 = 'pending' then now() end)
       on conflict (idempotency_key) do nothing
       returning ${COLUMNS}
     ), kept_apart as (
       insert into public.email_sign_in_bodies (email_log_id, html, text_body)
       select id, $8::text, $9::text from inserted where $11::boolean
     )
     select ${COLUMNS} from inserted`,
    [
      email.to,
      email.emailType,
      status,
      note ?? null,
      email.userId ?? null,
      email.replyTo ?? null,
      email.subject,
      email.html,
      email.text,
      email.idempotencyKey ?? null,
      isSignInEmail(email.emailType),
    ],
  );
  if (inserted) return { row: inserted, created: true };
  const existing = await sql.one<EmailLogRow>(
    `select ${COLUMNS} from public.email_logs where idempotency_key = $1`,
    [email.idempotencyKey ?? null],
  );
  if (
    existing.recipient_email.toLowerCase() !== email.to.toLowerCase() ||
    existing.email_type !== email.emailType || existing.subject !== email.subject
  ) {
    throw conflict(
      "Cannot send: this idempotency key was used for a different message",
      { idempotencyKey: email.idempotencyKey, emailLogId: existing.id },
    );
  }
  return { row: existing, created: false };
}

/** The row `id`, or null. */
export async function readEmailLog(sql: Sql, id: string): Promise<EmailLogRow | null> {
  return await sql.maybeOne<EmailLogRow>(
    `select ${COLUMNS} from public.email_logs where id = $1`,
    [id],
  );
}

/**
 * Claims row `id` for one attempt: only a pending or failed row that is due
 * and has attempts left. Counts the attempt and keeps other senders off for
 * {@linkcode CLAIM_SECONDS}. Null when the row is not there to claim. The
 * answer carries the body, a sign-in e-mail's too.
 */
export async function claimEmailLog(sql: Sql, id: string): Promise<EmailLogRow | null> {
  return await sql.maybeOne<EmailLogRow>(
    `with r as (
       update public.email_logs
       set send_status = 'pending', attempts = attempts + 1, last_attempt_at = now(),
           next_attempt_at = now() + make_interval(secs => $3)
       where id = $1 and send_status in ('pending', 'failed') and attempts < $2
         and next_attempt_at <= now()
       returning ${COLUMNS}
     )
     select ${COLUMNS_WITH_BODY}
     from r left join public.email_sign_in_bodies b on b.email_log_id = r.id`,
    [id, MAX_ATTEMPTS, CLAIM_SECONDS],
  );
}

/**
 * Rows due for an attempt (id and type), oldest due first (the retry
 * sub-job's queue); only those of `emailTypes` when given.
 */
export async function dueEmailLogs(
  sql: Sql,
  limit: number,
  emailTypes?: readonly string[],
): Promise<Array<Pick<EmailLogRow, "id" | "email_type">>> {
  return await sql.query<Pick<EmailLogRow, "id" | "email_type">>(
    `select id, email_type from public.email_logs
     where send_status in ('pending', 'failed') and next_attempt_at <= now() and attempts < $1
       and ($3::text[] is null or email_type = any($3::text[]))
     order by next_attempt_at
     limit $2`,
    [MAX_ATTEMPTS, limit, emailTypes ?? null],
  );
}

/**
 * Gives up pending message `id` that its request wrote but did not finish
 * sending, once that request is surely over: {@linkcode CLAIM_SECONDS} after
 * the row was written or its attempt claimed (a request still under way is
 * left alone). The row becomes `failed` for good with `note`, and a sign-in
 * e-mail's kept-apart body is dropped. Null when the row is not such a one.
 * For messages that are never sent late (sign-in e-mails: `retriedLater` in
 * `send.ts`).
 */
export async function dropUnsent(sql: Sql, id: string, note: string): Promise<EmailLogRow | null> {
  return await sql.maybeOne<EmailLogRow>(
    `with r as (
       update public.email_logs
       set send_status = 'failed', error_message = $2, next_attempt_at = null
       where id = $1 and send_status = 'pending'
         and coalesce(last_attempt_at, created_at) <= now() - make_interval(secs => $3)
       returning ${COLUMNS}
     ), forgotten as (
       delete from public.email_sign_in_bodies b using r
       where b.email_log_id = r.id
     )
     select ${COLUMNS} from r`,
    [id, note, CLAIM_SECONDS],
  );
}

/**
 * Records a delivered attempt: `sent` (the provider has it; the body is
 * cleared, a sign-in e-mail's kept-apart one too) or `captured` (kept for the
 * mail viewer). Only the claim that made attempt `attempt` may record it.
 */
export async function markDelivered(
  sql: Sql,
  claimed: EmailLogRow,
  status: "sent" | "captured",
  fields: { from: string; providerMessageId: string | null },
): Promise<EmailLogRow | null> {
  return await sql.maybeOne<EmailLogRow>(
    `with r as (
       update public.email_logs
       set send_status = $3, from_address = $4, provider_message_id = $5, sent_at = now(),
           error_message = null, next_attempt_at = null,
           html = case when $3 = 'sent' then null else html end,
           text_body = case when $3 = 'sent' then null else text_body end
       where id = $1 and attempts = $2 and send_status = 'pending'
       returning ${COLUMNS}
     ), forgotten as (
       delete from public.email_sign_in_bodies b using r
       where b.email_log_id = r.id and r.send_status = 'sent'
     )
     select ${COLUMNS} from r`,
    [claimed.id, claimed.attempts, status, fields.from, fields.providerMessageId],
  );
}

/**
 * Records a failed attempt with the provider's message; the row is due
 * again after the backoff when `retryable` and attempts are left, else it
 * stays failed for good (next_attempt_at null) and a sign-in e-mail's
 * kept-apart body is dropped (nothing will send it).
 */
export async function markFailed(
  sql: Sql,
  claimed: EmailLogRow,
  message: string,
  retryable: boolean,
): Promise<EmailLogRow | null> {
  const backoff = retryable && claimed.attempts < MAX_ATTEMPTS
    ? RETRY_BACKOFF_SECONDS[Math.min(claimed.attempts, RETRY_BACKOFF_SECONDS.length) - 1]!
    : null;
  return await sql.maybeOne<EmailLogRow>(
    `with r as (
       update public.email_logs
       set send_status = 'failed', error_message = left($3, 1000),
           next_attempt_at = case when $4::integer is null then null
                                  else now() + make_interval(secs => $4::integer) end
       where id = $1 and attempts = $2 and send_status = 'pending'
       returning ${COLUMNS}
     ), forgotten as (
       delete from public.email_sign_in_bodies b using r
       where b.email_log_id = r.id and r.next_attempt_at is null
     )
     select ${COLUMNS} from r`,
    [claimed.id, claimed.attempts, message, backoff],
  );
}
