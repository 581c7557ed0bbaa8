/**
 * The daily digest of new listings (`send-listing-notifications`), opt-in:
 * its recipients are the users whose `new_listings` preference has e-mail
 * or in-app switched on. Each gets the listings approved since their last
 * digest (not their own), newest first, at most
 * {@linkcode DIGEST_LISTINGS_SHOWN} listed — on the channels the
 * preference allows (a blocked e-mail is logged `suppressed`).
 *
 * A user's last digest is the newest of their `new_listings_digest` e-mail
 * rows (any status, `suppressed` included) and their in-app digest notices
 * (type `new_listings`, dedupe key `new_listings:…`); without either, the
 * digest covers the last 24 hours ({@linkcode FIRST_DIGEST_LOOKBACK}). At most one
 * digest per user per UTC day: its key is `new_listings:<YYYY-MM-DD>`, and a
 * user who has that day's notice or e-mail is skipped.
 *
 * A listing's asking price is in the digest only when it is visible to the
 * recipient; else the digest shows the placeholder of a hidden price. The
 * rule is `listing_view_secure`'s, asked per listing through
 * `listing_visibility()` (what `can_view_field` answers): their plan's blur,
 * and the confidential fields of an nda listing they have no approved access
 * to. Title and category are shown to everyone who sees the listing.
 *
 * Users are taken {@linkcode DIGEST_BATCH_USERS} at a time, each batch
 * written in one short transaction (a savepoint per user, so one failing
 * user is a failed item, not a failed batch) and delivered after its commit.
 *
 * @module
 */
import type { Context } from "../platform/context.ts";
import { inSavepoint, type Sql } from "../platform/db.ts";
import { type DigestListing, newListingsDigest } from "../email/templates/listings_digest.ts";
import type { JobTally } from "../platform/jobs/tally.ts";
import { type NoticeOutcome, queueNotice, withDelivery } from "./notify.ts";

/** The job name in `job_runs` and `job_schedules`. */
export const LISTINGS_DIGEST_JOB = "send-listing-notifications";

/** Recipients written per transaction. */
export const DIGEST_BATCH_USERS = 100;

/** Listings one digest lists at most (it counts them all). */
export const DIGEST_LISTINGS_SHOWN = 20;

/** What a first digest covers (a Postgres interval). */
export const FIRST_DIGEST_LOOKBACK = "24 hours";

/** One recipient's share of a batch. */
interface Recipient {
  userId: string;
  /** Whether today's digest was written already. */
  sentToday: boolean;
  /** New listings after their last digest, newest first (at most the shown cap). */
  listings: DigestListing[];
  /** All of them. */
  total: number;
}

/** Recipients after `after` (by id), at most `limit`. */
async function recipientsAfter(sql: Sql, after: string | null, limit: number): Promise<string[]> {
  const rows = await sql.query<{ user_id: string }>(
    `select user_id from public.notification_preferences
     where type = 'new_listings' and (email or in_app)
       and ($1::uuid is null or user_id > $1::uuid)
     order by user_id
     limit $2`,
    [after, limit],
  );
  return rows.map((row) => row.user_id);
}

