/**
 * Where analyses are kept: the 24-hour cache by normalized URL
 * (`project_analysis_cache`) and the ledger of every analysis that reached
 * the model (`project_analyses`: user, URL, model, tokens, duration,
 * outcome). A successful analysis is written to both in one transaction.
 *
 * @module
 */
import type { AnalyzeProjectOutput } from "../../../../shared/analysis_schemas.ts";
import type { Context } from "../platform/context.ts";
import type { AskOutcome } from "./ask.ts";

/** How long a successful analysis is served from the cache. */
export const CACHE_TTL_MS = 24 * 60 * 60 * 1000;

interface CacheRow {
  analysis: unknown;
  model: string;
  fetched_at: Date;
}

/**
 * The cached analysis of `url` still valid at `now`, or null. An entry that
 * no longer passes the schema (written before the schema changed) is a miss.
 */
export async function cachedAnalysis(
  ctx: Context,
  url: string,
  now: Date,
): Promise<AnalyzeProjectOutput | null> {
  const row = await ctx.db.maybeOne<CacheRow>(
    `select analysis, model, fetched_at from public.project_analysis_cache
      where url = $1 and expires_at > $2`,
    [url, now],
  );
  if (!row) return null;
  // Loaded with the first cached row, not at cold start (it loads zod).
  const { ProjectAnalysisFields } = await import("../../../../shared/analysis_schemas.ts");
  const fields = ProjectAnalysisFields.safeParse(row.analysis);
  if (!fields.success) {
    ctx.log.warn("cached analysis no longer valid", { url });
    return null;
  }
  return {
    ...fields.data,
    model: row.model,
    fetchedAt: row.fetched_at.toISOString(),
    url,
    cached: true,
  };
}

/** One analysis that reached the model, as the ledger records it. */
export interface AnalysisRecord {
  userId: string;
  /** The normalized URL asked for (the cache key). */
  url: string;
  /** Where the page was read after redirects. */
  finalUrl: string;
  fetchedAt: Date;
  durationMs: number;
  asked: AskOutcome;
}

/**
 * Writes the ledger row and, for a success, the cache entry, in one
 * transaction. An entry from a page read later than this one is kept (two
 * requests analyzing the same URL at once: the newer read wins).
 */
export async function recordAnalysis(ctx: Context, record: AnalysisRecord): Promise<void> {
  const { asked } = record;
  await ctx.db.tx(async (sql) => {
    const { id } = await sql.one<{ id: string }>(
      `insert into public.project_analyses
         (user_id, url, final_url, outcome, model, attempts, input_tokens, output_tokens,
          duration_ms, created_at)
       values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
       returning id`,
      [
        record.userId,
        record.url,
        record.finalUrl,
        asked.outcome,
        asked.model,
        asked.attempts,
        asked.usage.input,
        asked.usage.output,
        Math.max(0, Math.round(record.durationMs)),
        ctx.now(),
      ],
    );
    if (asked.outcome !== "succeeded") return;
    await sql.query(
      `insert into public.project_analysis_cache as c
         (url, analysis, model, analysis_id, fetched_at, expires_at)
       values ($1, $2, $3, $4, $5, $6)
       on conflict (url) do update set
         analysis = excluded.analysis, model = excluded.model,
         analysis_id = excluded.analysis_id, fetched_at = excluded.fetched_at,
         expires_at = excluded.expires_at
       where c.fetched_at <= excluded.fetched_at`,
      [
        record.url,
        JSON.stringify(asked.fields),
        asked.model,
        id,
        record.fetchedAt,
        new Date(record.fetchedAt.getTime() + CACHE_TTL_MS),
      ],
    );
  });
}
