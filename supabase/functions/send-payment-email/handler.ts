/**
 * `send-payment-email` (system): the payment e-mails of a deal, `{ dealId,
 * kind }` with kind `payment_received`, `payout_released`, `refund_issued`
 * or `payment_failed` — to the party or parties concerned, amounts in the
 * deal's currency (the commission frozen on the deal once funded), each also
 * as an in-app notice. Idempotent per deal, kind and recipient: a repeated
 * call sends nothing again. The deal functions and the webhook send the same
 * notices themselves, through the same module. Answers one result per
 * recipient.
 *
 * @module
 */
import { queuePaymentNotices } from "../_shared/deals/payment_notices.ts";
import { notFound } from "../_shared/platform/errors.ts";
import { defineFunction } from "../_shared/platform/function.ts";
import { withDelivery } from "../_shared/notifications/notify.ts";

export default defineFunction({
  name: "send-payment-email",
  access: "system",
  group: "notifications",
  summary: "Sends the payment e-mails of a deal",
  input: () =>
    import("../../../shared/notification_schemas.ts").then((schemas) =>
      schemas.SendPaymentEmailInput
    ),
  output: "NoticesOutput",
  async handle({ input, ctx }) {
    const queued = await ctx.db.tx((sql) =>
      queuePaymentNotices(ctx, sql, input.dealId, input.kind)
    );
    if (!queued) throw notFound(`Deal "${input.dealId}" does not exist`);
    return { results: await withDelivery(ctx, queued) };
  },
});
