/**
 * The notice queue's drain (`send-queued-notices`, every minute): the
 * notices that changes made in SQL owe users (`public.notice_queue`, filled
 * by the RPCs in the transaction of each change; the state machine is in
 * `supabase/migrations/*_notice_queue.sql`), written once each.
 *
 * A run claims due pending rows (`for update skip locked`, oldest due first,
 * {@linkcode NOTICE_BATCH} per transaction, at most
 * {@linkcode NOTICE_RUN_LIMIT} per run) and asks each row's kind what to do
 * with it, reading its subject as it is now ({@linkcode NoticeBuilder}):
 *
 * - write a notice: through {@linkcode queueNotice} (preferences honoured,
 *   idempotent per key), and the row becomes `sent`;
 * - drop it: nothing is left to tell (`dropped`, with the reason);
 * - later: not due yet (`due_at` moves; the row stays `pending`).
 *
 * Each row is one savepoint, and the batch's e-mails go out after its
 * commit; each run then makes the due attempt at the queue's e-mails an
 * earlier run wrote but did not deliver (it died, or the provider failed
 * and the backoff has passed: `emails_retried`, `emails_retry_failed`). A row
 * whose notice cannot be written is a failed item (the run answers 500
 * `partial_failure`) and stays pending for the next run, up to
 * {@linkcode NOTICE_MAX_ATTEMPTS} attempts. Two runs at once never take the
 * same row (the claim, and the job guard).
 *
 * @module
 */
import {
  NOTICE_ADMIN_EMAIL_TYPES,
  NOTICE_EMAIL_TYPES,
  type NoticeKind,
} from "../../../../shared/notice_kinds.ts";
import { retryDueEmailsOf } from "../email/retry.ts";
import type { Context } from "../platform/context.ts";
import { inSavepoint, type Sql } from "../platform/db.ts";
import { type JobSkipped, runGuardedJob } from "../platform/jobs/guard.ts";
import type { JobOutput } from "../platform/jobs/runs.ts";
import type { JobTally } from "../platform/jobs/tally.ts";
import { countNoticeOutcome } from "./counts.ts";
import { type Notice, type NoticeOutcome, queueNotice, withDelivery } from "./notify.ts";

/** The job name in `job_runs` (the function the schedule starts). */
export const NOTICE_QUEUE_JOB = "send-queued-notices";

/** Rows claimed per transaction. */
export const NOTICE_BATCH = 50;

/** Rows one run handles at most (a burst drains over a few runs). */
export const NOTICE_RUN_LIMIT = 1000;

/** Failed attempts after which a row is `failed` (an operator resets it). */
export const NOTICE_MAX_ATTEMPTS = 5;

/**
 * After this long an unfinished run is taken over (as the welcome queue's:
 * longer than a hosted function may run, short enough that a killed run
 * delays notices by minutes).
 */
export const NOTICE_STALE_AFTER_MS = 3 * 60_000;

/** The e-mail types the queue writes, the parties' and the admins' (retried by its runs). */
const NOTICE_EMAIL_TYPE_NAMES = [
  ...new Set([...Object.values(NOTICE_EMAIL_TYPES), ...Object.values(NOTICE_ADMIN_EMAIL_TYPES)]),
];

/** A claimed row of `notice_queue`. */
export interface QueuedNotice {
  id: string;
  kind: NoticeKind;
  userId: string;
  subjectId: string;
  dueAt: Date;
  createdAt: Date;
}

/** What to do with a claimed row. */
export type NoticeDecision =
  | { action: "notice"; notice: Notice }
  | { action: "drop"; reason: string }
  | { action: "later"; dueAt: Date };

/**
 * Decides what to do with `row`, reading its subject in transaction `sql`
 * (which holds the row); may take further locks in the documented order.
 */
export type NoticeBuilder = (ctx: Context, sql: Sql, row: QueuedNotice) => Promise<NoticeDecision>;

/** A builder for every kind (the function that drains the queue assembles it). */
export type NoticeBuilders = Readonly<Record<NoticeKind, NoticeBuilder>>;

/** What one row came to. */
interface Handled {
  row: QueuedNotice;
  decision: NoticeDecision["action"];
  outcome: NoticeOutcome | null;
}

/**
 * Drains the queue under the job guard with `builders`. Counts `sent`
 * (listed by kind in `items.<kind>`), `dropped`, `later`, and the notice
 * counts of `notifications/counts.ts`.
 */
