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
import { defineFunction } from "../_shared/function.ts";

export default defineFunction("cleanup-duplicates", {
  handle({ input, caller, ctx }) {
    return cleanupDuplicates(ctx, input, { by: caller.id });
  },
});
