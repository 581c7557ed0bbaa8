/**
 * `send-auth-email` (system: the service-role key or an admin): sends an
 * auth e-mail on demand, the same one the Send Email Hook sends for that
 * action (`_shared/email/templates/auth.ts`), to `email`; for
 * `email_change`, one e-mail with `tokenHash`. Answers
 * `{ results: [{ id, status }] }`, one `email_logs` row per e-mail (its body
 * kept apart, where admins cannot read it). When the provider fails the row
 * says `failed` and the caller gets 502 (`upstream_unavailable` or
 * `upstream_rejected`), 503 `not_configured` without a provider. A sign-in
 * e-mail is not retried later (a later copy could carry a dead link): the
 * caller asks again.
 *
 * @module
 */
import { emailFailureError, sendEmail } from "../_shared/email/send.ts";
import { authEmailMessage, authEmails } from "../_shared/email/templates/auth.ts";
import { defineFunction } from "../_shared/platform/function.ts";

export default defineFunction({
  name: "send-auth-email",
  access: "system",
  group: "notifications",
  summary: "Sends an auth e-mail (signup, invite, ...) on demand",
  input: () =>
    import("../../../shared/notification_schemas.ts").then((schemas) => schemas.SendAuthEmailInput),
  output: "SendAuthEmailOutput",
  async handle({ input, ctx }) {
    const emails = authEmails({
      action: input.actionType,
      email: input.email,
      token: input.token,
      tokenHash: input.tokenHash,
      redirectTo: input.redirectTo,
    }, ctx.env);
    const results = [];
    for (const email of emails) {
      const outcome = await sendEmail(ctx, authEmailMessage(email, ctx.env.values.SITE_URL));
      const failure = emailFailureError(outcome);
      if (failure) throw failure;
      results.push({ id: outcome.id, status: outcome.status });
    }
    return { results };
  },
});