export function runNoticeQueue(
  ctx: Context,
  builders: NoticeBuilders,
): Promise<JobOutput | JobSkipped> {
  return runGuardedJob(
    ctx,
    NOTICE_QUEUE_JOB,
    { staleAfterMs: NOTICE_STALE_AFTER_MS },
    async (tally) => {
      const tried: string[] = [];
      for (;;) {
        const limit = Math.min(NOTICE_BATCH, NOTICE_RUN_LIMIT - tried.length);
        if (limit <= 0) break;
        const batch = await ctx.db.tx((sql) =>
          handleBatch(ctx, sql, builders, tried, limit, tally)
        );
        const written = batch.handled.filter((h) => h.outcome !== null);
        const delivered = await withDelivery(ctx, written.map((h) => h.outcome!));
        for (const outcome of delivered) countNoticeOutcome(tally, outcome);
        for (const handled of batch.handled) {
          if (handled.decision === "notice") {
            tally.changed++;
            tally.list(handled.row.kind, handled.row.id);
          } else {
            tally.count(handled.decision === "drop" ? "dropped" : "later");
          }
        }
        if (batch.claimed < limit) break;
      }
      await retryDueEmailsOf(ctx, tally, NOTICE_EMAIL_TYPE_NAMES, NOTICE_RUN_LIMIT);
    },
  );
}

/** One batch: the claimed rows, handled in transaction `sql`. */
async function handleBatch(
  ctx: Context,
  sql: Sql,
  builders: NoticeBuilders,
  tried: string[],
  limit: number,
  tally: JobTally,
): Promise<{ claimed: number; handled: Handled[] }> {
  // Rows another run holds are skipped, not waited for; rows tried earlier
  // in this run (failed, or moved later) are left for the next one.
  const claimed = await sql.query<{
    id: string;
    kind: NoticeKind;
    user_id: string;
    subject_id: string;
    due_at: Date;
    created_at: Date;
  }>(
    `select id, kind, user_id, subject_id, due_at, created_at
     from public.notice_queue
     where status = 'pending' and due_at <= now() and not (id = any($1::uuid[]))
     order by due_at, id
     limit $2
     for update skip locked`,
    [tried, limit],
  );
  const handled: Handled[] = [];
  for (const claim of claimed) {
    const row: QueuedNotice = {
      id: claim.id,
      kind: claim.kind,
      userId: claim.user_id,
      subjectId: claim.subject_id,
      dueAt: claim.due_at,
      createdAt: claim.created_at,
    };
    tried.push(row.id);
    tally.scanned++;
    try {
      handled.push(await inSavepoint(sql, () => handleRow(ctx, sql, builders[row.kind], row)));
    } catch (error) {
      tally.fail(`notice_queue:${row.id}`, error);
      ctx.log.error("cannot write a queued notice; the next run tries again", {
        notice_id: row.id,
        kind: row.kind,
        error: String(error),
      });
      await sql.query(
        `update public.notice_queue
         set attempts = attempts + 1, last_error = left($2, 1000),
             status = case when attempts + 1 >= $3 then 'failed' else status end,
             done_at = case when attempts + 1 >= $3 then now() end
         where id = $1 and status = 'pending'`,
        [row.id, error instanceof Error ? error.message : String(error), NOTICE_MAX_ATTEMPTS],
      );
    }
  }
  return { claimed: claimed.length, handled };
}

/** One row: its builder's decision, carried out in `sql`. */
async function handleRow(
  ctx: Context,
  sql: Sql,
  builder: NoticeBuilder,
  row: QueuedNotice,
): Promise<Handled> {
  const decision = await builder(ctx, sql, row);
  if (decision.action === "later") {
    await sql.query("update public.notice_queue set due_at = $2 where id = $1", [
      row.id,
      decision.dueAt,
    ]);
    return { row, decision: "later", outcome: null };
  }
  if (decision.action === "drop") {
    await sql.query(
      `update public.notice_queue
       set status = 'dropped', outcome = left($2, 200), done_at = clock_timestamp()
       where id = $1`,
      [row.id, decision.reason],
    );
    return { row, decision: "drop", outcome: null };
  }
  const outcome = await queueNotice(ctx, sql, decision.notice);
  // The clock, not the transaction's start: a builder that holds its
  // subject's lock reads everything committed before this stamp (the
  // conversation e-mail cadence counts from it).
  await sql.query(
    `update public.notice_queue
     set status = 'sent', outcome = left($2, 200), done_at = clock_timestamp()
     where id = $1`,
    [row.id, outcomeOf(outcome)],
  );
  return { row, decision: "notice", outcome };
}

/** What a written notice did, as `notice_queue.outcome` says it ("in-app created; e-mail queued"). */
function outcomeOf(outcome: NoticeOutcome): string {
  const email = outcome.email === null
    ? "none (no address)"
    : outcome.email.status === "pending"
    ? "queued"
    : outcome.email.status;
  return `in-app ${outcome.inApp}; e-mail ${email}`;
}
