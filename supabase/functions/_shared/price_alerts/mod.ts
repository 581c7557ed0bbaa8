/**
 * Price alerts: matching alerts against listings, telling users, and the
 * guarded job `run-price-alerts` that does both.
 *
 * @module
 */
export * from "./deliver.ts";
export * from "./match.ts";
export * from "./notify_user.ts";
export * from "./run.ts";
export * from "./runs.ts";
