/**
 * The admins' batched digests (`public.admin_notification_types`): what
 * arrived since a type's `last_sent_at` goes to every admin as one in-app
 * notice and one e-mail, and `last_sent_at` moves to the newest item
 * covered. One short transaction holds the type's row lock while it reads
 * the items, writes the digests and advances the row, so two runs at once
 * send one digest per admin (the second waits, then finds nothing new).
 * E-mails are delivered after the commit, never inside it.
 *
 * | type               | covers                                              |
 * | ------------------ | --------------------------------------------------- |
 * | `listing_review`   | listings entering `pending_review` (`submitted_at`) |
 * | `contact_messages` | `contact_messages` entering the inbox              |
 * |                    | (`received_at`: received, or released by an admin), |
 * |                    | the form's ceiling hits among them (`reached_at`),  |
 * |                    | and the held messages waiting for review (counted,  |
 * |                    | never listed; new ones alone send a digest too)     |
 *
 * @module
 */
import type { z } from "zod";
import type { AdminDigestOutput } from "../../../../shared/notification_schemas.ts";
import type { EmailType } from "../../../../shared/notifications.ts";
import type { Caller } from "../platform/caller.ts";
import type { Context } from "../platform/context.ts";
import type { Sql } from "../platform/db.ts";
import { HttpError } from "../platform/errors.ts";
import {
  adminContactDigest,
  adminListingDigest,
  type ContactCeilingHit,
  type ContactHeldCount,
  type ContactMessageSummary,
  type PendingListing,
} from "../email/templates/admin.ts";
import type { DigestNotice } from "../email/templates/listings_digest.ts";
import { adminIds, type NoticeOutcome, queueNotice, withDelivery } from "./notify.ts";

/** An admin digest: a row of `admin_notification_types`. */
export type AdminDigestType = "listing_review" | "contact_messages";

/** What a digest function answers (`shared/notification_schemas.ts`). */
export type AdminDigestAnswer = z.infer<typeof AdminDigestOutput>;

/** Items a digest lists at most (it counts them all). */
export const ADMIN_DIGEST_SHOWN = 50;

