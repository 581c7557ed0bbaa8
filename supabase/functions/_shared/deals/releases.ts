/**
 * Automatic release: the steps of `deal-deadlines` that pay the seller
 * without an admin, through the same claim-then-transfer path as
 * `release-deal-payout` (`payouts.ts`).
 *
 * - `payout-releases`: a deal in handover whose handover is complete and
 *   whose inspection window has ended (`inspection_ends_at`: lapsed, or the
 *   buyer accepted the delivery) gets its payout, unless a dispute case holds
 *   it (`deal_release_hold()`), a chargeback moved it to `disputed`, or a
 *   refund was claimed.
 * - `holdback-releases`: a deal whose `holdback_release_at` has passed gets
 *   its holdback, under the same holds.
 *
 * A seller whose payout account cannot receive the money (none, payouts
 * disabled, requirements past due) makes the transfer wait
 * ({@linkcode attemptTransfer}): the seller is told once what to finish
 * (deal event `payout_waiting_for_account`), every admin after
 * {@linkcode WAITING_ALERT_DAYS} days (`payout_waiting_alerted`), and each
 * run tries again. The job runs under its guard, every transfer is claimed
 * under the deal's lock with its own idempotency key: however many runs or
 * admin calls overlap, each transfer moves once.
 *
 * @module
 */
import type { Context } from "../platform/context.ts";
import { HttpError } from "../platform/errors.ts";
import type { JobTally } from "../platform/jobs/tally.ts";
import {
  adminPayoutWaitingNotice,
  ESCROW_EMAIL_TYPES,
  PAYOUT_SETTINGS_LINK,
  payoutWaitingNotice,
} from "../email/templates/escrow_release.ts";
import { queueAdminAlert } from "../notifications/admin_alerts.ts";
import { queueNotice } from "../notifications/notify.ts";
import { recordDealEvent } from "./deal_rows.ts";
import { type TransferRequest, transferToSeller } from "./payouts.ts";
import type { TransferKind } from "./settlements.ts";

/** Deals looked at per step and run (the rest wait for the next run). */
export const RELEASE_BATCH = 200;

/** How long a transfer waits for the seller's account before every admin is alerted. */
export const WAITING_ALERT_DAYS = 3;

/** Why a transfer waits for the seller (the 409 reasons of `payouts.ts` about the account). */
const WAITING_REASONS = ["no_payout_account", "payouts_disabled", "requirements_past_due"] as const;
type WaitingReason = (typeof WAITING_REASONS)[number];

/**
 * What one attempt came to: `made` (the transfer went out, or had), `waiting`
 * (for the seller's account), `held` (a 409: a case, a chargeback, a refund,
 * not due yet — the next run looks again).
 */
export type TransferAttempt = "made" | "waiting" | "held";

/**
 * Makes the transfer, and when it waits for the seller's account, tells the
 * seller (once) and the admins (once, after {@linkcode WAITING_ALERT_DAYS}).
 * Other failures (the processor, the database) are thrown.
 */
export async function attemptTransfer(
  ctx: Context,
  request: TransferRequest,
): Promise<TransferAttempt> {
  try {
    await transferToSeller(ctx, request);
    return "made";
  } catch (error) {
    if (!(error instanceof HttpError) || error.status !== 409) throw error;
    const reason = (error.details as { reason?: string } | undefined)?.reason;
    if (WAITING_REASONS.includes(reason as WaitingReason)) {
      await noteWaiting(ctx, request.dealId, request.kind, reason as WaitingReason, error);
      return "waiting";
    }
    ctx.log.info("transfer held", { dealId: request.dealId, kind: request.kind, reason });
    return "held";
  }
}

