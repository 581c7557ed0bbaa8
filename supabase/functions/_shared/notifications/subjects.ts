/**
 * Reading what a notice is about — a user, a listing, a deal — with the
 * 404 a caller gets when it does not exist.
 *
 * @module
 */
import type { Sql } from "../platform/db.ts";
import { notFound } from "../platform/errors.ts";

/** A user as notices address them. */
export interface NoticeUser {
  id: string;
  email: string | null;
  fullName: string | null;
}

/** User `id`; 404 when there is none. */
export async function requireUser(sql: Sql, id: string): Promise<NoticeUser> {
  const row = await sql.maybeOne<{ id: string; email: string | null; full_name: string | null }>(
    `select u.id, coalesce(p.email, u.email) as email, p.full_name
     from auth.users u left join public.profiles p on p.id = u.id
     where u.id = $1`,
    [id],
  );
  if (!row) throw notFound(`User "${id}" does not exist`);
  return { id: row.id, email: row.email, fullName: row.full_name };
}

/** A listing as the review notices need it. */
export interface NoticeListing {
  id: string;
  sellerId: string;
  title: string;
  reviewStatus: string;
  /** When it was last approved or rejected (epoch ms), part of the notices' idempotency keys. */
  reviewedAt: number | null;
}

/** Listing `id`; 404 when there is none. */
export async function requireListing(sql: Sql, id: string): Promise<NoticeListing> {
  const row = await sql.maybeOne<{
    id: string;
    seller_id: string;
    title: string;
    review_status: string;
    reviewed_at: Date | null;
  }>(
    "select id, seller_id, title, review_status, reviewed_at from public.listings where id = $1",
    [id],
  );
  if (!row) throw notFound(`Listing "${id}" does not exist`);
  return {
    id: row.id,
    sellerId: row.seller_id,
    title: row.title,
    reviewStatus: row.review_status,
    reviewedAt: row.reviewed_at?.getTime() ?? null,
  };
}
