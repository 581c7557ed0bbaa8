/**
 * `run-price-alerts` (scheduled, every 15 minutes): matches every active
 * price alert and saved search against the listings (set-based, in SQL),
 * writes one event per new match and channel, tells each user once per run
 * (in-app and e-mail, as their alerts and preferences say), and records the
 * run in `price_alert_runs`. A start while a run is in progress answers 200
 * `skipped`; a run answers its counts, or 500 `partial_failure` listing the
 * users whose notice could not be written (their events wait for the next
 * run).
 *
 * @module
 */
import { defineFunction } from "../_shared/platform/function.ts";
import { runPriceAlerts } from "../_shared/price_alerts/scan.ts";

export default defineFunction({
  name: "run-price-alerts",
  access: "scheduled",
  group: "schedulers",
  summary: "Scans price alerts",
  output: "JobAnswer",
  handle({ ctx }) {
    return runPriceAlerts(ctx);
  },
});
