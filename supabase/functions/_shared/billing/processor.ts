/**
 * Small helpers around processor calls.
 *
 * @module
 */
import { isPayprocError } from "../payproc.ts";

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
