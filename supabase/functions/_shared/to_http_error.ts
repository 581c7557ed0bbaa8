/**
 * Maps anything thrown to the error a client may see: an `HttpError` as it
 * is, a payment processor failure to 503/502, anything else to a bare 500
 * whose message leaks nothing. Used by the factory and by jobs that report
 * failed items.
 *
 * @module
 */
import { HttpError } from "./errors.ts";
import { isPayprocError, payprocHttpError } from "./payproc.ts";

/** The client-safe error for `error`. */
export function toHttpError(error: unknown): HttpError {
  if (error instanceof HttpError) return error;
  if (isPayprocError(error)) return payprocHttpError(error);
  return new HttpError(500, "internal", "Something went wrong on our side; it has been logged");
}
