/**
 * Dispute cases (`public.deal_cases`; the state machine and the money plan
 * are in the escrow release migration): their deadlines as steps of
 * `deal-deadlines`, and the money of a resolved case's outcome — moved by
 * `resolve-deal-case` at once, and by the job for a case the parties
 * settled (an RPC cannot call the processor) or whose money could not all
 * move yet.
 *
 * - `case-escalations`: an open case past `negotiate_until` is escalated
 *   (`public.escalate_deal_case()` on the service connection: both sides and
 *   every admin told), one case per transaction.
 * - `case-outcomes`: a resolved case whose money has not moved
 *   (`money_moved_at` null) moves it ({@linkcode carryOutCase}).
 *
 * Every movement is a settlement with its own idempotency key, claimed
 * under the deal's lock (`payouts.ts`, `partial_refunds.ts`, `refunds.ts`),
 * so a case carried out by the function and the job at once moves each
 * amount once; `money_moved_at` is stamped when all of it has.
 *
 * @module
 */
import type { Context } from "../platform/context.ts";
import type { Sql } from "../platform/db.ts";
import type { JobTally } from "../platform/jobs/tally.ts";
import type { DealCaseOutcome } from "../../../../shared/deal_schemas.ts";
import { findDeal, transitionDeal } from "./deal_rows.ts";
import { refundPart } from "./partial_refunds.ts";
import { refundDeal } from "./refunds.ts";
import { attemptTransfer, type TransferAttempt } from "./releases.ts";

/** Cases looked at per step and run. */
export const CASE_BATCH = 200;

/** A `public.deal_cases` row as the money code reads it. */
export interface DealCaseRow {
  id: string;
  deal_id: string;
  status: "open" | "escalated" | "resolved";
  reason: string;
  opened_by_side: "buyer" | "seller";
  negotiate_until: Date;
  escalated_at: Date | null;
  outcome: DealCaseOutcome | null;
  refund_amount: string | null;
  phase: "escrow" | "holdback" | null;
  resolution: "settled" | "admin" | "deal_refunded" | "deal_completed" | null;
  resolved_at: Date | null;
  money_moved_at: Date | null;
}

/** The columns of {@linkcode DealCaseRow}, for a `from public.deal_cases c`. */
export const CASE_COLUMNS = `c.id, c.deal_id, c.status, c.reason, c.opened_by_side,
  c.negotiate_until, c.escalated_at, c.outcome, c.refund_amount::text as refund_amount, c.phase,
  c.resolution, c.resolved_at, c.money_moved_at`;

/** The case, or null. */
export function findCase(sql: Sql, caseId: string): Promise<DealCaseRow | null> {
  return sql.maybeOne<DealCaseRow>(
    `select ${CASE_COLUMNS} from public.deal_cases c where c.id = $1`,
    [caseId],
  );
}

/**
 * Moves the money of resolved case `caseId`'s outcome, each amount once
 * (the table in the migration header), and stamps `money_moved_at` when all
 * of it moved. Answers `made` then (or when nothing was left), `waiting`
 * when the seller's payout account holds the transfer, `held` when a 409
 * stops it for now. Processor and database failures are thrown; the job
 * tries again.
 */
export async function carryOutCase(
  ctx: Context,
  caseId: string,
  actor: string | null,
): Promise<TransferAttempt> {
  const found = await findCase(ctx.db, caseId);
  if (!found || found.status !== "resolved" || found.money_moved_at) return "made";
  const dealId = found.deal_id;
  const outcome = found.outcome!;
  if (outcome === "refund" && found.phase === "escrow") {
    await refundDeal(ctx, {
      dealId,
      reason: `Dispute case ${caseId}: refund`,
      reverseTransfer: false,
      actor,
    }).catch((error) => rethrowUnlessRefunded(ctx, dealId, error));
  } else if (outcome !== "release") {
    const amount = outcome === "partial_refund"
      ? found.refund_amount!
      : (await ctx.db.one<{ amount: string }>(
        "select public.deal_holdback_gross(d)::text as amount from public.deals d where d.id = $1",
        [dealId],
      )).amount;
    await refundPart(ctx, dealId, caseId, amount, actor);
    const rest = outcome === "partial_refund"
      ? await attemptTransfer(ctx, {
        dealId,
        kind: found.phase === "escrow" ? "payout" : "holdback",
        origin: "case",
        actor,
      })
      : "made";
    if (rest !== "made") return rest;
  }
  await ctx.db.tx(async (sql) => {
    const deal = (await findDeal(sql, dealId, { lock: true }))!;
    // The holdback refunded after the payout: the seller has all they get.
    if (outcome === "refund" && found.phase === "holdback" && deal.status === "in_handover") {
      await transitionDeal(sql, dealId, "completed", "case_resolved", {
        payprocObject: caseId,
        detail: { case: caseId, outcome },
      });
    }
    await sql.query(
      "update public.deal_cases set money_moved_at = now() where id = $1 and money_moved_at is null",
      [caseId],
    );
  });
  return "made";
}

/** A full refund already made (by this case, or the webhook) is the outcome's money moved. */
async function rethrowUnlessRefunded(ctx: Context, dealId: string, error: unknown): Promise<void> {
  const deal = await findDeal(ctx.db, dealId);
  if (deal?.status === "refunded") return;
  throw error;
}

/** The step `case-escalations` (see the module doc): counts `cases_escalated`. */
export async function escalateDueCases(ctx: Context, tally: JobTally): Promise<void> {
  tally.count("cases_escalated", 0);
  const due = await ctx.db.query<{ id: string }>(
    `select c.id from public.deal_cases c
     where c.status = 'open' and c.negotiate_until <= now()
     order by c.negotiate_until, c.id
     limit $1`,
    [CASE_BATCH],
  );
  for (const { id } of due) {
    tally.scanned++;
    const escalated = await tally.attempt(`case-escalations:${id}`, () =>
      ctx.db.tx(async (sql) => {
        const row = await sql.one<{ escalated: boolean }>(
          `select (c.status = 'escalated' and c.escalated_by = 'deadline') as escalated
           from public.escalate_deal_case($1) c`,
          [id],
        );
        return row.escalated;
      }));
    if (escalated) {
      tally.changed++;
      tally.list("cases_escalated", id);
    }
  }
}

/** The step `case-outcomes` (see the module doc): counts `case_money_moved`, `case_money_waiting`, `case_money_held`. */
export async function carryOutDueCases(ctx: Context, tally: JobTally): Promise<void> {
  tally.count("case_money_moved", 0);
  const due = await ctx.db.query<{ id: string }>(
    `select c.id from public.deal_cases c
     where c.status = 'resolved' and c.money_moved_at is null
     order by c.resolved_at, c.id
     limit $1`,
    [CASE_BATCH],
  );
  for (const { id } of due) {
    tally.scanned++;
    const outcome = await tally.attempt(`case-outcomes:${id}`, () => carryOutCase(ctx, id, null));
    if (outcome === "made") {
      tally.changed++;
      tally.list("case_money_moved", id);
    } else if (outcome === "waiting") {
      tally.list("case_money_waiting", id);
    } else if (outcome === "held") {
      tally.count("case_money_held");
    }
  }
}
