/**
 * Duplicate listings and price alerts: finding them and archiving or
 * deactivating all but the row kept (`cleanup-duplicates`).
 *
 * @module
 */
export {
  type CleanupActor,
  type CleanupAnswer,
  cleanupDuplicates,
  type CleanupRequest,
} from "./cleanup.ts";
export { type DuplicateResult, findDuplicates, removeDuplicates } from "./groups.ts";
export { DUPLICATE_KINDS, type DuplicateKind, type DuplicateKindSql } from "./kinds.ts";
