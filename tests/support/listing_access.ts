/**
 * Fixtures for confidential listings, access requests and conversations:
 * written on the superuser pool, the way the service connection writes, so
 * the state machines' triggers still hold every move.
 *
 * @module
 */
import type pg from "pg";
import type { AccessRequestStatus } from "../../shared/listing_access_schemas.ts";

/** Makes listing `listingId` confidential (`nda`) with `fields` (as the service connection). */
export async function makeConfidential(
  pool: pg.Pool,
  listingId: string,
  fields: readonly string[] = ["seller", "url"],
): Promise<void> {
  await pool.query(
    "update public.listings set access_mode = 'nda', confidential_fields = $2 where id = $1",
    [listingId, fields],
  );
}

/** The moves that lead from a new request to each status (as the service connection). */
const PATHS: Record<AccessRequestStatus, AccessRequestStatus[]> = {
  pending: [],
  approved: ["approved"],
  suspended: ["approved", "suspended"],
  declined: ["declined"],
  withdrawn: ["withdrawn"],
  expired: ["expired"],
  revoked: ["approved", "revoked"],
};

/**
 * A request of `buyerId` for listing `listingId`, accepting the current NDA
 * and walked to `status` along the state machine; answers its id.
 */
export async function accessRequest(
  pool: pg.Pool,
  listingId: string,
  buyerId: string,
  status: AccessRequestStatus = "approved",
): Promise<string> {
  const { rows } = await pool.query<{ id: string }>(
    `insert into public.listing_access_requests (listing_id, buyer_id, seller_id, nda_version, nda_sha256)
     select l.id, $2, l.seller_id, d.version, d.sha256
     from public.listings l, public.nda_documents d
     where l.id = $1 and d.version = public.current_nda_version()
     returning id`,
    [listingId, buyerId],
  );
  const id = rows[0]!.id;
  for (const next of PATHS[status]) {
    await pool.query("update public.listing_access_requests set status = $2 where id = $1", [
      id,
      next,
    ]);
  }
  return id;
}

/**
 * Moves pending request `id`'s expiry into the past (a minute ago), the way
 * time does: past the trigger that keeps the terms fixed.
 */
export async function lapseRequest(pool: pg.Pool, id: string): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query("begin");
    await client.query("set local session_replication_role = replica");
    await client.query(
      "update public.listing_access_requests set expires_at = now() - interval '1 minute' where id = $1",
      [id],
    );
    await client.query("commit");
  } finally {
    client.release();
  }
}

/** The request's current status. */
export async function requestStatus(pool: pg.Pool, id: string): Promise<string | undefined> {
  const { rows } = await pool.query<{ status: string }>(
    "select status from public.listing_access_requests where id = $1",
    [id],
  );
  return rows[0]?.status;
}

/** The rows `notice_queue` holds about `subjectId`, oldest first. */
export async function queuedNotices(
  pool: pg.Pool,
  subjectId: string,
): Promise<Array<{ kind: string; user_id: string; status: string; due_at: Date }>> {
  const { rows } = await pool.query(
    `select kind, user_id, status, due_at from public.notice_queue
     where subject_id = $1 order by created_at, kind, user_id`,
    [subjectId],
  );
  return rows;
}

/**
 * Moves everything recorded about conversation `conversationId` (its
 * messages, marks and queued notices) `minutes` into the past, as if that
 * much time had gone by. Messages never change, so the triggers are set
 * aside for the one statement (the test pool is a superuser).
 */
export async function ageConversation(
  pool: pg.Pool,
  conversationId: string,
  minutes: number,
): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query("begin");
    await client.query("set local session_replication_role = replica");
    const shift = "make_interval(mins => $2)";
    await client.query(
      `update public.messages set created_at = created_at - ${shift} where conversation_id = $1`,
      [conversationId, minutes],
    );
    await client.query(
      `update public.conversations set
         created_at = created_at - ${shift},
         last_message_at = last_message_at - ${shift},
         buyer_last_read_at = buyer_last_read_at - ${shift},
         seller_last_read_at = seller_last_read_at - ${shift},
         closed_at = closed_at - ${shift}
       where id = $1`,
      [conversationId, minutes],
    );
    await client.query(
      `update public.notice_queue set
         created_at = created_at - ${shift},
         due_at = due_at - ${shift},
         done_at = done_at - ${shift}
       where subject_id = $1`,
      [conversationId, minutes],
    );
    await client.query("commit");
  } catch (error) {
    await client.query("rollback");
    throw error;
  } finally {
    client.release();
  }
}

/**
 * The listings whose `access_buyers` (kept by a trigger, read by the blur
 * rule) is not exactly the buyers with an approved request: none, always.
 */
export async function accessBuyersOutOfSync(pool: pg.Pool): Promise<string[]> {
  const { rows } = await pool.query<{ id: string }>(
    `select l.id from public.listings l
     where array(select unnest(l.access_buyers) order by 1)
       is distinct from array(
         select r.buyer_id from public.listing_access_requests r
         where r.listing_id = l.id and r.status = 'approved' order by 1
       )`,
  );
  return rows.map((r) => r.id);
}
