/**
 * `payproc-webhook` (webhook: no JWT; the `Stripe-Signature` header is the
 * authentication): verifies the event with `PAYPROC_WEBHOOK_SECRET` (the
 * platform endpoint) or `PAYPROC_CONNECT_WEBHOOK_SECRET` (the Connect
 * endpoint), admits it only on the endpoint it belongs to and in the key's
 * mode, then records and applies it exactly once through the dispatch tables
 * of `_shared/billing/webhook_handlers.ts`. Answers 200 for applied,
 * ignored, skipped and repeated events; 400 for a bad signature or an event
 * on the wrong endpoint or in the wrong mode (nothing written); 5xx when
 * processing failed (rolled back, so the processor retries).
 *
 * @module
 */
import { processEvent } from "../_shared/billing/webhook_events.ts";
import { SIGNATURE_HEADER, verifyWebhook } from "../_shared/billing/webhook_verify.ts";
import { defineFunction } from "../_shared/function.ts";

export default defineFunction("payproc-webhook", {
  async handle({ ctx, request, rawBody }) {
    const verified = await verifyWebhook(ctx.env, request.headers.get(SIGNATURE_HEADER), rawBody);
    const { event } = verified;
    const result = await processEvent(ctx, verified);
    return { received: true as const, id: event.id, type: event.type, ...result };
  },
});
