/**
 * The one error class of the functions: every failure a client sees is an
 * {@linkcode HttpError} and goes out as `{ error: { code, message, details } }`.
 *
 * @module
 */

/** A failure with an HTTP status and a stable machine-readable code. */
export class HttpError extends Error {
  override name = "HttpError";

  /** Creates an error answered with `status` and body `{ error: { code, message, details } }`. */
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: unknown,
    /** Extra response headers, e.g. `Retry-After`. */
    readonly headers?: Record<string, string>,
  ) {
    super(message);
  }

  /** The JSON body sent to the client. */
  toBody(): ErrorBody {
    const error: ErrorBody["error"] = { code: this.code, message: this.message };
    if (this.details !== undefined) error.details = this.details;
    return { error };
  }
}

/** The documented error body. */
export interface ErrorBody {
  error: { code: string; message: string; details?: unknown };
}

/** 400 `invalid_input`. */
export function invalidInput(message: string, details?: unknown): HttpError {
  return new HttpError(400, "invalid_input", message, details);
}

/** 403 `forbidden`: a valid credential without the right. */
export function forbidden(message: string, details?: unknown): HttpError {
  return new HttpError(403, "forbidden", message, details);
}

/** 404 `not_found`. */
export function notFound(message: string): HttpError {
  return new HttpError(404, "not_found", message);
}

/** 409 `conflict`. */
export function conflict(message: string, details?: unknown): HttpError {
  return new HttpError(409, "conflict", message, details);
}

/**
 * A "come back later" failure (429 over a limit, 503 when every provider is
 * busy): `retryAfter` seconds (at least 1) in `details.retryAfter` and the
 * `Retry-After` header, beside any other `details`.
 */
export function retryLater(
  status: 429 | 503,
  code: string,
  message: (retryAfter: number) => string,
  retryAfterSeconds: number,
  details: Record<string, unknown> = {},
): HttpError {
  const retryAfter = Math.max(1, Math.ceil(retryAfterSeconds));
  return new HttpError(status, code, message(retryAfter), { ...details, retryAfter }, {
    "Retry-After": String(retryAfter),
  });
}

/** 503 `upstream_unavailable`: a service we depend on failed or timed out. */
export function upstreamUnavailable(service: string, detail?: string): HttpError {
  return new HttpError(
    503,
    "upstream_unavailable",
    `Cannot reach the ${service}${detail ? `: ${detail}` : ""}`,
  );
}
