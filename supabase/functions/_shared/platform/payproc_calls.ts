/**
 * Small helpers around processor calls.
 *
 * @module
 */
import { isPayprocError } from "./payproc.ts";

/** Whether the processor answered that the object does not exist. */
export function isMissing(error: unknown): boolean {
  return isPayprocError(error) &&
    (error.statusCode === 404 || error.code === "resource_missing");
}

/** The call's result, or null when the processor says the object does not exist. */
export async function orNullIfMissing<T>(call: Promise<T>): Promise<T | null> {
  try {
    return await call;
  } catch (error) {
    if (isMissing(error)) return null;
    throw error;
  }
}

/**
 * The processor's time of the answer that brought `resource` (its `Date`
 * header, whole seconds), or null when the answer had none (or the resource
 * did not come from an answer). The SDK keeps the answer on the resource as
 * `lastResponse`: on the fetch client our client uses, the `Response` itself.
 */
export function answeredAt(resource: object): Date | null {
  const headers = (resource as { lastResponse?: { headers?: unknown } }).lastResponse?.headers;
  const value = headers instanceof Headers ? headers.get("date") : null;
  const time = value === null ? NaN : Date.parse(value);
  return Number.isFinite(time) ? new Date(time) : null;
}

/**
 * Thrown by a write phase that met a processor object its read phase did not
 * read (the stored state moved in between): the write rolls back, the caller
 * reads `objectId` too and writes again. Never a failure a client sees.
 */
export class RereadNeeded extends Error {
  override name = "RereadNeeded";
  /** Creates the signal for processor object `objectId`. */
  constructor(readonly objectId: string) {
    super(`Cannot finish the write: processor object "${objectId}" was not read first`);
  }
}

/**
 * Whether the processor refused the request for good (a 4xx other than 409
 * and 429): nothing was done, and repeating it unchanged would be refused
 * again. Timeouts, 5xx, 409 (a request with the same idempotency key still
 * running) and 429 are not refusals: the outcome is unknown or transient.
 */
export function isRefusal(error: unknown): error is { message: string; code?: string } {
  if (!isPayprocError(error)) return false;
  const status = error.statusCode ?? 0;
  return status >= 400 && status < 500 && status !== 409 && status !== 429;
}

/** Whether the processor is still running a request with the same idempotency key (409). */
export function isInProgress(error: unknown): boolean {
  return isPayprocError(error) && error.statusCode === 409;
}
