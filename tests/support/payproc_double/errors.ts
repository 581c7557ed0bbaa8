/**
 * The payment-processor API's error envelope
 * (`{ error: { type, code, message, param, doc_url } }`) and the errors the
 * double's handlers throw to produce it.
 *
 * @module
 */

/** The `error` member of an API error response. */
export interface PayprocErrorBody {
  type: string;
  message: string;
  code?: string;
  param?: string;
  doc_url?: string;
  request_log_url?: string;
}

/** Thrown by handlers; the router answers with `status` and {@linkcode PayprocApiError.body}. */
export class PayprocApiError extends Error {
  /** Builds an error answered with `status` and an envelope of `type`. */
  constructor(
    readonly status: number,
    readonly type: string,
    message: string,
    readonly code?: string,
    readonly param?: string,
  ) {
    super(message);
  }

  /** The response body, `{ error: {...} }`. */
  body(): { error: PayprocErrorBody } {
    const error: PayprocErrorBody = { type: this.type, message: this.message };
    if (this.code) {
      error.code = this.code;
      error.doc_url = `https://stripe.com/docs/error-codes/${this.code.replaceAll("_", "-")}`;
    }
    if (this.param) error.param = this.param;
    return { error };
  }
}

/** 400 `invalid_request_error`. */
export function invalidRequest(message: string, param?: string, code?: string): PayprocApiError {
  return new PayprocApiError(400, "invalid_request_error", message, code, param);
}

/** `resource_missing`: 404 when the id is in the path (`param` "id"), else 400. */
export function resourceMissing(kind: string, id: string, param = "id"): PayprocApiError {
  const status = param === "id" ? 404 : 400;
  return new PayprocApiError(
    status,
    "invalid_request_error",
    `No such ${kind}: '${id}'`,
    "resource_missing",
    param,
  );
}

/** 400 `parameter_missing`. */
export function missingParam(param: string): PayprocApiError {
  return invalidRequest(`Missing required param: ${param}.`, param, "parameter_missing");
}

/** 401 as the API answers a missing or malformed key. */
export function unauthenticated(message: string): PayprocApiError {
  return new PayprocApiError(401, "invalid_request_error", message);
}

/** The default body for injected failures (`failNext` without `body`). */
export function injectedFailureBody(status: number): { error: PayprocErrorBody } {
  if (status === 429) {
    return {
      error: {
        type: "invalid_request_error",
        code: "rate_limit",
        message:
          "Request rate limit exceeded. Learn more about rate limits here https://stripe.com/docs/rate-limits.",
      },
    };
  }
  if (status >= 500) {
    return {
      error: {
        type: "api_error",
        message:
          "An unknown error occurred while processing your request. (injected by the test double)",
      },
    };
  }
  return { error: { type: "invalid_request_error", message: `Injected ${status} failure` } };
}
