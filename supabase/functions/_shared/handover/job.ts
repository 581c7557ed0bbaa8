/**
 * The guarded job `apa-auto-handover` (scheduled hourly): drives every
 * deal's handover, as of the runtime's clock (`ctx.now()`, injectable).
 * Each run, in order:
 *
 * 1. Uploads: pending uploads whose object exists are confirmed; those whose
 *    signed URL lapsed unused are expired.
 * 2. Start: a funded deal whose agreement (generated once it was funded)
 *    exists moves to `in_handover`.
 * 3. Inspection: in a deal whose steps are all delivered or confirmed, the
 *    delivered ones the buyer neither confirmed nor disputed within the
 *    deal's agreed `inspection_days` (`HANDOVER_INSPECTION_DAYS` for a deal
 *    without terms) of the last delivery are confirmed, with
 *    `confirmation = inspection_lapsed`.
 * 4. Completion: a deal in handover whose every step is confirmed is stamped
 *    complete (`handover_completed_at`, `handover_completion`) and its
 *    inspection window starts (`inspection_ends_at`: the payout is released
 *    by `deal-deadlines` when it ends without a dispute case); the buyer and
 *    the seller are told, in the same transaction. (Admins are not: the
 *    release needs none of them.)
 * 5. Reminders: the party who is late by a day (see `due.ts`) is reminded,
 *    at most once per day of lateness (notice key
 *    `handover-reminder:<deal>:<role>:<day>`).
 *
 * Every change re-checks its deal under the deal's row lock in its own
 * transaction (participants' step changes hold a share lock on it), so a
 * rerun, or a dispute arriving meanwhile, changes nothing twice. A deal
 * that fails is a failed item (500 `partial_failure`); the others go on.
 *
 * @module
 */
import type { Context } from "../platform/context.ts";
import { inSavepoint, type Sql } from "../platform/db.ts";
import { transitionDeal } from "../deals/deal_rows.ts";
import {
  buyerReminderNotice,
  type CompletedHandover,
  handoverCompleteSellerNotice,
  handoverLink,
  type HandoverNotice,
  sellerReminderNotice,
} from "../email/templates/handover.ts";
import { ESCROW_EMAIL_TYPES, inspectionStartedNotice } from "../email/templates/escrow_release.ts";
import { type JobSkipped, runGuardedJob } from "../platform/jobs/guard.ts";
import type { JobOutput } from "../platform/jobs/runs.ts";
import type { JobTally } from "../platform/jobs/tally.ts";
import { countNoticeOutcome } from "../notifications/counts.ts";
import {
  type Notice,
  type NoticeOutcome,
  queueNotice,
  wasNotified,
  withDelivery,
} from "../notifications/notify.ts";
import {
  dealsFullyConfirmed,
  dealsToStart,
  dealsWithLapsedInspection,
  lateParties,
  type LateParty,
  REMINDER_AFTER_MS,
} from "./due.ts";

/** The job name in `job_runs` and `job_schedules`. */
export const HANDOVER_JOB = "apa-auto-handover";

/** Runs the handover job under the guard; see the module doc. */
export function runApaAutoHandover(ctx: Context): Promise<JobOutput | JobSkipped> {
  return runGuardedJob(ctx, HANDOVER_JOB, {}, async (tally) => {
    const now = ctx.now();
    const days = ctx.env.values.HANDOVER_INSPECTION_DAYS;
    await settleUploads(ctx, now, tally);
    await startHandovers(ctx, tally);
    await confirmLapsedInspections(ctx, now, days, tally);
    await completeHandovers(ctx, now, days, tally);
    await remindLateParties(ctx, now, days, tally);
  });
}

/** Phase 1: confirms stored uploads and expires lapsed ones. */
async function settleUploads(ctx: Context, now: Date, tally: JobTally): Promise<void> {
  const confirmed = await ctx.db.one<{ n: number }>(
    "select count(*)::int as n from public.confirm_deal_documents(null)",
  );
  const expired = await ctx.db.one<{ n: number }>(
    "select count(*)::int as n from public.expire_deal_uploads($1)",
    [now],
  );
  tally.count("uploads_confirmed", confirmed.n);
  tally.count("uploads_expired", expired.n);
}

