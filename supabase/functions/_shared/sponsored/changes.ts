/**
 * Sponsored placement changes as SQL lists them (`sponsored_changes_due`,
 * `apply_sponsored_changes`) and as the contract shows them
 * (`SponsoredChange` of `shared/scheduled_schemas.ts`).
 *
 * @module
 */
import type { z } from "zod";
import type { SponsoredChange } from "../../../../shared/scheduled_schemas.ts";

/** One change in the contract's shape. */
export type SponsoredChangeItem = z.infer<typeof SponsoredChange>;

/** What a change does to its placement. */
export type SponsoredChangeKind = "activate" | "expire";

/** A row of `sponsored_changes_due()` / `apply_sponsored_changes()`. */
export interface SponsoredChangeRow {
  id: string;
  listing_id: string;
  seller_id: string;
  starts_at: Date;
  ends_at: Date;
  change: SponsoredChangeKind;
}

/** The columns both SQL functions return, in a select list. */
export const CHANGE_COLUMNS = "id, listing_id, seller_id, starts_at, ends_at, change";

/** `row` in the contract's shape. */
export function toSponsoredChange(row: SponsoredChangeRow): SponsoredChangeItem {
  return {
    id: row.id,
    listingId: row.listing_id,
    sellerId: row.seller_id,
    startsAt: row.starts_at.toISOString(),
    endsAt: row.ends_at.toISOString(),
  };
}
