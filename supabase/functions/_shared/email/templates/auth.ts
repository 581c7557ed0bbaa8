/**
 * Supabase Auth's e-mails (sign-up, invite, magic link, password reset,
 * e-mail change, reauthentication), written by us instead of Auth: the
 * Send Email Hook (`auth-email-webhook`) and `send-auth-email` both render
 * them here. Every link goes to Auth's verify endpoint,
 * `<SUPABASE_URL>/auth/v1/verify?token=<token_hash>&type=<action>&redirect_to=<redirect_to>`,
 * as the Send Email Hook guide builds it
 * (https://supabase.com/docs/guides/auth/auth-hooks/send-email-hook: `type`
 * is the hook's `email_action_type`, so `signup` for a sign-up).
 *
 * @module
 */
import type { AuthEmailAction, EmailType } from "../../../../../shared/notifications.ts";
import type { Env } from "../../platform/env.ts";
import { invalidInput } from "../../platform/errors.ts";
import { type EmailContent, renderEmail } from "../render.ts";
import type { EmailMessage } from "../send.ts";

/** What one auth action's e-mails are made of (the hook payload's fields, empty ones left out). */
export interface AuthEmailRequest {
  action: AuthEmailAction;
  /** The user's address (for `email_change`: the current one). */
  email: string;
  /** `email_change`: the address the user is moving to. */
  newEmail?: string;
  /** The user's name, for the greeting. */
  name?: string;
  /** The one-time code (`email_data.token`). */
  token?: string;
  /** The hashed token of the verify link (`email_data.token_hash`). */
  tokenHash?: string;
  /** `email_change` with secure change on: the second code (`email_data.token_new`). */
  tokenNew?: string;
  /** `email_change` with secure change on: the second hash (`email_data.token_hash_new`). */
  tokenHashNew?: string;
  /** Where Auth sends the user after verifying. */
  redirectTo?: string;
}

/** One auth e-mail: who gets it, its `email_logs` type and what it says. */
export interface AuthEmail {
  to: string;
  emailType: EmailType;
  content: EmailContent;
}

/** Auth's verify link for `tokenHash`; every value is URL-encoded. */
export function verifyUrl(
  supabaseUrl: string,
  tokenHash: string,
  action: AuthEmailAction,
  redirectTo?: string,
): string {
  const params = new URLSearchParams({ token: tokenHash, type: action });
  if (redirectTo) params.set("redirect_to", redirectTo);
  return `${supabaseUrl.replace(/\/+$/, "")}/auth/v1/verify?${params}`;
}

/**
 * The e-mails of one auth action: one, or two for an `email_change` with
 * secure e-mail change on. 400 `invalid_input` when a field the action
 * needs is missing; 503 `not_configured` without `SUPABASE_URL`.
 */
export function authEmails(input: AuthEmailRequest, env: Env): AuthEmail[] {
  const supabaseUrl = env.require("SUPABASE_URL");
  const link = (tokenHash: string) =>
    verifyUrl(supabaseUrl, tokenHash, input.action, input.redirectTo);
  const greeting = input.name ? [`Hi ${input.name},`] : [];
  const emailType: EmailType = `auth_${input.action}`;

  if (input.action === "reauthentication") {
    if (!input.token) throw invalidInput("Cannot write the e-mail: reauthentication needs token");
    return [{ to: input.email, emailType, content: reauthenticationEmail(greeting, input.token) }];
  }
  if (input.action === "email_change") return emailChangeEmails(input, greeting, link);
  if (!input.tokenHash) {
    throw invalidInput(`Cannot write the e-mail: ${input.action} needs token_hash`);
  }
  const content = LINK_EMAILS[input.action](greeting, link(input.tokenHash), input.token);
  return [{ to: input.email, emailType, content }];
}

/** `email` ready for the sender: rendered, and never suppressed (auth e-mails honour no preference). */
export function authEmailMessage(
  email: AuthEmail,
  siteUrl: string | undefined,
  idempotencyKey?: string,
): EmailMessage {
  return {
    to: email.to,
    emailType: email.emailType,
    preference: null,
    ...renderEmail(email.content, siteUrl),
    ...(idempotencyKey ? { idempotencyKey } : {}),
  };
}

