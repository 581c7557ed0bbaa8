/**
 * zod schemas of the scheduled and maintenance functions: the daily
 * orchestrator, sponsored placements and duplicate cleanup. The jobs that
 * only count (`run-price-alerts`, `update-views-count`,
 * `send-sponsored-notifications`, `process-sponsored-activations`) answer
 * `JobAnswer` of `job_schemas.ts`.
 *
 * @module
 */
import { z } from "zod";
import { JobAnswer } from "./job_schemas.ts";

/**
 * `run-daily-tasks` request. `slot` labels the run (one run per slot and UTC
 * day): absent, it is the UTC day itself (`2026-11-23`), which is what the
 * schedule sends; manual runs use `manual`. `force` runs a slot again.
 */
export const RunDailyTasksInput = z.object({
  force: z.boolean().default(false),
  slot: z.string().trim().regex(/^[A-Za-z0-9_.:-]{1,50}$/, {
    message: "A slot is 1 to 50 letters, digits, '_', '.', ':' or '-'",
  }).optional(),
});

/** How one sub-job of the orchestrator ended. */
export const DailySubJobStatus = z.enum(["succeeded", "skipped", "failed"]);

/** One sub-job of a `run-daily-tasks` run: its answer (`counts`) or its error. */
export const DailySubJobResult = z.object({
  job: z.string(),
  status: DailySubJobStatus,
  durationMs: z.number().int().min(0),
  /** The sub-job's own answer (a finished run or a skipped start). */
  counts: JobAnswer.optional(),
  /** Why it failed (`failed` only). */
  error: z.object({ code: z.string(), message: z.string() }).optional(),
});

/**
 * `run-daily-tasks` response. A slot that already ran today answers
 * `skipped: true, reason: "already_ran"` with that run's results. If a
 * sub-job failed the same body comes back with status 500.
 */
export const RunDailyTasksOutput = z.object({
  slot: z.string(),
  /** The UTC day of the run (`YYYY-MM-DD`). */
  day: z.iso.date(),
  runId: z.uuid(),
  forced: z.boolean(),
  skipped: z.boolean(),
  reason: z.enum(["already_ran", "already_running"]).optional(),
  results: z.array(DailySubJobResult),
});

/** One sponsored placement change: what would be (or was) activated or expired. */
export const SponsoredChange = z.object({
  /** The `sponsored_listings` row. */
  id: z.uuid(),
  listingId: z.uuid(),
  sellerId: z.uuid(),
  startsAt: z.iso.datetime({ offset: true }),
  endsAt: z.iso.datetime({ offset: true }),
});

/** `test-sponsored-activation` request: the moment to evaluate (default now). */
export const TestSponsoredActivationInput = z.object({
  at: z.iso.datetime({ offset: true }).optional(),
});

/**
 * `test-sponsored-activation` response: what `process-sponsored-activations`
 * would change at `at`, without writing anything.
 */
export const TestSponsoredActivationOutput = z.object({
  at: z.iso.datetime({ offset: true }),
  dryRun: z.literal(true),
  activate: z.array(SponsoredChange),
  expire: z.array(SponsoredChange),
});

/** The kinds of duplicates `cleanup-duplicates` knows. */
export const DuplicateKind = z.enum(["listings", "price_alerts"]);

/** `cleanup-duplicates` request: a dry run unless `dryRun: false`; every kind unless `kinds`. */
export const CleanupDuplicatesInput = z.object({
  dryRun: z.boolean().default(true),
  kinds: z.array(DuplicateKind).min(1).optional(),
});

/** One group of duplicates: the row kept and the ones it duplicates. */
export const DuplicateGroup = z.object({
  keep: z.uuid(),
  duplicates: z.array(z.uuid()).min(1),
});

/** What `cleanup-duplicates` found, and changed, of one kind. */
export const DuplicateKindResult = z.object({
  groups: z.array(DuplicateGroup),
  /** Rows archived (listings) or deactivated (price alerts); empty on a dry run. */
  changed: z.array(z.uuid()),
});

/** `cleanup-duplicates` response, per kind asked for. */
export const CleanupDuplicatesOutput = z.object({
  dryRun: z.boolean(),
  results: z.object({
    listings: DuplicateKindResult.optional(),
    price_alerts: DuplicateKindResult.optional(),
  }),
});