/** Locks deal `dealId` for this job's change (inside `sql`'s transaction). */
async function lockDeal(sql: Sql, dealId: string): Promise<void> {
  await sql.query("select 1 from public.deals where id = $1 for update", [dealId]);
}

/**
 * Runs `change` for each deal in its own transaction after locking it;
 * `change` answers whether it did anything (false: no longer due). Changed
 * deals are listed under `name`.
 */
async function eachDeal(
  ctx: Context,
  tally: JobTally,
  name: string,
  dealIds: string[],
  change: (sql: Sql, dealId: string) => Promise<boolean>,
): Promise<void> {
  for (const dealId of dealIds) {
    tally.scanned++;
    const changed = await tally.attempt(`${name}:${dealId}`, () =>
      ctx.db.tx(async (sql) => {
        await lockDeal(sql, dealId);
        return await change(sql, dealId);
      }));
    if (changed === true) {
      tally.changed++;
      tally.list(name, dealId);
    } else if (changed === false) {
      tally.count("no_longer_due");
    }
  }
}

/** Phase 2: funded deals with an agreement move into the handover. */
async function startHandovers(ctx: Context, tally: JobTally): Promise<void> {
  await eachDeal(ctx, tally, "handover_started", await dealsToStart(ctx.db), async (sql, id) => {
    if ((await dealsToStart(sql, id)).length === 0) return false;
    await transitionDeal(sql, id, "in_handover", "handover_started");
    return true;
  });
}

/** Phase 3: deliveries left unanswered past the inspection window are confirmed. */
async function confirmLapsedInspections(
  ctx: Context,
  now: Date,
  days: number,
  tally: JobTally,
): Promise<void> {
  const due = await dealsWithLapsedInspection(ctx.db, now, days);
  await eachDeal(ctx, tally, "inspection_lapsed", due, async (sql, id) => {
    if ((await dealsWithLapsedInspection(sql, now, days, id)).length === 0) return false;
    const steps = await sql.query(
      `update public.deal_handover_steps
       set status = 'confirmed', confirmed_at = $2, confirmation = 'inspection_lapsed'
       where deal_id = $1 and status = 'delivered'
       returning id`,
      [id, now],
    );
    tally.count("steps_auto_confirmed", steps.length);
    return true;
  });
}

/**
 * Phase 4: fully confirmed handovers are stamped complete, and the buyer's
 * inspection window starts (`inspection_ends_at` = completion + the agreed
 * `inspection_days`, else `days`); the buyer and the seller are told.
 */