type LinkAction = Exclude<AuthEmailAction, "reauthentication" | "email_change">;
type LinkEmail = (greeting: string[], url: string, code?: string) => EmailContent;

const IGNORE = "If you did not ask for this, you can ignore this e-mail.";

/** The button, with the one-time code as an alternative when Auth sent one. */
function withCode(content: Omit<EmailContent, "code">, code?: string): EmailContent {
  if (!code) return content;
  return {
    ...content,
    paragraphs: [...content.paragraphs, "Or enter this one-time code:"],
    code,
  };
}

const LINK_EMAILS: Record<LinkAction, LinkEmail> = {
  signup: (greeting, url, code) =>
    withCode({
      subject: "Confirm your sign-up",
      heading: "Confirm your e-mail address",
      paragraphs: [...greeting, "Thanks for signing up. Confirm this address to finish."],
      action: { label: "Confirm my address", url },
      footer: IGNORE,
    }, code),
  invite: (greeting, url, code) =>
    withCode({
      subject: "You have been invited to the marketplace",
      heading: "You have been invited",
      paragraphs: [...greeting, "You have been invited to create an account on the marketplace."],
      action: { label: "Accept the invitation", url },
      footer: IGNORE,
    }, code),
  magiclink: (greeting, url, code) =>
    withCode({
      subject: "Your sign-in link",
      heading: "Sign in to the marketplace",
      paragraphs: [...greeting, "Use this link to sign in. It works once and expires soon."],
      action: { label: "Sign in", url },
      footer: IGNORE,
    }, code),
  recovery: (greeting, url, code) =>
    withCode({
      subject: "Reset your password",
      heading: "Reset your password",
      paragraphs: [...greeting, "Someone asked to reset the password of your account."],
      action: { label: "Choose a new password", url },
      footer: IGNORE,
    }, code),
};

function reauthenticationEmail(greeting: string[], code: string): EmailContent {
  return {
    subject: "Your verification code",
    heading: "Confirm it is you",
    paragraphs: [...greeting, "Enter this code to confirm the change you asked for:"],
    code,
    footer: IGNORE,
  };
}

function emailChangeEmails(
  input: AuthEmailRequest,
  greeting: string[],
  link: (tokenHash: string) => string,
): AuthEmail[] {
  const emailType: EmailType = "auth_email_change";
  const change = (to: string, tokenHash: string, code: string | undefined, current: boolean) => ({
    to,
    emailType,
    content: withCode({
      subject: current ? "Confirm your e-mail change" : "Confirm your new e-mail address",
      heading: current ? "Confirm your e-mail change" : "Confirm your new e-mail address",
      paragraphs: [
        ...greeting,
        input.newEmail
          ? `You asked to change the e-mail address of your account from ${input.email} to ${input.newEmail}.`
          : "You asked to change the e-mail address of your account to this one.",
        current
          ? "Confirm from this address; the new address gets its own e-mail to confirm too."
          : "Confirm this new address to finish the change.",
      ],
      action: { label: "Confirm the change", url: link(tokenHash) },
      footer: IGNORE,
    }, code),
  });

  if (input.tokenHash && input.tokenHashNew) {
    if (!input.newEmail) {
      throw invalidInput("Cannot write the e-mails: email_change with two tokens needs new_email");
    }
    // Secure e-mail change: two e-mails. The hash names are inverted, as the
    // Send Email Hook guide says ("Email change behavior and token hash
    // mapping", https://supabase.com/docs/guides/auth/auth-hooks/send-email-hook):
    // token_hash_new = Hash(user.email, token) and token_hash = Hash(new
    // address, token_new), so the current address gets `token` with
    // `token_hash_new` and the new address gets `token_new` with `token_hash`.
    return [
      change(input.email, input.tokenHashNew, input.token, true),
      change(input.newEmail, input.tokenHash, input.tokenNew, false),
    ];
  }
  // One pair (secure change off, or an on-demand send): one e-mail, to the
  // new address when known ("use token with token_hash or token_new with
  // token_hash, depending on which fields are present", same guide).
  const tokenHash = input.tokenHash ?? input.tokenHashNew;
  if (!tokenHash) throw invalidInput("Cannot write the e-mail: email_change needs token_hash");
  return [change(input.newEmail ?? input.email, tokenHash, input.tokenNew ?? input.token, false)];
}
