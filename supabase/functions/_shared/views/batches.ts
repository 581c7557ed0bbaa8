/**
 * The SQL of the view fold: one batch of recorded views into
 * `listings.views_count` (`public.fold_listing_views`), and one batch of
 * pruned views (`public.prune_listing_views`). Each call is one statement
 * and its own transaction, so a batch is folded (and the cursor moved) whole
 * or not at all.
 *
 * @module
 */
import type { Sql } from "../platform/db.ts";

/** What one fold batch did. */
export interface FoldedBatch {
  /** Views folded (fewer than the batch size: nothing more to fold now). */
  views: number;
  /** Listings whose `views_count` grew. */
  listings: number;
}

/** Folds the next `batchSize` views after the cursor (see the listing views migration). */
export async function foldViewBatch(sql: Sql, batchSize: number): Promise<FoldedBatch> {
  return await sql.one<FoldedBatch>(
    "select views, listings from public.fold_listing_views($1)",
    [batchSize],
  );
}

/** Deletes up to `limit` folded views older than the dedupe window; answers how many. */
export async function pruneViewBatch(sql: Sql, limit: number): Promise<number> {
  const row = await sql.one<{ pruned: number }>(
    "select public.prune_listing_views($1) as pruned",
    [limit],
  );
  return row.pruned;
}
