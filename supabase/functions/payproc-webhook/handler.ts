/**
 * `payproc-webhook` (webhook: no JWT; the `Stripe-Signature` header is the
 * authentication): verifies the event with `PAYPROC_WEBHOOK_SECRET` (or
 * `PAYPROC_CONNECT_WEBHOOK_SECRET`), then records and applies it exactly once
 * through the dispatch table of `_shared/billing/webhook_handlers.ts`.
 * Answers 200 for applied, ignored, skipped and repeated events; 400 for a
 * bad signature (nothing written); 5xx when processing failed (rolled back,
 * so the processor retries).
 *
 * @module
 */
import { processEvent } from "../_shared/billing/webhook_events.ts";
import {
  SIGNATURE_HEADER,
  verifyWebhook,
  webhookSecrets,
} from "../_shared/billing/webhook_verify.ts";
import { defineFunction } from "../_shared/function.ts";

export default defineFunction({
  name: "payproc-webhook",
  access: "webhook",
  async handle({ ctx, request, rawBody }) {
    const event = await verifyWebhook(
      webhookSecrets(ctx.env),
      request.headers.get(SIGNATURE_HEADER),
      rawBody,
    );
    const result = await processEvent(ctx, event);
    return { received: true, id: event.id, type: event.type, ...result };
  },
});
