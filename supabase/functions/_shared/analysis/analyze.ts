/**
 * One project analysis, start to end: normalize and check the URL (refusals
 * before anything else), answer from the 24-hour cache when it can (no
 * fetch, no model call, no rate-limit hit), else count the caller's hourly
 * allowance, fetch the page safely, extract its text, ask the model, record
 * the analysis and its cost, and answer. No transaction is open while the
 * page or the model is being called.
 *
 * @module
 */
import type { AnalyzeProjectOutput } from "../../../../shared/analysis_schemas.ts";
import type { UserCaller } from "../platform/caller.ts";
import type { Context } from "../platform/context.ts";
import { invalidInput } from "../platform/errors.ts";
import { enforceRateLimit, rateLimitKey } from "../platform/rate_limit.ts";
import { fetchPage } from "../platform/web/page_fetch.ts";
import { checkUrl, normalizeUrl } from "../platform/web/target.ts";
import { cachedAnalysis, recordAnalysis } from "./store.ts";

/** The hourly allowance's counter (the factory's burst limit counts under "analyze-project"). */
const HOURLY_ALLOWANCE = "analyze-project:hourly";

/**
 * Analyzes the project at `rawUrl` for `user`. The hourly allowance is a
 * rate limit of its own, apart from the factory's per-minute burst limit on
 * every call, taken here rather than by the factory because a cached answer
 * must not spend it.
 */
export async function analyzeProject(
  ctx: Context,
  user: UserCaller,
  rawUrl: string,
): Promise<AnalyzeProjectOutput> {
  const url = normalizeUrl(rawUrl);
  checkUrl(url, { allowLoopback: ctx.runtime.pageFetch.allowLoopback ?? false });

  const cached = await cachedAnalysis(ctx, url.href, ctx.now());
  if (cached) return cached;

  ctx.env.require("AIMODEL_API_KEY"); // before the caller's allowance or the page is spent
  await enforceRateLimit(ctx, rateLimitKey(HOURLY_ALLOWANCE, user), {
    limit: ctx.env.values.ANALYZE_RATE_PER_HOUR,
    windowSeconds: 3600,
  });

  // The page extractor, the prompt and the model's client load with the
  // first analysis that gets this far, not at cold start: a cached answer or
  // a refusal never needs them (docs/benchmarks.md, `cold_start`).
  const [{ extractPage }, { analysisRequest, MAX_PAGE_TEXT_CHARS }, { askForAnalysis }] =
    await Promise.all([import("./extract.ts"), import("./prompt.ts"), import("./ask.ts")]);

  const started = performance.now();
  const fetchedAt = ctx.now();
  const page = await fetchPage(url, ctx.runtime.pageFetch);
  const extracted = extractPage(page.text, page.contentType, {
    maxTextChars: MAX_PAGE_TEXT_CHARS,
  });
  if (!extracted.text && !extracted.title && !extracted.description) {
    throw invalidInput("Cannot analyze this URL: the page has no readable text", {
      reason: "empty_page",
      url: page.url,
    });
  }

  const asked = await askForAnalysis(ctx, analysisRequest(page.url, extracted));
  await recordAnalysis(ctx, {
    userId: user.id,
    url: url.href,
    finalUrl: page.url,
    fetchedAt,
    durationMs: performance.now() - started,
    asked,
  });
  if (asked.outcome !== "succeeded") throw asked.error;
  return {
    ...asked.fields,
    model: asked.model,
    fetchedAt: fetchedAt.toISOString(),
    url: url.href,
    cached: false,
  };
}
