/**
 * The new-user welcome: a welcome e-mail and in-app notice to the user, and
 * an in-app "New user" notice to each admin, once per user. One code path,
 * {@linkcode writeWelcome}, reached two ways:
 *
 * - the queue: a trigger on `auth.users` writes a `new_user_welcomes` row
 *   for every sign-up (anonymous sign-ins excepted), and
 *   `send-new-user-notification` started with no body — every minute by its
 *   `job_schedules` row — drains it ({@linkcode runWelcomeQueue});
 * - a call naming the user (`{ userId }`), which also marks the user's row.
 *
 * Exactly once: a queue row is claimed `for update skip locked` and moved to
 * `welcomed` in the transaction that writes the notices and the welcome's
 * `email_logs` row; the notices' dedupe keys and the e-mail's idempotency
 * key make a second write a no-op whatever happens; the e-mail goes out from
 * its row, once (the sender's claim and provider key). The state machine is
 * in `supabase/migrations/*_new_user_welcomes.sql`.
 *
 * @module
 */
import type { Context } from "../platform/context.ts";
import { inSavepoint, type Sql } from "../platform/db.ts";
import { retryDueEmailsOf } from "../email/retry.ts";
import { welcomeEmail } from "../email/templates/account.ts";
import { type JobSkipped, runGuardedJob } from "../platform/jobs/guard.ts";
import type { JobOutput } from "../platform/jobs/runs.ts";
import type { JobTally } from "../platform/jobs/tally.ts";
import { countNoticeOutcome } from "./counts.ts";
import { adminIds, type NoticeOutcome, queueNotice, wasNotified, withDelivery } from "./notify.ts";
import { requireUser } from "./subjects.ts";

/** The welcome's notice key: one per user (its e-mail's idempotency key is `welcome:<user>`). */
export const WELCOME_KEY = "welcome";

/** The job name in `job_runs` (the function the schedule starts). */
export const WELCOME_QUEUE_JOB = "send-new-user-notification";

/** Queue rows claimed per transaction. */
export const WELCOME_BATCH = 50;

/** Users one run welcomes at most (a burst of sign-ups drains over a few runs). */
export const WELCOME_RUN_LIMIT = 500;

/** Failed attempts after which a queue row is `failed` (an operator resets it). */
export const WELCOME_MAX_ATTEMPTS = 5;

/**
 * After this long an unfinished run is taken over: longer than a hosted edge
 * function may run on the free plan (150 s of wall clock; paid plans allow
 * 400 s), short enough that a run killed mid-way delays the next sign-ups by
 * minutes, not the guard's default quarter of an hour. A takeover that meets
 * a run still alive is harmless: each claims other rows, and each e-mail's
 * attempt is claimed by one sender.
 */
export const WELCOME_STALE_AFTER_MS = 3 * 60_000;

/** What writing one user's welcome did. */
export interface WrittenWelcome {
  /** False when the user was welcomed before (nothing new was written). */
  welcomed: boolean;
  welcome: NoticeOutcome;
  admins: NoticeOutcome[];
}

/**
 * Writes the welcome of user `userId` in transaction `sql` — the user's
 * notice and e-mail (into the request's outbox), each admin's notice — and
 * moves the user's queue row, if any, to `welcomed`. A user welcomed before
 * gets nothing new (`welcomed: false`). 404 when the user does not exist.
 */
export async function writeWelcome(
  ctx: Context,
  sql: Sql,
  userId: string,
): Promise<WrittenWelcome> {
  const user = await requireUser(sql, userId);
  // The queue row first, then the per-user lock: the drain holds the row
  // from its claim before it takes the lock, so a call naming the user
  // waits for the drain's commit instead of deadlocking with it.
  await sql.query("select 1 from public.new_user_welcomes where user_id = $1 for update", [
    user.id,
  ]);
  // Concurrent writers for one user (calls naming them, users without a
  // queue row) queue here; the first writes, the others find its rows (and
  // the writes are idempotent regardless).
  await sql.query("select pg_advisory_xact_lock(hashtextextended($1, 0))", [
    `${WELCOME_KEY}:${user.id}`,
  ]);
  const welcomedBefore = await wasNotified(sql, user.id, WELCOME_KEY);
  const welcome = await queueNotice(ctx, sql, {
    userId: user.id,
    type: "account",
    title: "Welcome to the marketplace",
    body: "Your account is ready. Explore listings or list your own project.",
    link: "/explore",
    key: WELCOME_KEY,
    email: { emailType: "welcome", content: welcomeEmail(user.fullName) },
  });
  const admins: NoticeOutcome[] = [];
  for (const adminId of await adminIds(sql)) {
    if (adminId === user.id) continue;
    admins.push(
      await queueNotice(ctx, sql, {
        userId: adminId,
        type: "admin_digest",
        title: "New user",
        body: `${user.email ?? "A user without an address"} joined the marketplace.`,
        link: `/admin/users/${user.id}`,
        data: { userId: user.id },
        key: `new_user:${user.id}`,
      }),
    );
  }
  await sql.query(
    `update public.new_user_welcomes
     set status = 'welcomed', welcomed_at = now(), last_error = null
     where user_id = $1 and status <> 'welcomed'`,
    [user.id],
  );
  return { welcomed: !welcomedBefore, welcome, admins };
}

