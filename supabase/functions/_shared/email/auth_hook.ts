/**
 * Supabase Auth's Send Email Hook contract
 * (https://supabase.com/docs/guides/auth/auth-hooks/send-email-hook): the
 * request is signed with Standard Webhooks (`webhook-id`,
 * `webhook-timestamp`, `webhook-signature` over the raw body, 5 minutes'
 * tolerance) with `SEND_EMAIL_HOOK_SECRET` (`v1,whsec_<base64>`; several
 * may be given separated by `|` while rotating); the body is
 * `{ user, email_data }`; a failure is answered
 * `{ error: { http_code, message } }` with that status, which Auth reads
 * (it retries 429 and 503). Our answer adds `code`, so it is also our own
 * error body.
 *
 * Standard Webhooks (a CommonJS package: loading it brings up Deno's Node
 * compatibility layer) and the payload's zod schema (`auth_hook_payload.ts`)
 * load with the first delivery that needs them, not at cold start
 * (docs/benchmarks.md, `cold_start`).
 *
 * @module
 */
import type { Webhook } from "standardwebhooks";
import { refuseUnstorable } from "../platform/body.ts";
import type { Env } from "../platform/env.ts";
import { HttpError, invalidInput } from "../platform/errors.ts";
import type { AuthHookPayload } from "./auth_hook_payload.ts";

export type { AuthHookPayload } from "./auth_hook_payload.ts";

/** The Standard Webhooks headers Auth signs with. */
export const HOOK_HEADERS = ["webhook-id", "webhook-timestamp", "webhook-signature"] as const;

/** The Standard Webhooks module, loaded on first use. */
type StandardWebhooks = typeof import("standardwebhooks");

/** A delivery whose signature checked out: its `webhook-id` and body. */
export interface VerifiedAuthHook {
  webhookId: string;
  payload: AuthHookPayload;
}

function invalidSignature(reason: string): HttpError {
  return new HttpError(401, "invalid_signature", `Cannot accept the hook: ${reason}`);
}

/** The verifiers of the configured secret(s); 503 `not_configured` with a bad one. */
function hookVerifiers(configured: string, lib: StandardWebhooks): Webhook[] {
  const entries = configured.split("|").map((entry) => entry.trim()).filter(Boolean);
  return entries.map((entry) => {
    const secret = entry.replace(/^v1,/, "").replace(/^whsec_/, "");
    try {
      return new lib.Webhook(secret);
    } catch {
      throw new HttpError(
        503,
        "not_configured",
        "Cannot serve this request: SEND_EMAIL_HOOK_SECRET is malformed (expected v1,whsec_<base64>)",
        { variable: "SEND_EMAIL_HOOK_SECRET" },
      );
    }
  });
}

/**
 * Checks the delivery's signature over `rawBody` and parses the body: 503
 * `not_configured` without the secret, 401 `invalid_signature` for missing
 * headers, a forged or stale signature (nothing is read before this
 * passes), 400 `invalid_json` / `invalid_input` for a body of the wrong shape
 * or with what PostgreSQL cannot store (`body.ts`).
 */
export async function verifyAuthHook(
  env: Env,
  headers: Headers,
  rawBody: string,
): Promise<VerifiedAuthHook> {
  const configured = env.require("SEND_EMAIL_HOOK_SECRET"); // 503 before anything loads
  const standardWebhooks = await import("standardwebhooks");
  const verifiers = hookVerifiers(configured, standardWebhooks);
  const signed: Record<string, string> = {};
  for (const name of HOOK_HEADERS) {
    const value = headers.get(name);
    if (!value) throw invalidSignature(`the ${name} header is missing`);
    signed[name] = value;
  }
  const webhookId = signed["webhook-id"]!;
  let reason = "no signature matches";
  const verified = verifiers.some((verifier) => {
    try {
      verifier.verify(rawBody, signed, { jsonParse: false });
      return true;
    } catch (error) {
      if (!(error instanceof standardWebhooks.WebhookVerificationError)) throw error;
      reason = error.message;
      return false;
    }
  });
  if (!verified) throw invalidSignature(reason);
  if (webhookId.length > 200) throw invalidInput("Cannot accept the hook: webhook-id is too long");

  let body: unknown;
  try {
    body = JSON.parse(rawBody);
  } catch {
    throw new HttpError(400, "invalid_json", "Cannot accept the hook: the body is not JSON");
  }
  // A webhook's body skips the factory's check: what PostgreSQL cannot
  // store (NUL, lone surrogates, deep nesting) is refused here, as for every
  // other body.
  refuseUnstorable(body);
  const { AuthHookPayload } = await import("./auth_hook_payload.ts");
  const parsed = AuthHookPayload.safeParse(body);
  if (!parsed.success) {
    throw invalidInput(
      "Cannot accept the hook: the body does not match the Send Email Hook payload",
      parsed.error.issues.map((issue) => ({
        path: issue.path.map(String).join("."),
        code: issue.code,
        message: issue.message,
      })),
    );
  }
  return { webhookId, payload: parsed.data };
}

/**
 * `error` as the hook answers it (the factory's `errorBody`): status
 * `http_code` and body `{ error: { http_code, code, message, details? } }`,
 * which Supabase Auth reads, with our own `code` kept.
 */
export function hookErrorBody(error: HttpError): unknown {
  return { error: { http_code: error.status, ...error.toBody().error } };
}
