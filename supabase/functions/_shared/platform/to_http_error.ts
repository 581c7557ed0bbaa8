/**
 * Maps anything thrown to the error a client may see: an `HttpError` as it
 * is, a failure of a service client (registered by that client's module when
 * it loads, e.g. the payment processor's) as its mapper says, anything else
 * to a bare 500 whose message leaks nothing. Used by the factory and by jobs
 * that report failed items.
 *
 * @module
 */
import { HttpError } from "./errors.ts";

/** Maps a thrown value to an `HttpError`, or undefined when it is not its kind. */
export type ErrorMapper = (error: unknown) => HttpError | undefined;

const mappers: ErrorMapper[] = [];

/** Adds a mapper; a service module registers one when it loads. */
export function registerErrorMapper(mapper: ErrorMapper): void {
  if (!mappers.includes(mapper)) mappers.push(mapper);
}

/** The client-safe error for `error`. */
export function toHttpError(error: unknown): HttpError {
  if (error instanceof HttpError) return error;
  for (const mapper of mappers) {
    const mapped = mapper(error);
    if (mapped) return mapped;
  }
  return new HttpError(500, "internal", "Something went wrong on our side; it has been logged");
}
