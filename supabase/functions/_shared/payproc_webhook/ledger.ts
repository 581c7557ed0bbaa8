/**
 * The event ledger (`public.payproc_events`): a verified event is recorded
 * in the same transaction — or the same call — as its effects, so a row
 * exists exactly when the effects are committed, and a repeated or
 * concurrent delivery finds it and changes nothing. Every insert goes
 * through `public.record_payproc_event()` (see its migration).
 *
 * @module
 */
import type { Sql } from "../platform/db.ts";
import type { LedgerEntry, WebhookResult } from "./types.ts";

/** The ledger's fields of `entry`, as `public.record_payproc_event(p_event)` takes them. */
export function ledgerFields({ event, endpoint }: LedgerEntry): Record<string, unknown> {
  return {
    id: event.id,
    type: event.type,
    created: event.created,
    account: typeof event.account === "string" ? event.account : null,
    livemode: event.livemode,
    api_version: event.api_version ?? null,
    endpoint,
  };
}

/** {@linkcode ledgerFields} as JSON text. */
export function ledgerJson(entry: LedgerEntry): string {
  return JSON.stringify(ledgerFields(entry));
}

/** Records `entry` (outcome applied until {@linkcode settleOutcome}); false when already recorded. */
export async function recordEvent(sql: Sql, entry: LedgerEntry): Promise<boolean> {
  const row = await sql.one<{ recorded: boolean }>(
    "select public.record_payproc_event($1::jsonb) as recorded",
    [ledgerJson(entry)],
  );
  return row.recorded;
}

/** Stores how the event ended, when it is not a plain `applied`. */
export async function settleOutcome(
  sql: Sql,
  entry: LedgerEntry,
  result: WebhookResult,
): Promise<void> {
  if (result.outcome === "applied" && result.detail === undefined) return;
  await sql.query("update public.payproc_events set outcome = $2, detail = $3 where id = $1", [
    entry.event.id,
    result.outcome,
    result.detail ?? null,
  ]);
}
