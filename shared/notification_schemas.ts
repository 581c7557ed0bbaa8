/**
 * zod schemas of the notification and e-mail functions' requests and
 * answers (`docs/email-and-notifications.md`).
 *
 * @module
 */
import { z } from "zod";
import { JobAnswer } from "./job_schemas.ts";
import {
  AUTH_EMAIL_ACTIONS,
  EMAIL_SEND_STATUSES,
  NOTIFICATION_TYPE_NAMES,
  PAYMENT_EMAIL_KINDS,
} from "./notifications.ts";

/** An e-mail address as the sender accepts it (no display name, at most 320 characters). */
export const EmailAddress = z.email().max(320);

/** A notification type (`shared/notifications.ts`). */
export const NotificationTypeName = z.enum(NOTIFICATION_TYPE_NAMES);

/** An `email_logs.send_status`. */
export const EmailSendStatusName = z.enum(EMAIL_SEND_STATUSES);

/**
 * A link in a notice: a path of the frontend (`/listings/…`, made absolute
 * with `SITE_URL` in e-mails) or an http(s) address.
 */
export const NoticeLink = z.string().max(2048).refine(
  (value) =>
    (value.startsWith("/") && !value.startsWith("//")) || /^https?:\/\/[^\s]+$/.test(value),
  { message: "A link is a path starting with / or an http(s) address" },
);

/**
 * An e-mail's label (`emailType`, stored in `email_logs.email_type`): any
 * printable text of 1 to 100 characters, trimmed — `listing_approved`,
 * `listingApproved` and `Weekly report` alike. No control characters or
 * line separators. A label the server knows (`EMAIL_TYPES` in
 * `notifications.ts`, matched as written or in snake case) honours its
 * notification type's e-mail preference; any other is always sent.
 */
export const EmailTypeLabel = z.string().trim().min(1).max(100).refine(
  (value) => !/[\p{Cc}\u2028\u2029]/u.test(value),
  { message: "An e-mail type is printable text: no control characters or line separators" },
);

/** `send-email` request: the interface's four fields, plus optional ones. */
export const SendEmailInput = z.object({
  to: EmailAddress,
  subject: z.string().trim().min(1).max(300),
  html: z.string().min(1).max(500_000),
  emailType: EmailTypeLabel,
  /** A plain-text part (derived from `html` when absent). */
  text: z.string().min(1).max(500_000).optional(),
  replyTo: EmailAddress.optional(),
  /** A repeated call with the same key sends nothing and answers the first call's row. */
  idempotencyKey: z.string().trim().min(1).max(200).optional(),
});

/** What sending did: the `email_logs` row and its status. */
export const EmailResult = z.object({ id: z.uuid(), status: EmailSendStatusName });

/** `send-email` answer. */
export const SendEmailOutput = EmailResult;

/** `send-notification` request. */
export const SendNotificationInput = z.object({
  userId: z.uuid(),
  type: NotificationTypeName,
  title: z.string().trim().min(1).max(200),
  body: z.string().trim().min(1).max(5000),
  link: NoticeLink.optional(),
  data: z.record(z.string(), z.unknown()).optional(),
  /** Also e-mail it (when the user's preference allows). */
  email: z.boolean().default(false),
});

/** What one notice did: its in-app row and its e-mail. */
export const NoticeResult = z.object({
  userId: z.uuid(),
  /** The in-app row, or null when none was written. */
  notificationId: z.uuid().nullable(),
  /** `created`, `duplicate` (written before), `suppressed` (preference) or `skipped` (not asked). */
  inApp: z.enum(["created", "duplicate", "suppressed", "skipped"]),
  /** The e-mail, or null when none was asked for. */
  email: EmailResult.nullable(),
});

/** `send-notification` answer. */
export const SendNotificationOutput = NoticeResult;

/** `send-payment-email` request. */
export const SendPaymentEmailInput = z.object({
  dealId: z.uuid(),
  kind: z.enum(PAYMENT_EMAIL_KINDS),
});

/** Answers that list one result per recipient. */
export const NoticesOutput = z.object({ results: z.array(NoticeResult) });

/**
 * `send-new-user-notification` request: `{ userId }` welcomes that user;
 * no body (the schedule's start) drains the new-user welcome queue.
 */
export const SendNewUserNotificationInput = z.object({ userId: z.uuid().optional() });

/** `send-new-user-notification` answer to `{ userId }`. */
export const NewUserWelcomeOutput = z.object({
  /** False when this user was welcomed before (nothing was sent). */
  welcomed: z.boolean(),
  welcome: NoticeResult,
  admins: z.array(NoticeResult),
});

/** `send-new-user-notification` answer: one user's welcome, or the queue drain's job answer. */
export const SendNewUserNotificationOutput = z.union([NewUserWelcomeOutput, JobAnswer]);

/** `send-listing-approval-notification` request. */
export const ListingIdInput = z.object({ listingId: z.uuid() });

/** `send-resubmission-notification` request. */
export const SendResubmissionNotificationInput = z.object({
  listingId: z.uuid(),
  reason: z.string().trim().min(1).max(2000),
});

/** `send-admin-message` request. */
export const SendAdminMessageInput = z.object({
  userIds: z.array(z.uuid()).min(1).max(500),
  subject: z.string().trim().min(1).max(200),
  message: z.string().trim().min(1).max(10_000),
});

/** `send-admin-message` answer: one result per recipient; unknown users are listed apart. */
export const SendAdminMessageOutput = z.object({
  results: z.array(NoticeResult),
  unknownUserIds: z.array(z.uuid()),
});

/** `send-admin-listing-notification` and `send-admin-contact-notification` answer. */
export const AdminDigestOutput = z.object({
  type: z.string(),
  /** Digests written (one per admin); 0 when nothing new arrived. */
  sent: z.number().int().min(0),
  /** Items the digest covers. */
  items: z.number().int().min(0),
  /** `admin_notification_types.last_sent_at` after the run. */
  lastSentAt: z.iso.datetime({ offset: true }).nullable(),
  results: z.array(NoticeResult),
});

/** `send-auth-email` request (system: re-send an auth e-mail on demand). */
export const SendAuthEmailInput = z.object({
  email: EmailAddress,
  actionType: z.enum(AUTH_EMAIL_ACTIONS),
  /** The hashed token of the verify link (not needed for reauthentication). */
  tokenHash: z.string().trim().min(1).max(500).optional(),
  /** The one-time code shown in the e-mail, when there is one. */
  token: z.string().trim().min(1).max(50).optional(),
  redirectTo: z.url({ protocol: /^https?$/ }).max(2048).optional(),
}).refine((v) => v.actionType === "reauthentication" ? v.token !== undefined : true, {
  message: "reauthentication needs token (the one-time code)",
  path: ["token"],
}).refine((v) => v.actionType === "reauthentication" || v.tokenHash !== undefined, {
  message: "tokenHash is required for this action",
  path: ["tokenHash"],
});

/** `send-auth-email` answer. */
export const SendAuthEmailOutput = z.object({ results: z.array(EmailResult) });

/** `auth-email-webhook` answer: `{}` on success (Supabase Auth's hook contract). */
export const AuthEmailWebhookOutput = z.object({}).strict();
