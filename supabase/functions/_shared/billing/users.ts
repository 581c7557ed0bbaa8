/**
 * Users as billing sees them: ids taken from processor metadata are checked
 * before they are trusted to exist, e-mail addresses count as the user's
 * only once confirmed, and admins name users by id or e-mail.
 *
 * @module
 */
import type { Sql } from "../platform/db.ts";
import { isUuid } from "../lib/uuid.ts";

/** A user billing acts for, as stored in `auth.users`. */
export interface BillingUser {
  id: string;
  email: string | null;
  /** Whether the user proved the address (`email_confirmed_at` is set). */
  email_confirmed: boolean;
}

/** The id when `candidate` is the id of an existing user, else null. */
export async function existingUserId(sql: Sql, candidate: unknown): Promise<string | null> {
  if (!isUuid(candidate)) return null;
  const row = await sql.maybeOne<{ id: string }>("select id from auth.users where id = $1", [
    candidate,
  ]);
  return row?.id ?? null;
}

const USER_COLUMNS = "id, email, email_confirmed_at is not null as email_confirmed";

/** The user with this id or e-mail (case-insensitive), or null. */
export async function findUser(
  sql: Sql,
  by: { userId?: string; email?: string },
): Promise<BillingUser | null> {
  if (by.userId !== undefined) {
    return await sql.maybeOne<BillingUser>(
      `select ${USER_COLUMNS} from auth.users where id = $1`,
      [by.userId],
    );
  }
  if (by.email !== undefined) {
    return await sql.maybeOne<BillingUser>(
      `select ${USER_COLUMNS} from auth.users where lower(email) = lower($1)
       order by created_at limit 1`,
      [by.email],
    );
  }
  return null;
}
