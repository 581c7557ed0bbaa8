/**
 * The e-mail provider: the `resend` SDK (loaded on first use, base URL from
 * `RESEND_BASE_URL` for the test double), or local capture. Which one a
 * send uses is {@linkcode emailMode}: with `RESEND_API_KEY` the provider;
 * without it and with `LOCAL_DEV=true`, capture (the message is stored in
 * `email_logs` and shown at `/_local/mail`); otherwise not configured.
 *
 * @module
 */
import type { Resend } from "resend";
import type { Env } from "./env.ts";
import type { Runtime } from "./runtime.ts";

/** The sender address used when `EMAIL_FROM` is unset in capture mode. */
export const LOCAL_EMAIL_FROM = "Marketplace <no-reply@marketplace.localhost>";

/** How messages leave: through the provider, into local capture, or not at all. */
export type EmailMode =
  | { kind: "provider"; from: string }
  | { kind: "capture"; from: string }
  | { kind: "unconfigured"; reason: string };

/** The mode `env` gives. */
export function emailMode(env: Env): EmailMode {
  const { RESEND_API_KEY, EMAIL_FROM, LOCAL_DEV } = env.values;
  if (RESEND_API_KEY) {
    if (!EMAIL_FROM) return { kind: "unconfigured", reason: "EMAIL_FROM is not configured" };
    return { kind: "provider", from: EMAIL_FROM };
  }
  if (LOCAL_DEV) return { kind: "capture", from: EMAIL_FROM ?? LOCAL_EMAIL_FROM };
  return { kind: "unconfigured", reason: "RESEND_API_KEY is not configured" };
}

/** One message as the provider receives it. */
export interface OutgoingEmail {
  from: string;
  to: string;
  subject: string;
  html: string;
  text: string;
  replyTo?: string | null;
}

/** The provider refused the message or could not be reached. */
export class EmailProviderError extends Error {
  override name = "EmailProviderError";

  /** `status` is the provider's HTTP status (null: unreachable or timed out). */
  constructor(
    message: string,
    readonly status: number | null,
    readonly providerCode: string,
  ) {
    super(message);
  }

  /**
   * Whether trying again may succeed: unreachable, rate limited or failing
   * on the provider's side. A refusal of the message itself (invalid
   * address, unverified sender domain, bad key) will not change on retry.
   */
  get retryable(): boolean {
    return this.status === null || this.status === 408 || this.status === 409 ||
      this.status === 429 || this.status >= 500;
  }
}

async function client(runtime: Runtime): Promise<Resend> {
  const key = runtime.env.require("RESEND_API_KEY");
  const base = runtime.env.values.RESEND_BASE_URL?.replace(/\/+$/, "");
  return await runtime.cache("email:resend", async () => {
    const { Resend } = await import("resend");
    return new Resend(key, base ? { baseUrl: base } : undefined);
  });
}

/**
 * Sends `email` through the provider with `idempotencyKey` (a repeat with
 * the same key within the provider's window sends nothing and answers the
 * first id). Answers the provider's message id; throws
 * {@linkcode EmailProviderError}. Times out after `EMAIL_TIMEOUT_MS`.
 */
export async function sendThroughProvider(
  runtime: Runtime,
  email: OutgoingEmail,
  idempotencyKey: string,
): Promise<string> {
  const resend = await client(runtime);
  let answer: Awaited<ReturnType<Resend["emails"]["send"]>>;
  try {
    answer = await resend.emails.send(
      {
        from: email.from,
        to: email.to,
        subject: email.subject,
        html: email.html,
        text: email.text,
        ...(email.replyTo ? { replyTo: email.replyTo } : {}),
      },
      { idempotencyKey, signal: AbortSignal.timeout(runtime.env.values.EMAIL_TIMEOUT_MS) },
    );
  } catch (error) {
    // The SDK throws only when the timeout aborts the read of an answer.
    throw new EmailProviderError(
      `The e-mail provider did not answer in time (${String(error)})`,
      null,
      "timeout",
    );
  }
  if (answer.error) {
    const { statusCode, name, message } = answer.error;
    throw new EmailProviderError(message, statusCode ?? null, name);
  }
  if (!answer.data?.id) {
    throw new EmailProviderError("The e-mail provider answered without a message id", 502, "no_id");
  }
  return answer.data.id;
}
