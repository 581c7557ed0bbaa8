/**
 * The kinds of duplicates `cleanup-duplicates` knows, each with the SQL
 * functions that find its groups (read-only) and that remove them from view
 * (archive or deactivate, once, under the kind's advisory lock). The rules
 * themselves are SQL, written down in the duplicates migration.
 *
 * @module
 */
import type { z } from "zod";
import type { DuplicateKind as DuplicateKindSchema } from "../../../../shared/scheduled_schemas.ts";

/** A kind of duplicate: `listings` or `price_alerts`. */
export type DuplicateKind = z.infer<typeof DuplicateKindSchema>;

/** How one kind is found and changed. */
export interface DuplicateKindSql {
  /** Returns `(keep_id, duplicate_ids)` and writes nothing. */
  readonly find: string;
  /** Returns `(keep_id, duplicate_ids, <changed>_ids)` after changing the duplicates. */
  readonly apply: string;
  /** The column of `apply` naming the rows it changed. */
  readonly changedColumn: string;
  /** What `apply` did to a duplicate, for the log. */
  readonly action: string;
}

/** Every kind, in the order a run handles them. */
export const DUPLICATE_KINDS: Readonly<Record<DuplicateKind, DuplicateKindSql>> = {
  listings: {
    find: "public.find_duplicate_listings",
    apply: "public.archive_duplicate_listings",
    changedColumn: "archived_ids",
    action: "archived",
  },
  price_alerts: {
    find: "public.find_duplicate_price_alerts",
    apply: "public.deactivate_duplicate_price_alerts",
    changedColumn: "deactivated_ids",
    action: "deactivated",
  },
};
