/**
 * Fixtures for the duplicates tests: listings and price alerts created a
 * minute apart, in order, so "the oldest" is the one made first.
 *
 * @module
 */
import type pg from "pg";
import type { ReviewStatus } from "../db/core_fixtures.ts";

/** A price alert's distinguishing fields. */
export interface AlertSpec {
  listingId?: string;
  targetPrice?: string;
  category?: string;
  maxPrice?: string;
  currency?: string;
  keywords?: string[];
  channels?: string[];
  active?: boolean;
}

/** Makers of listings and alerts on `pool`, each created after the ones before. */
export function duplicateFixtures(pool: pg.Pool) {
  let clock = 0;
  const nextCreatedAt = () => new Date(Date.UTC(2026, 0, 1) + ++clock * 60_000);
  /** Listings reach a status through the review state machine. */
  const path: Record<ReviewStatus, string[]> = {
    draft: [],
    pending_review: [],
    approved: ["approved"],
    rejected: ["rejected"],
    archived: ["approved", "archived"],
  };
  return {
    /** Inserts a listing of `sellerId` with `title` and `url`, walked to `status`. */
    async listing(
      sellerId: string,
      title: string,
      url: string | null,
      status: ReviewStatus = "approved",
    ): Promise<string> {
      const { rows } = await pool.query<{ id: string }>(
        `insert into public.listings (seller_id, title, url, category, asking_price, review_status,
           created_at)
         values ($1, $2, $3, 'saas', 1000, $4, $5) returning id`,
        [sellerId, title, url, status === "draft" ? "draft" : "pending_review", nextCreatedAt()],
      );
      const id = rows[0]!.id;
      for (const next of path[status]) {
        await pool.query("update public.listings set review_status = $2 where id = $1", [id, next]);
      }
      return id;
    },
    /** Inserts a price alert of `userId` (active, both channels unless `spec` says otherwise). */
    async alert(userId: string, spec: AlertSpec): Promise<string> {
      const { rows } = await pool.query<{ id: string }>(
        `insert into public.price_alerts (user_id, listing_id, target_price, category, max_price,
           currency, keywords, channels, active, created_at)
         values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) returning id`,
        [
          userId,
          spec.listingId ?? null,
          spec.targetPrice ?? null,
          spec.category ?? null,
          spec.maxPrice ?? null,
          spec.currency ?? null,
          spec.keywords ?? [],
          spec.channels ?? ["email", "in_app"],
          spec.active ?? true,
          nextCreatedAt(),
        ],
      );
      return rows[0]!.id;
    },
  };
}
