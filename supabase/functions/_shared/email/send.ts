/**
 * The one e-mail sender. Every message is written to `email_logs` before
 * the provider is called and its row says how it ended; the recipient's
 * preferences are honoured (a blocked message is logged `suppressed`), and
 * every attempt carries the provider idempotency key `email-log/<id>`, so a
 * retry never sends twice.
 *
 * - {@linkcode sendEmail}: write and deliver now (send-email, anything that
 *   answers with the outcome).
 * - {@linkcode queueEmail}: write inside the caller's transaction; the
 *   request's outbox delivers it once the handler is done (`ctx.outbox`), and
 *   the retry sub-job if the process dies first.
 * - {@linkcode deliverEmail}: one attempt at a written message (outbox, retry).
 *
 * @module
 */
import type { EmailSendStatus } from "../../../../shared/notifications.ts";
import type { Context } from "../platform/context.ts";
import type { Sql } from "../platform/db.ts";
import { HttpError } from "../platform/errors.ts";
import { emailBlockedBy } from "./preferences.ts";
import {
  claimEmailLog,
  type EmailLogRow,
  type EmailToLog,
  insertEmailLog,
  isSignInEmail,
  markDelivered,
  markFailed,
  readEmailLog,
} from "./email_logs.ts";
import { emailMode, EmailProviderError, sendThroughProvider } from "../platform/mailer.ts";

/** A message to send. */
export type EmailMessage = EmailToLog;

/** Why the last attempt did not deliver. */
export interface EmailFailure {
  code: "upstream_unavailable" | "upstream_rejected" | "not_configured";
  message: string;
  /** Whether the retry sub-job will try again. */
  retrying: boolean;
}

/** How a message ended (so far): its row and status, and why it failed. */
export interface EmailOutcome {
  id: string;
  status: EmailSendStatus;
  failure?: EmailFailure;
}

/**
 * Writes `message` and, unless the recipient opted out or its idempotency
 * key was used before, makes the first attempt now.
 */
export async function sendEmail(ctx: Context, message: EmailMessage): Promise<EmailOutcome> {
  const logged = await logEmail(ctx.db, message);
  if (!logged.created || logged.row.send_status !== "pending") return outcomeOf(logged.row);
  return await deliverEmail(ctx, logged.row.id);
}

/**
 * Writes `message` in the caller's transaction `sql` and puts it in the
 * request's outbox, delivered after the handler (a rollback leaves nothing
 * to deliver).
 */
export async function queueEmail(
  ctx: Context,
  sql: Sql,
  message: EmailMessage,
): Promise<EmailOutcome> {
  const logged = await logEmail(sql, message);
  if (logged.created && logged.row.send_status === "pending") {
    const id = logged.row.id;
    ctx.outbox.add(id, () => deliverEmail(ctx, id));
  }
  return outcomeOf(logged.row);
}

/**
 * Makes the request's queued deliveries now (rather than after the handler)
 * and answers each queued e-mail's outcome by its id.
 */
export async function flushEmails(ctx: Context): Promise<Map<string, EmailOutcome>> {
  // E-mails are the only deliveries queued (`queueEmail`), so every result is an outcome.
  return await ctx.outbox.flush() as Map<string, EmailOutcome>;
}

async function logEmail(sql: Sql, message: EmailMessage) {
  const blocked = await emailBlockedBy(sql, message);
  return await insertEmailLog(
    sql,
    message,
    blocked ? "suppressed" : "pending",
    blocked ?? undefined,
  );
}

/**
 * One attempt at written message `id`, when it is due and has attempts
 * left: sent through the provider, captured locally, or failed (and due
 * again after the backoff). A row someone else holds or that is done is
 * answered as it stands.
 */
export async function deliverEmail(ctx: Context, id: string): Promise<EmailOutcome> {
  const claimed = await claimEmailLog(ctx.db, id);
  if (!claimed) {
    const row = await readEmailLog(ctx.db, id);
    if (!row) throw new HttpError(404, "not_found", `E-mail "${id}" does not exist`);
    return outcomeOf(row);
  }
  const mode = emailMode(ctx.env);
  if (mode.kind === "unconfigured") {
    const row = await markFailed(ctx.db, claimed, mode.reason, retriedLater(claimed.email_type));
    return withFailure(row ?? claimed, "not_configured", mode.reason);
  }
  if (mode.kind === "capture") {
    const row = await markDelivered(ctx.db, claimed, "captured", {
      from: mode.from,
      providerMessageId: null,
    });
    ctx.log.info("e-mail captured (local)", { email_log_id: id, email_type: claimed.email_type });
    return outcomeOf(row ?? claimed);
  }
  try {
    const providerId = await sendThroughProvider(ctx.runtime, {
      from: mode.from,
      to: claimed.recipient_email,
      subject: claimed.subject,
      html: claimed.html ?? "",
      text: claimed.text_body ?? "",
      replyTo: claimed.reply_to,
    }, `email-log/${claimed.id}`);
    const row = await markDelivered(ctx.db, claimed, "sent", {
      from: mode.from,
      providerMessageId: providerId,
    });
    return outcomeOf(row ?? claimed);
  } catch (error) {
    if (!(error instanceof EmailProviderError)) throw error;
    const retry = error.retryable && retriedLater(claimed.email_type);
    const row = await markFailed(ctx.db, claimed, error.message, retry);
    ctx.log.warn("e-mail attempt failed", {
      email_log_id: id,
      email_type: claimed.email_type,
      attempt: claimed.attempts,
      provider_status: error.status,
      provider_code: error.providerCode,
    });
    return withFailure(
      row ?? claimed,
      error.retryable ? "upstream_unavailable" : "upstream_rejected",
      error.message,
    );
  }
}

/**
 * Whether a failed message of `emailType` is tried again later. Sign-in
 * e-mails (`auth_*`) are not: when the hook answers an error, Supabase Auth
 * fails the sign-in and its link dies with it, so a later copy would carry
 * a dead link. The user asks again instead.
 */
export function retriedLater(emailType: string): boolean {
  return !isSignInEmail(emailType);
}

function outcomeOf(row: EmailLogRow): EmailOutcome {
  return { id: row.id, status: row.send_status };
}

function withFailure(row: EmailLogRow, code: EmailFailure["code"], message: string): EmailOutcome {
  return {
    id: row.id,
    status: row.send_status,
    failure: { code, message, retrying: row.next_attempt_at !== null },
  };
}

/**
 * The error a caller that asked for one message sees when it failed: 503
 * `not_configured` without a provider, 502 `upstream_unavailable` when the
 * provider failed (the row is retried), 502 `upstream_rejected` when it
 * refused the message.
 */
export function emailFailureError(outcome: EmailOutcome): HttpError | null {
  const failure = outcome.failure;
  if (!failure) return null;
  const details = { emailLogId: outcome.id, retrying: failure.retrying };
  if (failure.code === "not_configured") {
    return new HttpError(503, "not_configured", `Cannot send e-mail: ${failure.message}`, details);
  }
  return new HttpError(
    502,
    failure.code,
    failure.code === "upstream_unavailable"
      ? `The e-mail provider failed; the message is logged and will be retried: ${failure.message}`
      : `The e-mail provider refused the message: ${failure.message}`,
    details,
  );
}
