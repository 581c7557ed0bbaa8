/**
 * `send-email` (system: the service-role key or an admin): sends one
 * e-mail through the logged sender and answers `{ id, status }` — the
 * `email_logs` row and `sent`, `captured` (local) or `suppressed` (the
 * recipient opted out of this type). A repeated `idempotencyKey` sends
 * nothing and answers the first row. When the provider fails the row says
 * `failed`, the retry sub-job tries again, and the caller gets 502
 * `upstream_unavailable` (`upstream_rejected` when it refused the message).
 *
 * @module
 */
import { htmlToText } from "../_shared/email/html.ts";
import { emailFailureError, sendEmail } from "../_shared/email/send.ts";
import { defineFunction } from "../_shared/platform/function.ts";

export default defineFunction({
  name: "send-email",
  access: "system",
  group: "notifications",
  summary: "Sends a transactional e-mail through the logged sender",
  input: () =>
    import("../../../shared/notification_schemas.ts").then((schemas) => schemas.SendEmailInput),
  output: "SendEmailOutput",
  async handle({ input, ctx }) {
    const outcome = await sendEmail(ctx, {
      to: input.to,
      subject: input.subject,
      html: input.html,
      text: input.text ?? htmlToText(input.html),
      emailType: input.emailType,
      replyTo: input.replyTo,
      idempotencyKey: input.idempotencyKey,
    });
    const failure = emailFailureError(outcome);
    if (failure) throw failure;
    return { id: outcome.id, status: outcome.status };
  },
});
