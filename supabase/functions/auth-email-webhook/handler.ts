/**
 * `auth-email-webhook` (webhook: no JWT; the Standard Webhooks signature
 * with `SEND_EMAIL_HOOK_SECRET` is the authentication): Supabase Auth's Send
 * Email Hook. Verifies the delivery over the raw body, renders the action's
 * e-mail(s) (`_shared/email/templates/auth.ts`; two for a secure e-mail
 * change) and sends each through the logged sender, never suppressed.
 * Answers 200 `{}`; any failure is answered in the hook's error shape
 * `{ error: { http_code, code, message } }` with that status: 401 for a
 * missing, forged or stale signature (nothing sent or written), 400 for a
 * body of the wrong shape, 503 without the secret, 502/503 when the provider
 * failed. Each e-mail carries the idempotency key
 * `auth-hook:<webhook-id>:<index>`, so a delivery Auth retries sends nothing
 * twice.
 *
 * The hook runs inside Auth's transaction (a new user is not committed
 * yet), so the rows carry no `user_id`.
 *
 * @module
 */
import { hookErrorBody, verifyAuthHook } from "../_shared/email/auth_hook.ts";
import { defineFunction } from "../_shared/platform/function.ts";

export default defineFunction({
  name: "auth-email-webhook",
  access: "webhook",
  group: "notifications",
  summary: "Supabase Auth Send Email Hook",
  output: "AuthEmailWebhookOutput",
  errorBody: hookErrorBody,
  async handle({ ctx, request, rawBody }) {
    const { webhookId, payload } = await verifyAuthHook(ctx.env, request.headers, rawBody);
    // The templates and the sender load with the first verified delivery.
    const { sendAuthHookEmails } = await import("../_shared/email/auth_hook_send.ts");
    await sendAuthHookEmails(ctx, webhookId, payload);
    return {};
  },
});