/**
 * Drains the welcome queue under the job guard: claims pending rows
 * (`for update skip locked`, oldest first, {@linkcode WELCOME_BATCH} per
 * transaction, at most {@linkcode WELCOME_RUN_LIMIT} per run), writes each
 * user's welcome in a savepoint and delivers the batch's e-mails after its
 * commit; then makes the due attempt at welcome e-mails an earlier request
 * wrote but did not deliver (it died, or the provider failed and the backoff
 * has passed). A user whose welcome cannot be written is a failed item (the
 * run answers 500 `partial_failure`) and stays pending for the next run, up
 * to {@linkcode WELCOME_MAX_ATTEMPTS} attempts. Counts `welcomed` (listed
 * in `items.welcomed`), `already_welcomed`, `admin_notices`, the notice
 * counts of `notifications/counts.ts` for the welcomes, and
 * `emails_retried` / `emails_retry_failed` for the earlier e-mails.
 */
export function runWelcomeQueue(ctx: Context): Promise<JobOutput | JobSkipped> {
  return runGuardedJob(
    ctx,
    WELCOME_QUEUE_JOB,
    { staleAfterMs: WELCOME_STALE_AFTER_MS },
    async (tally) => {
      const tried: string[] = [];
      for (;;) {
        const limit = Math.min(WELCOME_BATCH, WELCOME_RUN_LIMIT - tried.length);
        if (limit <= 0) break;
        const batch = await ctx.db.tx((sql) => writeBatch(ctx, sql, tried, limit, tally));
        const delivered = await withDelivery(
          ctx,
          batch.written.flatMap((w) => [w.welcome, ...w.admins]),
        );
        let at = 0;
        for (const written of batch.written) {
          const welcome = delivered[at]!;
          const admins = delivered.slice(at + 1, at + 1 + written.admins.length);
          at += 1 + written.admins.length;
          if (!written.welcomed) {
            tally.count("already_welcomed");
            continue;
          }
          tally.changed++;
          tally.list("welcomed", written.userId);
          countNoticeOutcome(tally, welcome);
          tally.count("admin_notices", admins.filter((a) => a.inApp === "created").length);
        }
        if (batch.claimed < limit) break;
      }
      await retryDueEmailsOf(ctx, tally, ["welcome"], WELCOME_RUN_LIMIT);
    },
  );
}

/** One batch: the claimed users' welcomes, written in transaction `sql`. */
async function writeBatch(
  ctx: Context,
  sql: Sql,
  tried: string[],
  limit: number,
  tally: JobTally,
): Promise<{ claimed: number; written: Array<WrittenWelcome & { userId: string }> }> {
  // Rows another run holds are skipped, not waited for; rows that failed
  // earlier in this run are left for the next one.
  const claimed = await sql.query<{ user_id: string }>(
    `select user_id from public.new_user_welcomes
     where status = 'pending' and not (user_id = any($1::uuid[]))
     order by created_at, user_id
     limit $2
     for update skip locked`,
    [tried, limit],
  );
  const written: Array<WrittenWelcome & { userId: string }> = [];
  for (const { user_id: userId } of claimed) {
    tried.push(userId);
    tally.scanned++;
    try {
      const welcome = await inSavepoint(sql, () => writeWelcome(ctx, sql, userId));
      written.push({ userId, ...welcome });
    } catch (error) {
      tally.fail(`new_user_welcomes:${userId}`, error);
      ctx.log.error("cannot write a new user's welcome; the next run tries again", {
        user_id: userId,
        error: String(error),
      });
      await sql.query(
        `update public.new_user_welcomes
         set attempts = attempts + 1, last_error = left($2, 1000),
             status = case when attempts + 1 >= $3 then 'failed' else status end
         where user_id = $1 and status = 'pending'`,
        [userId, error instanceof Error ? error.message : String(error), WELCOME_MAX_ATTEMPTS],
      );
    }
  }
  return { claimed: claimed.length, written };
}