/** A timestamptz as ISO 8601 in UTC with microseconds: exact, so it round-trips as a cursor. */
const isoUtc = (column: string) =>
  `to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

/** What arrived since the last digest. */
interface Collected {
  /** Every item after the cursor (more than the digest lists when over the cap). */
  total: number;
  /** The timestamp of the newest item (exact ISO), the next cursor; null without items. */
  newest: string | null;
  notice: DigestNotice;
  /** More for the in-app notice's `data` (the contact digest's held count). */
  data?: Record<string, number>;
}

/** How one digest type finds its items and where it leads. */
interface DigestKind {
  emailType: EmailType;
  link: string;
  /** The items after `since` (all when null), oldest first. */
  collect(sql: Sql, since: string | null): Promise<Collected>;
}

interface Counted {
  total: number;
  newest: string;
}

async function collectPendingListings(sql: Sql, since: string | null): Promise<Collected> {
  const rows = await sql.query<
    Counted & {
      id: string;
      title: string;
      category: string;
      asking_price: string;
      currency: string;
      submitted_at: Date;
    }
  >(
    `select id, title, category, asking_price::text as asking_price, currency, submitted_at,
            count(*) over ()::integer as total,
            ${isoUtc("max(submitted_at) over ()")} as newest
     from public.listings
     where review_status = 'pending_review' and submitted_at is not null
       and ($1::timestamptz is null or submitted_at > $1::timestamptz)
     order by submitted_at, id
     limit $2`,
    [since, ADMIN_DIGEST_SHOWN],
  );
  const listings: PendingListing[] = rows.map((row) => ({
    id: row.id,
    title: row.title,
    category: row.category,
    askingPrice: row.asking_price,
    currency: row.currency,
    submittedAt: row.submitted_at,
  }));
  const total = rows[0]?.total ?? 0;
  return { total, newest: rows[0]?.newest ?? null, notice: adminListingDigest(listings, total) };
}

/** The later of two exact ISO timestamps (they sort as text); null when both are. */
function later(a: string | null, b: string | null): string | null {
  if (a === null) return b;
  if (b === null) return a;
  return a > b ? a : b;
}

/**
 * Messages that entered the inbox after `since` (received, or released by an
 * admin: `received_at`), and the held ones: all that wait for review and
 * those that arrived after `since`. Held messages are counted, never listed
 * (they may be spam); a released one is listed by the first digest after its
 * release. The items are the listed messages and the new held ones.
 */
async function collectContactMessages(sql: Sql, since: string | null): Promise<Collected> {
  const rows = await sql.query<
    Counted & {
      name: string;
      email: string;
      subject: string | null;
      message: string;
      created_at: Date;
      released_at: Date | null;
    }
  >(
    `select name, email, subject, message, created_at,
            case when review_status = 'released' then reviewed_at end as released_at,
            count(*) over ()::integer as total,
            ${isoUtc("max(received_at) over ()")} as newest
     from public.contact_messages
     where received_at is not null
       and ($1::timestamptz is null or received_at > $1::timestamptz)
     order by received_at, id
     limit $2`,
    [since, ADMIN_DIGEST_SHOWN],
  );
  const messages: ContactMessageSummary[] = rows.map((row) => ({
    name: row.name,
    email: row.email,
    subject: row.subject,
    message: row.message,
    createdAt: row.created_at,
    releasedAt: row.released_at,
  }));
  const received = rows[0]?.total ?? 0;
  const held = await sql.one<ContactHeldCount & { newest: string | null }>(
    `select count(*)::integer as waiting,
            (count(*) filter (where $1::timestamptz is null or created_at > $1::timestamptz))::integer
              as arrived,
            ${
      isoUtc(
        "max(created_at) filter (where $1::timestamptz is null or created_at > $1::timestamptz)",
      )
    } as newest
     from public.contact_messages
     where review_status = 'held'`,
    [since],
  );
  const newest = later(rows[0]?.newest ?? null, held.newest);
  // Ceiling hits among the messages covered: the message that reached the
  // ceiling has created_at = reached_at, so a hit is told with its message.
  const hits = newest === null ? [] : await sql.query<ContactCeilingHit>(
    `select ceiling, reached_at as "reachedAt", window_ends_at as "windowEndsAt"
     from public.contact_ceiling_hits
     where ($1::timestamptz is null or reached_at > $1::timestamptz)
       and reached_at <= $2::timestamptz
     order by reached_at
     limit $3`,
    [since, newest, ADMIN_DIGEST_SHOWN],
  );
  const count = { waiting: held.waiting, arrived: held.arrived };
  return {
    total: received + held.arrived,
    newest,
    notice: adminContactDigest(messages, received, hits, count),
    data: { held: held.waiting },
  };
}

const DIGESTS: Record<AdminDigestType, DigestKind> = {
  listing_review: {
    emailType: "admin_listing_digest",
    link: "/admin/listings",
    collect: collectPendingListings,
  },
  contact_messages: {
    emailType: "admin_contact_digest",
    link: "/admin/messages",
    collect: collectContactMessages,
  },
};

/** Whether a notice reached its admin on some channel (both blocked: not a digest sent). */
function delivered(outcome: NoticeOutcome): boolean {
  return outcome.inApp === "created" ||
    (outcome.email !== null && outcome.email.status !== "suppressed");
}

/**
 * Sends digest `type` to every admin when something arrived since its last
 * one, and advances its row. A caller other than an admin (the scheduler,
 * the service key, the local anon key) may run it only while the type has a
 * `cron_schedule`: 403 `forbidden` otherwise. Without any admin nothing is
 * written and the cursor stays, so the first admin gets the backlog.
 */
export async function sendAdminDigest(
  ctx: Context,
  type: AdminDigestType,
  caller: Caller,
): Promise<AdminDigestAnswer> {
  const kind = DIGESTS[type];
  const written = await ctx.db.tx(async (sql) => {
    const row = await sql.maybeOne<{ cron_schedule: string | null; last_sent_at: string | null }>(
      `select cron_schedule, ${isoUtc("last_sent_at")} as last_sent_at
       from public.admin_notification_types where type = $1
       for update`,
      [type],
    );
    if (!row) {
      throw new HttpError(
        503,
        "not_configured",
        `Cannot send the "${type}" digest: admin_notification_types has no row for it (apply the migrations)`,
      );
    }
    if (caller.kind !== "user" && row.cron_schedule === null) {
      throw new HttpError(
        403,
        "forbidden",
        `Cannot send the "${type}" digest: it has no schedule (admin_notification_types.cron_schedule is null), so only an admin may send it`,
      );
    }
    const unchanged = { sent: 0, lastSentAt: row.last_sent_at, results: [] };
    const found = await kind.collect(sql, row.last_sent_at);
    if (found.total === 0 || found.newest === null) return { ...unchanged, items: 0 };
    const admins = await adminIds(sql);
    if (admins.length === 0) {
      ctx.log.warn("admin digest not sent: there is no admin", { type, items: found.total });
      return { ...unchanged, items: found.total };
    }
    const results: NoticeOutcome[] = [];
    for (const adminId of admins) {
      results.push(
        await queueNotice(ctx, sql, {
          userId: adminId,
          type: "admin_digest",
          title: found.notice.title,
          body: found.notice.body,
          link: kind.link,
          data: { ...found.data, digest: type, items: found.total, lastSentAt: found.newest },
          key: `admin_digest:${type}:${found.newest}`,
          email: { emailType: kind.emailType, content: found.notice.email },
        }),
      );
    }
    const sent = results.filter(delivered).length;
    await sql.query(
      `update public.admin_notification_types
       set last_sent_at = $2::timestamptz, total_sent_count = total_sent_count + $3
       where type = $1`,
      [type, found.newest, sent],
    );
    return { sent, items: found.total, lastSentAt: found.newest, results };
  });
  const results = await withDelivery(ctx, written.results);
  return { type, ...written, results };
}
