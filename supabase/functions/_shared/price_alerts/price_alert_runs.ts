/**
 * The rows of `public.price_alert_runs`: one per run of `run-price-alerts`,
 * written when the run starts (with the window its saved searches are
 * matched over) and finished with its counts.
 *
 * @module
 */
import type { Sql } from "../platform/db.ts";

/** A started run: its row, when it started, and where its saved-search scan starts. */
export interface PriceAlertRun {
  id: string;
  startedAt: Date;
  /** Saved searches match listings changed at or after this (`price_alerts_since()`). */
  since: Date;
}

/** What a run did, as `price_alert_runs` records it. */
export interface PriceAlertRunCounts {
  /** How long matching took (null: it did not finish). */
  matchMs: number | null;
  /** How long delivery took (null: it did not finish). */
  deliveryMs: number | null;
  alertsScanned: number;
  matches: number;
  eventsCreated: number;
  delivered: number;
  failed: number;
  suppressed: number;
  usersNotified: number;
  pendingLeft: number;
}

/** How a run ended: `partial` when some users could not be told (their events wait). */
export type PriceAlertRunStatus = "succeeded" | "partial" | "failed";

/** Counts of a run that has done nothing yet. */
export function noCounts(): PriceAlertRunCounts {
  return {
    matchMs: null,
    deliveryMs: null,
    alertsScanned: 0,
    matches: 0,
    eventsCreated: 0,
    delivered: 0,
    failed: 0,
    suppressed: 0,
    usersNotified: 0,
    pendingLeft: 0,
  };
}

/**
 * Writes the `running` row of a run of job run `jobRunId`. The job guard
 * lets one run live at a time, so rows still `running` are of runs that
 * died (or were taken over): they are closed as `failed` first.
 */
export async function startPriceAlertRun(sql: Sql, jobRunId: string): Promise<PriceAlertRun> {
  const row = await sql.one<{ id: string; started_at: Date; since: Date }>(
    `with dead as (
       update public.price_alert_runs
       set status = 'failed', finished_at = clock_timestamp(),
           duration_ms = greatest(0, round(extract(epoch from clock_timestamp() - started_at) * 1000))
       where status = 'running'
     )
     insert into public.price_alert_runs (job_run_id, since)
     values ($1, public.price_alerts_since())
     returning id, started_at, since`,
    [jobRunId],
  );
  return { id: row.id, startedAt: row.started_at, since: row.since };
}

/** Records how run `run` ended, with its counts and duration. */
export async function finishPriceAlertRun(
  sql: Sql,
  run: PriceAlertRun,
  status: PriceAlertRunStatus,
  counts: PriceAlertRunCounts,
): Promise<void> {
  await sql.query(
    `update public.price_alert_runs
     set status = $2, finished_at = clock_timestamp(),
         duration_ms = greatest(0, round(extract(epoch from clock_timestamp() - started_at) * 1000)),
         alerts_scanned = $3, matches = $4, events_created = $5, delivered = $6, failed = $7,
         suppressed = $8, users_notified = $9, pending_left = $10, match_ms = $11,
         delivery_ms = $12
     where id = $1 and status = 'running'`,
    [
      run.id,
      status,
      counts.alertsScanned,
      counts.matches,
      counts.eventsCreated,
      counts.delivered,
      counts.failed,
      counts.suppressed,
      counts.usersNotified,
      counts.pendingLeft,
      counts.matchMs === null ? null : Math.round(counts.matchMs),
      counts.deliveryMs === null ? null : Math.round(counts.deliveryMs),
    ],
  );
}
