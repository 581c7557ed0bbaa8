/**
 * Webhook authentication: the `Stripe-Signature` header over the raw body,
 * verified with the SDK's async (WebCrypto) check and its default 300 s
 * tolerance against `PAYPROC_WEBHOOK_SECRET` or, when set,
 * `PAYPROC_CONNECT_WEBHOOK_SECRET` (the Connect endpoint's secret).
 *
 * @module
 */
import Stripe from "stripe";
import type { Env } from "../env.ts";
import { HttpError } from "../errors.ts";
import { payprocCryptoProvider } from "../payproc.ts";

/** The signature header's name. */
export const SIGNATURE_HEADER = "stripe-signature";

function invalidSignature(reason: string): HttpError {
  return new HttpError(400, "invalid_signature", `Cannot accept the webhook: ${reason}`);
}

/** The endpoint secrets to try, in order; 503 `not_configured` without the main one. */
export function webhookSecrets(env: Env): string[] {
  const secrets = [env.require("PAYPROC_WEBHOOK_SECRET")];
  const connect = env.values.PAYPROC_CONNECT_WEBHOOK_SECRET;
  if (connect) secrets.push(connect);
  return secrets;
}

/** The verified event; 400 `invalid_signature` (or `invalid_json`) otherwise. */
export async function verifyWebhook(
  secrets: readonly string[],
  header: string | null,
  body: string,
): Promise<Stripe.Event> {
  if (!header) throw invalidSignature("the Stripe-Signature header is missing");
  let stale = false;
  for (const secret of secrets) {
    let event: Stripe.Event;
    try {
      event = await Stripe.webhooks.constructEventAsync(
        body,
        header,
        secret,
        undefined,
        payprocCryptoProvider,
      );
    } catch (error) {
      if (error instanceof Stripe.errors.StripeSignatureVerificationError) {
        stale ||= /tolerance/i.test(error.message);
        continue;
      }
      if (error instanceof SyntaxError) {
        throw new HttpError(400, "invalid_json", "Cannot parse the webhook: it is not valid JSON");
      }
      throw error;
    }
    return assertEventShape(event);
  }
  throw invalidSignature(
    stale
      ? "its timestamp is outside the 300 s tolerance"
      : "the signature does not match the body",
  );
}

function assertEventShape(event: Stripe.Event): Stripe.Event {
  const candidate = event as unknown as Record<string, unknown> | null;
  const data = candidate?.data as Record<string, unknown> | undefined;
  if (
    typeof candidate?.id !== "string" || typeof candidate.type !== "string" ||
    typeof candidate.created !== "number" || typeof data?.object !== "object" ||
    data.object === null
  ) {
    throw new HttpError(400, "invalid_input", "Cannot accept the webhook: it is not an event");
  }
  return event;
}
