/**
 * The explore page: the listing grid the marketplace opens on. The frontend
 * reads `listing_view_secure` (the blur policy applied for the viewer) a page
 * at a time, newest first, by keyset — the last row of a page is the cursor
 * of the next:
 *
 * ```ts
 * let page = supabase.from("listing_view_secure").select("*")
 *   .order("created_at", { ascending: false }).order("id", { ascending: false })
 *   .limit(EXPLORE_PAGE_SIZE);
 * if (cursor) {
 *   // A timestamp holds PostgREST's reserved "." and ":", so it is quoted.
 *   const at = `"${cursor.created_at}"`;
 *   page = page.or(`created_at.lt.${at},and(created_at.eq.${at},id.lt.${cursor.id})`);
 * }
 * ```
 *
 * Keyset paging costs the same on page 100 as on page 1, where an offset
 * reads and discards every row before it (`bench/listing_view.ts` measures
 * both).
 *
 * @module
 */

/** Listings per explore page (the interface's limit). */
export const EXPLORE_PAGE_SIZE = 9;
