/**
 * Sellers' notices about their sponsored placements, the guarded job
 * `send-sponsored-notifications` (scheduled hourly, and a sub-job of the
 * daily orchestrator): once when a placement has started (it is `active`),
 * and once when an active placement ends within the next
 * {@linkcode ENDING_NOTICE_WINDOW}. Each notice goes through the
 * notifications module (type `sponsored`: an in-app row and an e-mail,
 * `sponsored_started` / `sponsored_ending`, as the seller's preferences
 * allow; key `sponsored:<kind>:<placement>`).
 *
 * Exactly once: a notice is written in the transaction that stamps its
 * placement (`started_notified_at`, `ending_notified_at`), and the stamp is
 * an update guarded by "still due", so a rerun or a concurrent writer finds
 * nothing to do. A seller who switched the notices off is stamped too (the
 * e-mail is logged `suppressed`): they are not told later.
 *
 * What counts as failed: a notice that could not be written (its savepoint
 * rolls back, the placement stays unstamped and the next run tries again)
 * is a failed item, and the run answers 500 `partial_failure`. An e-mail
 * that was written but whose delivery failed is not: it is counted in
 * `emails_failed` and left to the e-mail retry sub-job (a refusal of the
 * message itself is not retried there), and this job never writes it again.
 *
 * @module
 */
import type { Context } from "../platform/context.ts";
import { inSavepoint, type Sql } from "../platform/db.ts";
import {
  sponsoredEndingNotice,
  sponsoredLink,
  type SponsoredNotice,
  type SponsoredPlacement,
  sponsoredStartedNotice,
} from "../email/templates/sponsored.ts";
import { type JobSkipped, runGuardedJob } from "../platform/jobs/guard.ts";
import type { JobOutput } from "../platform/jobs/runs.ts";
import type { JobTally } from "../platform/jobs/tally.ts";
import { countNoticeOutcome } from "../notifications/counts.ts";
import { type NoticeOutcome, queueNotice, withDelivery } from "../notifications/notify.ts";

/** The job name in `job_runs` and `job_schedules`. */
export const SPONSORED_NOTICES_JOB = "send-sponsored-notifications";

/** Placements written per transaction. */
export const SPONSORED_NOTICE_BATCH = 100;

/** How soon before its end an active placement gets its ending notice (a Postgres interval). */
export const ENDING_NOTICE_WINDOW = "24 hours";

/** The two notices of a placement. */
export type SponsoredNoticeKind = "started" | "ending";

/** Per kind: its stamp column, when a placement is due for it, its e-mail type and template. */
const KINDS = {
  started: {
    stamp: "started_notified_at",
    due: "s.status = 'active' and s.started_notified_at is null",
    emailType: "sponsored_started",
    notice: sponsoredStartedNotice,
  },
  ending: {
    stamp: "ending_notified_at",
    due: `s.status = 'active' and s.ending_notified_at is null
          and s.ends_at > now() and s.ends_at <= now() + '${ENDING_NOTICE_WINDOW}'::interval`,
    emailType: "sponsored_ending",
    notice: sponsoredEndingNotice,
  },
} as const satisfies Record<SponsoredNoticeKind, {
  stamp: string;
  due: string;
  emailType: string;
  notice: (placement: SponsoredPlacement) => SponsoredNotice;
}>;

/** A placement due for a notice, as its notice needs it. */
interface DuePlacement extends SponsoredPlacement {
  id: string;
  sellerId: string;
}

/** The notice key of `kind` for placement `id` (one per placement and kind). */
export function sponsoredNoticeKey(kind: SponsoredNoticeKind, id: string): string {
  return `sponsored:${kind}:${id}`;
}

