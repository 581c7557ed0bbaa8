/**
 * Users as billing sees them: ids taken from processor metadata are checked
 * before they are trusted to exist, and admins name users by id or e-mail.
 *
 * @module
 */
import type { Sql } from "../db.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A user billing acts for. */
export interface BillingUser {
  id: string;
  email: string | null;
}

/** The id when `candidate` is the id of an existing user, else null. */
export async function existingUserId(sql: Sql, candidate: unknown): Promise<string | null> {
  if (typeof candidate !== "string" || !UUID.test(candidate)) return null;
  const row = await sql.maybeOne<{ id: string }>("select id from auth.users where id = $1", [
    candidate,
  ]);
  return row?.id ?? null;
}

/** The user with this id or e-mail (case-insensitive), or null. */
export async function findUser(
  sql: Sql,
  by: { userId?: string; email?: string },
): Promise<BillingUser | null> {
  if (by.userId !== undefined) {
    return await sql.maybeOne<BillingUser>("select id, email from auth.users where id = $1", [
      by.userId,
    ]);
  }
  if (by.email !== undefined) {
    return await sql.maybeOne<BillingUser>(
      "select id, email from auth.users where lower(email) = lower($1) order by created_at limit 1",
      [by.email],
    );
  }
  return null;
}
