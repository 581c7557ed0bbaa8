/**
 * Matching: every active alert against the listings in one SQL statement
 * (`public.match_price_alerts`, rules in the price alerts migration), which
 * writes one pending `price_alert_events` row per channel of each new match.
 *
 * @module
 */
import type { Sql } from "../platform/db.ts";

/** What one matching pass found. */
export interface MatchCounts {
  /** Active alerts. */
  alertsScanned: number;
  /** Alert-listing pairs that match now (new or told before). */
  matches: number;
  /** New events (one per channel). */
  eventsCreated: number;
}

/** Matches every active alert; saved searches against listings changed at or after `since`. */
export async function matchPriceAlerts(sql: Sql, since: Date): Promise<MatchCounts> {
  const row = await sql.one<{ alerts_scanned: number; matches: number; events_created: number }>(
    "select alerts_scanned, matches, events_created from public.match_price_alerts($1)",
    [since],
  );
  return {
    alertsScanned: row.alerts_scanned,
    matches: row.matches,
    eventsCreated: row.events_created,
  };
}
