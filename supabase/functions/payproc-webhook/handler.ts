/**
 * `payproc-webhook` (webhook: no JWT; the `Stripe-Signature` header is the
 * authentication): verifies the event with `PAYPROC_WEBHOOK_SECRET` (the
 * platform endpoint) or `PAYPROC_CONNECT_WEBHOOK_SECRET` (the Connect
 * endpoint), admits it only on the endpoint it belongs to and in the key's
 * mode, then records and applies it exactly once through the dispatch tables
 * of `payproc-webhook/dispatch.ts`. Answers 200 for applied,
 * ignored, skipped and repeated events; 400 for a bad signature or an event
 * on the wrong endpoint or in the wrong mode (nothing written); 5xx when
 * processing failed (rolled back, so the processor retries).
 *
 * @module
 */
import { SIGNATURE_HEADER, verifyWebhook } from "../_shared/payproc_webhook/verify.ts";
import { loadOnce } from "../_shared/lib/load_once.ts";
import { defineFunction } from "../_shared/platform/function.ts";

/**
 * The processing and the dispatch tables (every feature's event handlers),
 * loaded with the first verified event (a refused delivery never loads
 * them), once.
 */
const processing = loadOnce(() =>
  Promise.all([import("../_shared/payproc_webhook/events.ts"), import("./dispatch.ts")])
);

export default defineFunction({
  name: "payproc-webhook",
  access: "webhook",
  group: "billing",
  summary: "Payment processor webhook entry point",
  output: "PayprocWebhookOutput",
  async handle({ ctx, request, rawBody }) {
    const verified = await verifyWebhook(ctx.env, request.headers.get(SIGNATURE_HEADER), rawBody);
    const { event } = verified;
    const [{ processEvent }, { handlerFor }] = await processing();
    const result = await processEvent(ctx, verified, handlerFor);
    return { received: true as const, id: event.id, type: event.type, ...result };
  },
});
