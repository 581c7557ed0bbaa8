/**
 * An email API (Resend) test double: `POST /emails`, `POST /emails/batch`
 * and `GET /emails/:id`, with the API's auth, validation, idempotency and
 * error shape (`{ statusCode, name, message }`). Sent messages are kept in
 * {@linkcode EmailDouble.sent}.
 *
 * What the resend@6.38.0 SDK does (node_modules/.deno/resend@6.38.0, dist/index.mjs):
 * - Base URL: `options.baseUrl ?? process.env.RESEND_BASE_URL ?? "https://api.resend.com"`,
 *   so `new Resend(key, { baseUrl })` targets the double without touching the
 *   environment ({@linkcode resendClient} does that). Paths are appended as-is
 *   (`${baseUrl}/emails`), so the base URL has no trailing slash.
 * - It sends `Authorization: Bearer <key>` and JSON with snake_case fields
 *   (`reply_to`, `scheduled_at`, attachments' `content_type`); batch sends
 *   `x-batch-validation: strict|permissive`.
 * - It never throws for API errors: `send()` resolves `{ data: null, error }`
 *   with the parsed error body; a network failure becomes
 *   `{ name: "application_error", statusCode: null }`. It has no timeout and
 *   no retries.
 *
 * @module
 */
import { Resend } from "resend";
import type { ErrorResponse, GetEmailResponseSuccess } from "resend";
import { HttpDouble, jsonResponse, type RecordedRequest } from "./http_double.ts";

/** One message the double accepted. */
export interface SentEmail {
  id: string;
  from: string;
  to: string[];
  subject: string;
  html: string | null;
  text: string | null;
  cc: string[];
  bcc: string[];
  replyTo: string[];
  headers: Record<string, string>;
  tags: { name: string; value: string }[];
  attachments: Record<string, unknown>[];
  scheduledAt: string | null;
  /** ISO timestamp. */
  createdAt: string;
  idempotencyKey: string | null;
  /** Whether it came through `POST /emails/batch`. */
  batch: boolean;
}

/** The API's error `name`s. */
export type EmailErrorName = ErrorResponse["name"];

/** A test API key the double accepts. */
export const TEST_EMAIL_KEY = "re_test_double_0000000000";

class EmailApiError extends Error {
  constructor(readonly statusCode: number, readonly errorName: EmailErrorName, message: string) {
    super(message);
  }

  body(): ErrorResponse {
    return { statusCode: this.statusCode, name: this.errorName, message: this.message };
  }
}

const ADDRESS = /^(?:[^<>]*<\s*[^\s@<>]+@[^\s@<>]+\.[^\s@<>]+\s*>|[^\s@<>]+@[^\s@<>]+\.[^\s@<>]+)$/;
const FORMAT_HINT =
  "The email address needs to follow the `email@example.com` or `Name <email@example.com>` format.";

function addresses(value: unknown, field: string, max = 50): string[] {
  if (value === undefined || value === null) return [];
  const list = Array.isArray(value) ? value : [value];
  if (list.length > max) {
    throw new EmailApiError(
      422,
      "validation_error",
      `Too many recipients in \`${field}\`: at most ${max}.`,
    );
  }
  for (const entry of list) {
    if (typeof entry !== "string" || !ADDRESS.test(entry.trim())) {
      throw new EmailApiError(
        422,
        "validation_error",
        `Invalid \`${field}\` field. ${FORMAT_HINT}`,
      );
    }
  }
  return list as string[];
}

function optionalText(body: Record<string, unknown>, field: string): string | null {
  const value = body[field];
  if (value === undefined || value === null) return null;
  if (typeof value !== "string") {
    throw new EmailApiError(
      422,
      "validation_error",
      `Invalid \`${field}\` field: expected a string.`,
    );
  }
  return value;
}

