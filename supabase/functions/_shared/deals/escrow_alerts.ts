/**
 * The escrow alerts sub-job of the daily run: the processor holds a charge's
 * funds for a limited time (90 days for manual payouts), so every deal
 * funded more than `ESCROW_ALERT_DAYS` ago (default 75) whose money is
 * still in escrow — funded or in handover, not paid out or refunded, or
 * paid out with a letter of intent's holdback still held — is flagged to
 * every admin, once per deal, with the days left and the amount still held
 * (`public.deal_held_amount()`).
 *
 * @module
 */
import type { Context } from "../platform/context.ts";
import type { Sql } from "../platform/db.ts";
import { adminEscrowHoldNotice } from "../email/templates/deal_alerts.ts";
import { type JobSkipped, runGuardedJob } from "../platform/jobs/guard.ts";
import type { JobOutput } from "../platform/jobs/runs.ts";
import { queueAdminAlert } from "../notifications/admin_alerts.ts";
import { countNoticeOutcome } from "../notifications/counts.ts";
import { type NoticeOutcome, withDelivery } from "../notifications/notify.ts";
import { recordDealEvent } from "./deal_rows.ts";

/** The job name in `job_runs`. */
export const ESCROW_ALERTS_JOB = "escrow-alerts";

/** How long the processor holds a charge's funds for a payout (manual payouts). */
export const PROCESSOR_HOLD_DAYS = 90;

const DAY_MS = 86_400_000;

interface HeldDeal {
  id: string;
  status: string;
  amount: string;
  currency: string;
  funded_at: Date;
  /** The charge whose funds are held (the deal's id in the unlikely case it has none). */
  held_object: string;
  listing_title: string;
}

/**
 * Flags every deal held in escrow longer than `ESCROW_ALERT_DAYS`, as of the
 * runtime's clock. "Once per deal" is the deal event `escrow_hold_flagged`
 * (one per deal and charge), written with the alerts in one transaction.
 */
export function runEscrowAlerts(ctx: Context): Promise<JobOutput | JobSkipped> {
  return runGuardedJob(ctx, ESCROW_ALERTS_JOB, {}, async (tally) => {
    const now = ctx.now();
    const alertDays = ctx.env.values.ESCROW_ALERT_DAYS;
    const held = await ctx.db.query<HeldDeal>(
      `select d.id, d.status, h.held::text as amount, d.currency,
              d.funded_at, coalesce(d.payproc_charge_id, d.id::text) as held_object,
              l.title as listing_title
       from public.deals d join public.listings l on l.id = d.listing_id
         cross join lateral (select public.deal_held_amount(d.id) as held) h
       where d.status in ('funded', 'in_handover')
         and d.funded_at <= $1::timestamptz - make_interval(days => $2)
         and h.held > 0
         and not exists (
           select 1 from public.deal_events e
           where e.deal_id = d.id and e.cause = 'escrow_hold_flagged'
         )
       order by d.funded_at, d.id`,
      [now, alertDays],
    );
    const notices: NoticeOutcome[] = [];
    for (const deal of held) {
      tally.scanned += 1;
      const outcomes = await tally.attempt(deal.id, () => ctx.db.tx((sql) => flag(sql, deal)));
      if (!outcomes) continue;
      tally.list("flagged", deal.id);
      tally.changed += 1;
      notices.push(...outcomes);
    }
    for (const outcome of await withDelivery(ctx, notices)) countNoticeOutcome(tally, outcome);

    async function flag(sql: Sql, deal: HeldDeal): Promise<NoticeOutcome[]> {
      const daysHeld = Math.floor((now.getTime() - deal.funded_at.getTime()) / DAY_MS);
      const daysLeft = Math.max(0, PROCESSOR_HOLD_DAYS - daysHeld);
      const recorded = await recordDealEvent(
        sql,
        deal.id,
        "escrow_hold_flagged",
        deal.held_object,
        {
          detail: { days_held: daysHeld, days_left: daysLeft },
        },
      );
      if (!recorded) return [];
      const notice = adminEscrowHoldNotice({
        dealId: deal.id,
        listingTitle: deal.listing_title,
        amount: deal.amount,
        currency: deal.currency,
        status: deal.status,
        fundedAt: deal.funded_at,
        daysHeld,
        daysLeft,
        holdDays: PROCESSOR_HOLD_DAYS,
      });
      return await queueAdminAlert(ctx, sql, {
        key: `escrow-hold:${deal.id}`,
        title: notice.title,
        body: notice.body,
        link: `/admin/deals/${deal.id}`,
        data: { dealId: deal.id, daysHeld, daysLeft },
        emailType: "admin_escrow_hold",
        email: notice.email,
      });
    }
  });
}
