/**
 * A `cleanup-duplicates` run: per kind asked for (default every kind), the
 * groups found and, unless it is a dry run, the rows archived or
 * deactivated, each change logged.
 *
 * @module
 */
import type { z } from "zod";
import type {
  CleanupDuplicatesInput,
  CleanupDuplicatesOutput,
} from "../../../../shared/scheduled_schemas.ts";
import type { Context } from "../platform/context.ts";
import { findDuplicates, removeDuplicates } from "./groups.ts";
import { DUPLICATE_KINDS, type DuplicateKind } from "./kinds.ts";

/** What a run is asked: a dry run unless `dryRun: false`; every kind unless `kinds`. */
export type CleanupRequest = z.output<typeof CleanupDuplicatesInput>;

/** Who asked for a run, for the log lines. */
export interface CleanupActor {
  /** The admin's user id. */
  by?: string;
}

/** What a run answers. */
export type CleanupAnswer = z.infer<typeof CleanupDuplicatesOutput>;

/**
 * Finds the duplicates of each kind asked for and, when `dryRun` is false,
 * archives (listings) or deactivates (price alerts) all but the row kept.
 * A dry run writes nothing. Kinds are handled one after the other, each in
 * its own transaction.
 */
export async function cleanupDuplicates(
  ctx: Context,
  request: CleanupRequest,
  actor: CleanupActor = {},
): Promise<CleanupAnswer> {
  const log = ctx.log.with({ by: actor.by ?? null, dryRun: request.dryRun });
  const asked = new Set<DuplicateKind>(request.kinds ?? []);
  const kinds = (Object.keys(DUPLICATE_KINDS) as DuplicateKind[])
    .filter((kind) => request.kinds === undefined || asked.has(kind));
  const results: CleanupAnswer["results"] = {};
  for (const kind of kinds) {
    const result = request.dryRun
      ? await findDuplicates(ctx.db, kind)
      : await removeDuplicates(ctx.db, kind);
    const duplicates = result.groups.reduce((n, group) => n + group.duplicates.length, 0);
    if (result.changed.length > 0) {
      log.info(`${DUPLICATE_KINDS[kind].action} duplicate ${kind}`, {
        kind,
        groups: result.groups.length,
        duplicates,
        changed: result.changed,
      });
    } else {
      log.info(`found duplicate ${kind}`, {
        kind,
        groups: result.groups.length,
        duplicates,
      });
    }
    results[kind] = result;
  }
  return { dryRun: request.dryRun, results };
}