function validateEmail(
  input: unknown,
  batch: boolean,
): Omit<SentEmail, "id" | "createdAt" | "idempotencyKey" | "batch"> {
  if (typeof input !== "object" || input === null || Array.isArray(input)) {
    throw new EmailApiError(
      422,
      "validation_error",
      "Invalid request body: expected a JSON object.",
    );
  }
  const body = input as Record<string, unknown>;
  const template = body.template !== undefined && body.template !== null;
  if (typeof body.from !== "string" || body.from === "") {
    throw new EmailApiError(422, "missing_required_field", "Missing `from` field.");
  }
  if (!ADDRESS.test(body.from.trim())) {
    throw new EmailApiError(422, "invalid_from_address", `Invalid \`from\` field. ${FORMAT_HINT}`);
  }
  const to = addresses(body.to, "to");
  if (to.length === 0) {
    throw new EmailApiError(422, "missing_required_field", "Missing `to` field.");
  }
  if (!template && (typeof body.subject !== "string" || body.subject === "")) {
    throw new EmailApiError(422, "missing_required_field", "Missing `subject` field.");
  }
  const html = optionalText(body, "html");
  const text = optionalText(body, "text");
  if (!template && html === null && text === null) {
    throw new EmailApiError(422, "missing_required_field", "Missing `html` or `text` field.");
  }
  if (batch && (body.attachments !== undefined || body.scheduled_at !== undefined)) {
    throw new EmailApiError(
      422,
      "validation_error",
      "`attachments` and `scheduled_at` are not supported in batch emails.",
    );
  }
  return {
    from: body.from,
    to,
    subject: typeof body.subject === "string" ? body.subject : "",
    html,
    text,
    cc: addresses(body.cc, "cc"),
    bcc: addresses(body.bcc, "bcc"),
    replyTo: addresses(body.reply_to, "reply_to"),
    headers: (body.headers ?? {}) as Record<string, string>,
    tags: (body.tags ?? []) as { name: string; value: string }[],
    attachments: (body.attachments ?? []) as Record<string, unknown>[],
    scheduledAt: optionalText(body, "scheduled_at"),
  };
}

/** The email API double; start it with `new EmailDouble()`. */
export class EmailDouble extends HttpDouble {
  /** Accepted messages, oldest first. */
  readonly sent: SentEmail[] = [];
  readonly #idempotent = new Map<string, { bodyText: string; status: number; body: unknown }>();

  /** Messages sent to `address` (matching `to`, also inside `Name <address>`). */
  sentTo(address: string): SentEmail[] {
    const wanted = address.toLowerCase();
    return this.sent.filter((m) =>
      m.to.some((to) => to.toLowerCase() === wanted || to.toLowerCase().endsWith(`<${wanted}>`))
    );
  }

  /** Forgets recorded requests, failure rules, sent messages and idempotency keys. */
  override reset(): void {
    super.reset();
    this.sent.length = 0;
    this.#idempotent.clear();
  }

  /** Errors have the API's `{ statusCode, name, message }` shape. */
  protected override failureBody(status: number): ErrorResponse {
    const name: EmailErrorName = status === 429
      ? "rate_limit_exceeded"
      : status >= 500
      ? "internal_server_error"
      : "application_error";
    return { statusCode: status, name, message: `Injected ${status} failure (test double).` };
  }

  /** Routes `/emails`, `/emails/batch` and `/emails/:id`. */
  protected override handle(request: RecordedRequest): Response {
    try {
      this.#authenticate(request);
      if (request.path === "/emails" || request.path === "/emails/batch") {
        if (request.method !== "POST") {
          throw new EmailApiError(405, "method_not_allowed", "Method Not Allowed");
        }
        return this.#idempotently(
          request,
          () =>
            request.path === "/emails"
              ? { id: this.#accept(request.body, request, false).id }
              : this.#batch(request),
        );
      }
      const match = /^\/emails\/([^/]+)$/.exec(request.path);
      if (match && request.method === "GET") {
        return jsonResponse(200, this.#retrieve(match[1] ?? ""));
      }
      throw new EmailApiError(404, "not_found", "The requested endpoint does not exist.");
    } catch (error) {
      if (!(error instanceof EmailApiError)) throw error;
      return jsonResponse(error.statusCode, error.body());
    }
  }

  #authenticate(request: RecordedRequest): void {
    const header = request.headers.get("authorization");
    if (!header) {
      throw new EmailApiError(
        401,
        "missing_api_key",
        "Missing API key in the authorization header. Include the following header `Authorization: Bearer YOUR_API_KEY` in the request.",
      );
    }
    if (!/^Bearer re_\S+$/.test(header)) {
      throw new EmailApiError(403, "invalid_api_key", "API key is invalid");
    }
  }

