/**
 * UUIDs as ids arrive from outside (token subjects, processor metadata):
 * checked before they reach a query.
 *
 * @module
 */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Whether `value` is a UUID string. */
export function isUuid(value: unknown): value is string {
  return typeof value === "string" && UUID.test(value);
}