/** What each of `userIds` would get today (one query for the batch). */
async function digestsOf(sql: Sql, userIds: string[], key: string): Promise<Recipient[]> {
  const rows = await sql.query<{
    user_id: string;
    sent_today: boolean;
    id: string | null;
    title: string | null;
    category: string | null;
    asking_price: string | null;
    price_confidential: boolean | null;
    currency: string | null;
    total: number | null;
  }>(
    `select u.user_id,
            exists (
              select 1 from public.notifications n
              where n.user_id = u.user_id and n.dedupe_key = $2::text
            ) or exists (
              -- noticeEmailKey(key, user): the e-mail key of the same notice
              select 1 from public.email_logs e
              where e.idempotency_key = $2::text || ':' || u.user_id::text
            ) as sent_today,
            l.id, l.title, l.category, l.currency, l.total,
            -- Only a price visible to the recipient (see the module doc).
            case when not ('asking_price' = any (seen.hidden_fields))
              then l.asking_price::text
            end as asking_price,
            'asking_price' = any (seen.confidential_fields_hidden) as price_confidential
     from unnest($1::uuid[]) with ordinality as u(user_id, position)
     cross join lateral (
       select greatest(
         (select max(e.created_at) from public.email_logs e
          where e.user_id = u.user_id and e.email_type = 'new_listings_digest'),
         (select max(n.created_at) from public.notifications n
          where n.user_id = u.user_id and n.type = 'new_listings'
            and n.dedupe_key like 'new_listings:%')
       ) as at
     ) last_digest
     left join lateral (
       select l.id, l.title, l.category, l.asking_price, l.currency,
              l.reviewed_at, count(*) over ()::integer as total
       from public.listings l
       where l.review_status = 'approved'
         and l.reviewed_at > coalesce(last_digest.at, now() - $3::interval)
         and l.seller_id <> u.user_id
       order by l.reviewed_at desc, l.id desc
       limit $4
     ) l on true
     left join lateral public.listing_visibility(l.id, u.user_id) seen on true
     order by u.position, l.reviewed_at desc, l.id desc`,
    [userIds, key, FIRST_DIGEST_LOOKBACK, DIGEST_LISTINGS_SHOWN],
  );
  const byUser = new Map<string, Recipient>();
  for (const row of rows) {
    let recipient = byUser.get(row.user_id);
    if (!recipient) {
      recipient = { userId: row.user_id, sentToday: row.sent_today, listings: [], total: 0 };
      byUser.set(row.user_id, recipient);
    }
    if (row.id === null) continue;
    recipient.total = row.total ?? 0;
    recipient.listings.push({
      id: row.id,
      title: row.title ?? "",
      category: row.category ?? "",
      askingPrice: row.asking_price,
      priceHiddenBy: row.asking_price !== null
        ? undefined
        : row.price_confidential
        ? "confidential"
        : "plan",
      currency: row.currency ?? "USD",
    });
  }
  return [...byUser.values()];
}

/** Writes the digests of one batch in `sql`; answers the notices written. */
async function writeBatch(
  ctx: Context,
  sql: Sql,
  userIds: string[],
  key: string,
  tally: JobTally,
): Promise<NoticeOutcome[]> {
  const written: NoticeOutcome[] = [];
  for (const recipient of await digestsOf(sql, userIds, key)) {
    tally.scanned++;
    if (recipient.sentToday) {
      tally.count("already_sent_today");
      continue;
    }
    if (recipient.total === 0) {
      tally.count("no_new_listings");
      continue;
    }
    const digest = newListingsDigest(recipient.listings, recipient.total);
    // One user's failure rolls back only their notice; its e-mail is then skipped by the outbox.
    const outcome = await tally.attempt(
      `user:${recipient.userId}`,
      () =>
        inSavepoint(sql, () =>
          queueNotice(ctx, sql, {
            userId: recipient.userId,
            type: "new_listings",
            title: digest.title,
            body: digest.body,
            link: "/explore",
            data: { listingIds: recipient.listings.map((l) => l.id), total: recipient.total },
            key,
            email: { emailType: "new_listings_digest", content: digest.email },
          })),
    );
    if (outcome) written.push(outcome);
  }
  return written;
}

/** Counts what one delivered notice did. */
function countOutcome(tally: JobTally, outcome: NoticeOutcome): void {
  const inApp = outcome.inApp === "created";
  const email = outcome.email;
  const emailed = email !== null && email.status !== "suppressed";
  if (inApp) tally.count("in_app");
  if (email === null) tally.count("no_email_address");
  else if (!emailed) tally.count("emails_suppressed");
  else tally.count("emails");
  if (email?.status === "failed") tally.count("emails_failed");
  if (inApp || emailed) tally.changed++;
}

/**
 * Writes and delivers today's digest to every recipient (see the module
 * doc), counting `scanned` (recipients looked at), `changed` (digests
 * written) and `emails`, `emails_suppressed`, `emails_failed` (retried by
 * the e-mail retry job), `in_app`, `no_new_listings`, `already_sent_today`.
 */
export async function sendListingsDigests(ctx: Context, tally: JobTally): Promise<void> {
  const today = await ctx.db.one<{ day: string }>(
    "select to_char(now() at time zone 'UTC', 'YYYY-MM-DD') as day",
  );
  const key = `new_listings:${today.day}`;
  let after: string | null = null;
  for (;;) {
    const userIds = await recipientsAfter(ctx.db, after, DIGEST_BATCH_USERS);
    if (userIds.length === 0) break;
    after = userIds.at(-1)!;
    const written = await ctx.db.tx((sql) => writeBatch(ctx, sql, userIds, key, tally));
    for (const outcome of await withDelivery(ctx, written)) countOutcome(tally, outcome);
    if (userIds.length < DIGEST_BATCH_USERS) break;
  }
}
