/**
 * Sending what a verified Send Email Hook delivery asks for: its e-mail(s)
 * rendered (`templates/auth.ts`; two for a secure e-mail change) and sent
 * through the logged sender, each under the idempotency key
 * `auth-hook:<webhook-id>:<index>`. `auth-email-webhook` loads this module
 * with the first delivery whose signature holds (`auth_hook.ts` verifies),
 * so a refused delivery loads neither the templates nor the sender.
 *
 * @module
 */
import type { Context } from "../platform/context.ts";
import { HttpError } from "../platform/errors.ts";
import type { AuthHookPayload } from "./auth_hook_payload.ts";
import { emailFailureError, type EmailOutcome, sendEmail } from "./send.ts";
import { authEmailMessage, type AuthEmailRequest, authEmails } from "./templates/auth.ts";

/** Sends the e-mail(s) of verified delivery `webhookId`; throws the first send's failure. */
export async function sendAuthHookEmails(
  ctx: Context,
  webhookId: string,
  payload: AuthHookPayload,
): Promise<void> {
  const emails = authEmails(hookEmailRequest(payload), ctx.env);
  for (const [index, email] of emails.entries()) {
    const key = `auth-hook:${webhookId}:${index}`;
    const outcome = await sendEmail(ctx, authEmailMessage(email, ctx.env.values.SITE_URL, key));
    const failure = hookSendFailure(outcome);
    if (failure) throw failure;
  }
}

/** The user's name for a greeting, from the usual `user_metadata` keys. */
function nameOf(metadata: Record<string, unknown> | null | undefined): string | undefined {
  for (const key of ["full_name", "name"]) {
    const value = metadata?.[key];
    if (typeof value === "string" && value.trim()) return value.trim().slice(0, 100);
  }
  return undefined;
}

/** What the templates need from a hook body. */
function hookEmailRequest(payload: AuthHookPayload): AuthEmailRequest {
  const { user, email_data: data } = payload;
  return {
    action: data.email_action_type,
    email: user.email,
    newEmail: user.new_email || undefined,
    name: nameOf(user.user_metadata),
    token: data.token,
    tokenHash: data.token_hash,
    tokenNew: data.token_new,
    tokenHashNew: data.token_hash_new,
    redirectTo: data.redirect_to,
  };
}

/**
 * The error a hook delivery answers for one e-mail's `outcome`: the send's
 * own failure, or, for a repeated delivery (same `webhook-id`), a message an
 * earlier delivery failed to send, which must not be reported as sent.
 */
function hookSendFailure(outcome: EmailOutcome): HttpError | null {
  const failure = emailFailureError(outcome);
  if (failure || outcome.status !== "failed") return failure;
  return new HttpError(
    502,
    "upstream_unavailable",
    "Cannot send the e-mail: an earlier delivery of this hook failed to send it",
    { emailLogId: outcome.id },
  );
}