/** Placements due for `kind` after `after` (by id), at most `limit`. */
async function duePlacements(
  sql: Sql,
  kind: SponsoredNoticeKind,
  after: string | null,
  limit: number,
): Promise<DuePlacement[]> {
  const rows = await sql.query<{
    id: string;
    listing_id: string;
    seller_id: string;
    title: string;
    starts_at: Date;
    ends_at: Date;
  }>(
    `select s.id, s.listing_id, s.seller_id, l.title, s.starts_at, s.ends_at
     from public.sponsored_listings s
     join public.listings l on l.id = s.listing_id
     where ${KINDS[kind].due} and ($1::uuid is null or s.id > $1::uuid)
     order by s.id
     limit $2`,
    [after, limit],
  );
  return rows.map((row) => ({
    id: row.id,
    listingId: row.listing_id,
    sellerId: row.seller_id,
    title: row.title,
    startsAt: row.starts_at,
    endsAt: row.ends_at,
  }));
}

/** Stamps `placement` notified of `kind` if it still is due; false when it no longer is. */
async function stamp(sql: Sql, kind: SponsoredNoticeKind, id: string): Promise<boolean> {
  const row = await sql.maybeOne(
    `update public.sponsored_listings s set ${KINDS[kind].stamp} = now()
     where s.id = $1 and ${KINDS[kind].due}
     returning s.id`,
    [id],
  );
  return row !== null;
}

/** A written notice, waiting for delivery. */
interface Written {
  placementId: string;
  outcome: NoticeOutcome;
}

/** Stamps and writes the `kind` notices of `placements` in transaction `sql`. */
async function writeBatch(
  ctx: Context,
  sql: Sql,
  kind: SponsoredNoticeKind,
  placements: DuePlacement[],
  tally: JobTally,
): Promise<Written[]> {
  const written: Written[] = [];
  for (const placement of placements) {
    tally.scanned++;
    // A notice that cannot be written rolls back its stamp too: the next run tries again.
    const outcome = await tally.attempt(
      `${kind}:${placement.id}`,
      () =>
        inSavepoint(sql, async () => {
          if (!(await stamp(sql, kind, placement.id))) return null;
          const notice = KINDS[kind].notice(placement);
          return await queueNotice(ctx, sql, {
            userId: placement.sellerId,
            type: "sponsored",
            title: notice.title,
            body: notice.body,
            link: sponsoredLink(placement),
            data: {
              kind,
              placementId: placement.id,
              listingId: placement.listingId,
              startsAt: placement.startsAt.toISOString(),
              endsAt: placement.endsAt.toISOString(),
            },
            key: sponsoredNoticeKey(kind, placement.id),
            email: { emailType: KINDS[kind].emailType, content: notice.email },
          });
        }),
    );
    if (outcome === null) tally.count("no_longer_due");
    else if (outcome) written.push({ placementId: placement.id, outcome });
  }
  return written;
}

/** Writes and delivers every due notice of `kind`, a batch per transaction. */
async function sendKind(ctx: Context, kind: SponsoredNoticeKind, tally: JobTally): Promise<void> {
  let after: string | null = null;
  for (;;) {
    const placements = await duePlacements(ctx.db, kind, after, SPONSORED_NOTICE_BATCH);
    if (placements.length === 0) return;
    after = placements.at(-1)!.id;
    const written = await ctx.db.tx((sql) => writeBatch(ctx, sql, kind, placements, tally));
    const delivered = await withDelivery(ctx, written.map((w) => w.outcome));
    written.forEach((w, i) => {
      tally.changed++;
      tally.list(kind, w.placementId);
      countNoticeOutcome(tally, delivered[i]!);
    });
    if (placements.length < SPONSORED_NOTICE_BATCH) return;
  }
}

/**
 * Sends every due sponsored notice under the job guard (see the module
 * doc). The answer lists the placements told in `items.started` and
 * `items.ending` and counts `in_app`, `in_app_suppressed`, `emails`,
 * `emails_suppressed`, `emails_failed`, `no_email_address` and
 * `no_longer_due`; a rerun finds nothing.
 */
export function runSponsoredNotifications(ctx: Context): Promise<JobOutput | JobSkipped> {
  return runGuardedJob(ctx, SPONSORED_NOTICES_JOB, {}, async (tally) => {
    await sendKind(ctx, "started", tally);
    await sendKind(ctx, "ending", tally);
  });
}