  #idempotently(request: RecordedRequest, send: () => unknown): Response {
    const key = request.headers.get("idempotency-key");
    if (key === null) return jsonResponse(200, send());
    if (key.length === 0 || key.length > 256) {
      throw new EmailApiError(
        400,
        "invalid_idempotency_key",
        "The key must be between 1-256 chars.",
      );
    }
    const previous = this.#idempotent.get(key);
    if (previous && previous.bodyText !== request.bodyText) {
      throw new EmailApiError(
        409,
        "invalid_idempotent_request",
        "Same idempotency key used with a different request payload. Change your idempotency key or payload.",
      );
    }
    if (previous) return jsonResponse(previous.status, previous.body);
    const body = send();
    this.#idempotent.set(key, { bodyText: request.bodyText, status: 200, body });
    return jsonResponse(200, body);
  }

  #accept(input: unknown, request: RecordedRequest, batch: boolean): SentEmail {
    const email: SentEmail = {
      id: crypto.randomUUID(),
      ...validateEmail(input, batch),
      createdAt: new Date().toISOString(),
      idempotencyKey: request.headers.get("idempotency-key"),
      batch,
    };
    this.sent.push(email);
    return email;
  }

  #batch(request: RecordedRequest): unknown {
    if (!Array.isArray(request.body)) {
      throw new EmailApiError(
        422,
        "validation_error",
        "Invalid request body: expected an array of emails.",
      );
    }
    if (request.body.length > 100) {
      throw new EmailApiError(422, "validation_error", "Too many emails in batch: at most 100.");
    }
    const permissive = request.headers.get("x-batch-validation") === "permissive";
    const errors: { index: number; message: string }[] = [];
    request.body.forEach((email, index) => {
      try {
        validateEmail(email, true);
      } catch (error) {
        if (!(error instanceof EmailApiError)) throw error;
        if (!permissive) {
          throw new EmailApiError(
            error.statusCode,
            error.errorName,
            `emails[${index}]: ${error.message}`,
          );
        }
        errors.push({ index, message: error.message });
      }
    });
    const failed = new Set(errors.map((e) => e.index));
    const data = request.body.flatMap((email, index) =>
      failed.has(index) ? [] : [{ id: this.#accept(email, request, true).id }]
    );
    return permissive ? { data, errors } : { data };
  }

  #retrieve(id: string): GetEmailResponseSuccess {
    const email = this.sent.find((m) => m.id === id);
    if (!email) throw new EmailApiError(404, "not_found", "Email not found");
    return {
      object: "email",
      id: email.id,
      message_id: `<${email.id}@email.double.test>`,
      from: email.from,
      to: email.to,
      cc: email.cc.length ? email.cc : null,
      bcc: email.bcc.length ? email.bcc : null,
      reply_to: email.replyTo.length ? email.replyTo : null,
      subject: email.subject,
      html: email.html,
      text: email.text,
      tags: email.tags,
      created_at: email.createdAt,
      scheduled_at: email.scheduledAt,
      last_event: email.scheduledAt ? "scheduled" : "delivered",
    };
  }
}

/** The real SDK pointed at the double via its `baseUrl` option (no environment changes). */
export function resendClient(double: { url: string }, key: string = TEST_EMAIL_KEY): Resend {
  return new Resend(key, { baseUrl: double.url });
}