/** Records that the transfer waits for the seller's account; tells the seller, later the admins. */
async function noteWaiting(
  ctx: Context,
  dealId: string,
  kind: TransferKind,
  reason: WaitingReason,
  error: HttpError,
): Promise<void> {
  const subject = `${kind}:${dealId}`;
  await ctx.db.tx(async (sql) => {
    const deal = await sql.one<{
      seller_id: string;
      title: string;
      currency: string;
      amount: string | null;
      waiting_since: Date | null;
    }>(
      `select d.seller_id, l.title, d.currency,
              public.deal_transfer_amount(d.id, $2)::text as amount,
              (select e.created_at from public.deal_events e
               where e.deal_id = d.id and e.cause = 'payout_waiting_for_account'
                 and e.payproc_object_id = $3) as waiting_since
       from public.deals d join public.listings l on l.id = d.listing_id
       where d.id = $1 for update of d`,
      [dealId, kind, subject],
    );
    const facts = {
      dealId,
      listingTitle: deal.title,
      currency: deal.currency,
      amount: deal.amount ?? "0.00",
    };
    if (deal.waiting_since === null) {
      const disabledReason =
        (error.details as { disabled_reason?: string | null } | undefined)?.disabled_reason ?? null;
      await recordDealEvent(sql, dealId, "payout_waiting_for_account", subject, {
        detail: { kind, reason },
      });
      const notice = payoutWaitingNotice({
        ...facts,
        reason: sellerReason(reason),
        disabledReason,
      });
      await queueNotice(ctx, sql, {
        userId: deal.seller_id,
        type: "payments",
        title: notice.title,
        body: notice.body,
        link: PAYOUT_SETTINGS_LINK,
        data: { dealId, kind, reason },
        key: `payout-waiting:${subject}`,
        email: { emailType: ESCROW_EMAIL_TYPES.payoutWaitingNotice, content: notice.email },
      });
      return;
    }
    const due = deal.waiting_since.getTime() + WAITING_ALERT_DAYS * 86_400_000;
    if (ctx.now().getTime() < due) return;
    if (
      !(await recordDealEvent(sql, dealId, "payout_waiting_alerted", subject, {
        detail: { kind, reason },
      }))
    ) {
      return;
    }
    const alert = adminPayoutWaitingNotice({
      ...facts,
      reason: sellerReason(reason),
      since: deal.waiting_since,
    });
    await queueAdminAlert(ctx, sql, {
      key: `payout-waiting:${subject}`,
      title: alert.title,
      body: alert.body,
      link: `/admin/deals/${dealId}`,
      data: { dealId, kind, reason },
      emailType: ESCROW_EMAIL_TYPES.adminPayoutWaitingNotice,
      email: alert.email,
    });
  });
}

/** A waiting reason as the notices name it. */
function sellerReason(
  reason: WaitingReason,
): "no_account" | "payouts_disabled" | "requirements_past_due" {
  return reason === "no_payout_account" ? "no_account" : reason;
}

/**
 * What makes each automatic transfer due: the deal's date that has passed
 * (`now`: the job's clock), and what else it needs.
 */
const DUE: Record<"payout" | "holdback", { date: string; also: string }> = {
  payout: { date: "inspection_ends_at", also: "d.handover_completed_at is not null" },
  holdback: { date: "holdback_release_at", also: "true" },
};

/**
 * Deals in handover whose `kind` is due now, earliest first: its date
 * passed, not made yet, no refund claimed, nothing holding it
 * (`deal_release_hold()`).
 */
async function dueDeals(
  ctx: Context,
  kind: "payout" | "holdback",
  limit: number,
): Promise<string[]> {
  const { date, also } = DUE[kind];
  const rows = await ctx.db.query<{ id: string }>(
    `select d.id from public.deals d
     where d.status = 'in_handover' and ${also} and d.${date} <= $1
       and not exists (
         select 1 from public.deal_settlements s
         where s.deal_id = d.id
           and ((s.kind = $3 and s.status in ('succeeded', 'reversed'))
                or (s.kind = 'refund' and s.status <> 'failed'))
       )
       and public.deal_release_hold(d.id) is null
     order by d.${date}, d.id
     limit $2`,
    [ctx.now(), limit, kind],
  );
  return rows.map((row) => row.id);
}

/** Runs `kind`'s automatic transfers for `due` deals, counting `<kind>s_<outcome>`. */
async function releaseAll(
  ctx: Context,
  tally: JobTally,
  step: string,
  kind: TransferKind,
  due: string[],
): Promise<void> {
  tally.count(`${kind}s_made`, 0);
  tally.count(`${kind}s_waiting`, 0);
  tally.count(`${kind}s_held`, 0);
  for (const dealId of due) {
    tally.scanned++;
    const outcome = await tally.attempt(
      `${step}:${dealId}`,
      () => attemptTransfer(ctx, { dealId, kind, origin: "automatic", actor: null }),
    );
    if (!outcome) continue;
    if (outcome === "made") {
      tally.changed++;
      tally.list(`${kind}s_made`, dealId);
    } else if (outcome === "waiting") {
      tally.list(`${kind}s_waiting`, dealId);
    } else {
      tally.count(`${kind}s_held`);
    }
  }
}

/** The step `payout-releases` (see the module doc). */
export async function releaseDuePayouts(ctx: Context, tally: JobTally): Promise<void> {
  const due = await dueDeals(ctx, "payout", RELEASE_BATCH);
  await releaseAll(ctx, tally, "payout-releases", "payout", due);
}

/** The step `holdback-releases` (see the module doc). */
export async function releaseDueHoldbacks(ctx: Context, tally: JobTally): Promise<void> {
  const due = await dueDeals(ctx, "holdback", RELEASE_BATCH);
  await releaseAll(ctx, tally, "holdback-releases", "holdback", due);
}
