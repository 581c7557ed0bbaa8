/**
 * Finding and removing one kind of duplicates: one SQL call each, the find
 * read-only, the apply one atomic statement that takes its kind's advisory
 * lock, then finds and changes in the same transaction.
 *
 * @module
 */
import type { z } from "zod";
import type { DuplicateKindResult } from "../../../../shared/scheduled_schemas.ts";
import type { Sql } from "../platform/db.ts";
import { DUPLICATE_KINDS, type DuplicateKind } from "./kinds.ts";

/** What one kind's run found and changed. */
export type DuplicateResult = z.infer<typeof DuplicateKindResult>;

interface GroupRow {
  keep: string;
  duplicates: string[];
  changed: string[] | null;
}

/** The duplicate groups of `kind`, as they stand; writes nothing (`changed` is empty). */
export async function findDuplicates(sql: Sql, kind: DuplicateKind): Promise<DuplicateResult> {
  const rows = await sql.query<GroupRow>(
    `select keep_id::text as keep, duplicate_ids::text[] as duplicates, null as changed
     from ${DUPLICATE_KINDS[kind].find}()`,
  );
  return { groups: rows.map(groupOf), changed: [] };
}

/**
 * Archives or deactivates the duplicates of `kind` (never deletes) and
 * answers every group found with the ids this call changed. A concurrent
 * call waits for this one and changes none of the same rows.
 */
export async function removeDuplicates(sql: Sql, kind: DuplicateKind): Promise<DuplicateResult> {
  const { apply, changedColumn } = DUPLICATE_KINDS[kind];
  const rows = await sql.query<GroupRow>(
    `select keep_id::text as keep, duplicate_ids::text[] as duplicates,
       ${changedColumn}::text[] as changed
     from ${apply}()`,
  );
  return { groups: rows.map(groupOf), changed: rows.flatMap((row) => row.changed ?? []) };
}

function groupOf(row: GroupRow): DuplicateResult["groups"][number] {
  return { keep: row.keep, duplicates: row.duplicates };
}
