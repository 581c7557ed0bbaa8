/**
 * `cleanup-duplicates` (admin): `{ dryRun = true, kinds? }`. Finds listings
 * of one seller with the same normalized title and URL, and identical
 * active price alerts of one user; unless it is a dry run, archives the
 * duplicate listings with a reason and deactivates the duplicate alerts,
 * keeping the oldest of each group (never deleting). Answers per kind the
 * groups found and the ids changed. Two concurrent runs change each
 * duplicate once. The rules are in the duplicates migration.
 *
 * @module
 */
import { cleanupDuplicates } from "../_shared/duplicates/cleanup.ts";
import { defineFunction } from "../_shared/platform/function.ts";

export default defineFunction({
  name: "cleanup-duplicates",
  access: "admin",
  group: "schedulers",
  summary: "Finds duplicate listings and price alerts; archives or deactivates all but the oldest",
  input: () =>
    import("../../../shared/scheduled_schemas.ts").then((schemas) =>
      schemas.CleanupDuplicatesInput
    ),
  output: "CleanupDuplicatesOutput",
  handle({ input, caller, ctx }) {
    return cleanupDuplicates(ctx, input, { by: caller.id });
  },
});
