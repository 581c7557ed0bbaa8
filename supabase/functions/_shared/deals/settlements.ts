/**
 * A deal's settlements — the payout, the holdback and a repayout to the
 * seller, the refund and a partial refund to the buyer
 * (`public.deal_settlements`, state machine in its migration, the kinds in
 * the escrow release migration): one column list, their report shape, and
 * the idempotency key of an attempt.
 *
 * @module
 */
import type { z } from "zod";
import type { DealStatus, Settlement } from "../../../../shared/deal_schemas.ts";
import type { Sql } from "../platform/db.ts";

/** What a settlement moves: a transfer to the seller, or money back to the buyer. */
export type SettlementKind = TransferKind | "refund" | "partial_refund";

/** The transfers to the seller: at release, the holdback later, a payout paid again. */
export type TransferKind = "payout" | "holdback" | "repayout";

/** A `public.deal_settlements` row. */
export interface SettlementRow {
  id: string;
  deal_id: string;
  kind: SettlementKind;
  status: "pending" | "succeeded" | "failed" | "reversed";
  amount: string;
  currency: string;
  attempt: number;
  destination_account: string | null;
  payproc_id: string | null;
  payproc_reversal_id: string | null;
  reason: string | null;
  last_error: string | null;
  updated_at: Date;
}

/** The columns of {@linkcode SettlementRow}, for a `from public.deal_settlements s`. */
export const SETTLEMENT_COLUMNS = `s.id, s.deal_id, s.kind, s.status, s.amount::text as amount,
  s.currency, s.attempt, s.destination_account, s.payproc_id, s.payproc_reversal_id, s.reason,
  s.last_error, s.updated_at`;

/** A deal's settlements of each kind, when they exist. */
export interface DealSettlements {
  payout: SettlementRow | null;
  refund: SettlementRow | null;
  holdback: SettlementRow | null;
  partial_refund: SettlementRow | null;
  repayout: SettlementRow | null;
}

/** The deal's settlements (`lock` locks them, inside a transaction). */
export async function settlementsOf(
  sql: Sql,
  dealId: string,
  options: { lock?: boolean } = {},
): Promise<DealSettlements> {
  const rows = await sql.query<SettlementRow>(
    `select ${SETTLEMENT_COLUMNS} from public.deal_settlements s where s.deal_id = $1${
      options.lock ? " for update" : ""
    }`,
    [dealId],
  );
  const of = (kind: SettlementKind) => rows.find((row) => row.kind === kind) ?? null;
  return {
    payout: of("payout"),
    refund: of("refund"),
    holdback: of("holdback"),
    partial_refund: of("partial_refund"),
    repayout: of("repayout"),
  };
}

/** How a settlement is reported to clients. */
export function settlementReport(row: SettlementRow | null): z.input<typeof Settlement> | null {
  if (!row) return null;
  return {
    status: row.status,
    amount: row.amount,
    payprocId: row.payproc_id,
    reversalId: row.payproc_reversal_id,
    error: row.last_error,
    updatedAt: row.updated_at.toISOString(),
  };
}

/**
 * The processor idempotency key of the row's current attempt: `payout:<deal>`
 * (`refund:<deal>`) first, with `:<attempt>` after a refusal — a refused
 * attempt moved no money, so a new key cannot move it twice.
 */
export function settlementKey(row: Pick<SettlementRow, "kind" | "deal_id" | "attempt">): string {
  const base = `${row.kind}:${row.deal_id}`;
  return row.attempt === 1 ? base : `${base}:${row.attempt}`;
}

/** A settlement as reported, or null. */
type Reported = z.input<typeof Settlement> | null;

/** What release-deal-payout, refund-deal-payment and resolve-deal-case answer: the deal's state and its settlements. */
export interface SettlementAnswer {
  dealId: string;
  status: DealStatus;
  payout: Reported;
  refund: Reported;
  holdback: Reported;
  partialRefund: Reported;
  repayout: Reported;
}

/** The deal's current state and settlements, as answered to admins. */
export async function settlementAnswer(sql: Sql, dealId: string): Promise<SettlementAnswer> {
  const deal = await sql.one<{ status: DealStatus }>(
    "select status from public.deals where id = $1",
    [dealId],
  );
  const rows = await settlementsOf(sql, dealId);
  return {
    dealId,
    status: deal.status,
    payout: settlementReport(rows.payout),
    refund: settlementReport(rows.refund),
    holdback: settlementReport(rows.holdback),
    partialRefund: settlementReport(rows.partial_refund),
    repayout: settlementReport(rows.repayout),
  };
}

/**
 * Records that the processor refused attempt `row.attempt` (no money moved):
 * the row becomes `failed` with the reason, unless it moved on meanwhile.
 */
export async function recordRefusal(sql: Sql, row: SettlementRow, reason: string): Promise<void> {
  await sql.query(
    `update public.deal_settlements set status = 'failed', last_error = $3
     where id = $1 and status = 'pending' and attempt = $2`,
    [row.id, row.attempt, reason.slice(0, 1000)],
  );
}

/**
 * Why no transfer to the seller of deal `dealId` may start now, as
 * `public.deal_release_hold()` says: `case_open` (a dispute case is open or
 * escalated), `case_settling` (a resolved case still moves its refund), or
 * null.
 */
export async function releaseHoldOf(
  sql: Sql,
  dealId: string,
): Promise<"case_open" | "case_settling" | null> {
  const row = await sql.one<{ hold: "case_open" | "case_settling" | null }>(
    "select public.deal_release_hold($1) as hold",
    [dealId],
  );
  return row.hold;
}

/** Whether deal `dealId` still owes the seller a holdback (`public.deal_transfer_amount()`). */
export async function holdbackOwed(sql: Sql, dealId: string): Promise<boolean> {
  const row = await sql.one<{ owed: boolean }>(
    "select public.deal_transfer_amount($1, 'holdback') is not null as owed",
    [dealId],
  );
  return row.owed;
}