async function completeHandovers(
  ctx: Context,
  now: Date,
  days: number,
  tally: JobTally,
): Promise<void> {
  const written: NoticeOutcome[] = [];
  const due = await dealsFullyConfirmed(ctx.db);
  await eachDeal(ctx, tally, "ready_for_payout", due, async (sql, id) => {
    if ((await dealsFullyConfirmed(sql, id)).length === 0) return false;
    const deal = await sql.one<
      CompletedHandover & {
        sellerId: string;
        buyerId: string;
        holdbackAmount: string | null;
        holdbackDays: number;
      }
    >(
      `update public.deals d set
         handover_completed_at = $2,
         handover_completion = case when exists (
           select 1 from public.deal_handover_steps s
           where s.deal_id = d.id and s.confirmation = 'inspection_lapsed'
         ) then 'inspection_lapsed' else 'buyer_confirmed' end,
         inspection_ends_at = $2::timestamptz
           + make_interval(days => coalesce((d.terms ->> 'inspection_days')::integer, $3))
       from public.listings l
       where d.id = $1 and l.id = d.listing_id
       returning d.id, l.title as "listingTitle", d.seller_id as "sellerId",
         d.buyer_id as "buyerId", d.currency,
         public.deal_transfer_amount(d.id, 'payout')::text as "sellerNet",
         d.handover_completion as completion,
         d.inspection_ends_at as "inspectionEndsAt",
         public.deal_transfer_amount(d.id, 'holdback')::text as "holdbackAmount",
         coalesce((d.terms ->> 'holdback_days')::integer, 0) as "holdbackDays"`,
      [id, now, days],
    );
    const key = `handover-complete:${id}`;
    const started = inspectionStartedNotice({
      dealId: id,
      listingTitle: deal.listingTitle,
      currency: deal.currency,
      inspectionEndsAt: deal.inspectionEndsAt,
      payoutAmount: deal.sellerNet,
      holdbackAmount: deal.holdbackAmount,
      holdbackDays: deal.holdbackDays,
    });
    written.push(
      await queueNotice(ctx, sql, {
        userId: deal.buyerId,
        type: "handover",
        title: started.title,
        body: started.body,
        link: handoverLink(id),
        data: { dealId: id, kind: "inspection_started", inspectionEndsAt: deal.inspectionEndsAt },
        key: `inspection-started:${id}`,
        email: { emailType: ESCROW_EMAIL_TYPES.inspectionStartedNotice, content: started.email },
      }),
    );
    written.push(
      await queueNotice(
        ctx,
        sql,
        notice(deal.sellerId, handoverCompleteSellerNotice(deal), {
          key,
          emailType: "handover_complete",
          data: { dealId: id, kind: "handover_complete", completion: deal.completion },
        }),
      ),
    );
    return true;
  });
  for (const outcome of await withDelivery(ctx, written)) countNoticeOutcome(tally, outcome);
}

/** Phase 5: the party who is late is reminded once per day of lateness. */
async function remindLateParties(
  ctx: Context,
  now: Date,
  days: number,
  tally: JobTally,
): Promise<void> {
  const late = await lateParties(ctx.db, now);
  if (late.length === 0) return;
  const written = await ctx.db.tx(async (sql) => {
    const out: NoticeOutcome[] = [];
    for (const party of late) {
      const outcome = await tally.attempt(
        `reminder:${party.dealId}`,
        () => inSavepoint(sql, () => remind(ctx, sql, party, now, days)),
      );
      if (outcome) {
        out.push(outcome);
        tally.count(`reminders_${party.role}`);
      } else if (outcome === null) {
        tally.count("reminders_already_sent");
      }
    }
    return out;
  });
  for (const outcome of await withDelivery(ctx, written)) countNoticeOutcome(tally, outcome);
}

/** Reminds `party` unless this day of lateness's reminder was written; null when it was. */
async function remind(
  ctx: Context,
  sql: Sql,
  party: LateParty,
  now: Date,
  days: number,
): Promise<NoticeOutcome | null> {
  const day = Math.floor((now.getTime() - party.since.getTime()) / REMINDER_AFTER_MS);
  const key = `handover-reminder:${party.dealId}:${party.role}:${day}`;
  if (await wasNotified(sql, party.userId, key)) return null;
  const content = party.role === "seller"
    ? sellerReminderNotice({
      id: party.dealId,
      listingTitle: party.listingTitle,
      openSteps: party.steps,
    })
    : buyerReminderNotice({
      id: party.dealId,
      listingTitle: party.listingTitle,
      delivered: party.steps.length,
      deadline: new Date(party.lastDeliveredAt!.getTime() + days * 24 * 60 * 60 * 1000),
    });
  return await queueNotice(
    ctx,
    sql,
    notice(party.userId, content, {
      key,
      emailType: "handover_reminder",
      data: { dealId: party.dealId, kind: "reminder", role: party.role, day },
    }),
  );
}

/** The notice of `content` to `userId`, in-app and by e-mail as their `handover` preference allows. */
function notice(
  userId: string,
  content: HandoverNotice,
  options: {
    key: string;
    emailType: "handover_reminder" | "handover_complete";
    data: Record<string, unknown>;
  },
): Notice {
  return {
    userId,
    type: "handover",
    title: content.title,
    body: content.body,
    link: handoverLink(String(options.data.dealId)),
    data: options.data,
    key: options.key,
    email: { emailType: options.emailType, content: content.email },
  };
}
