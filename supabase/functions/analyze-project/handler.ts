/**
 * `analyze-project` (signed-in user) `{ url }`: a structured AI analysis of
 * the project at that public web page (`AnalyzeProjectOutput`: summary,
 * category, business model, tech stack, monetization, strengths, risks,
 * valuation hint, confidence, the model that answered, when the page was
 * read). At most 30 calls a minute per user, cached or not. Served from a
 * 24-hour cache per normalized URL when it can; else at most
 * `ANALYZE_RATE_PER_HOUR` analyses per user and hour. The page is
 * fetched with the SSRF rules of `_shared/web/`; see `_shared/analysis/`.
 *
 * @module
 */
import { analyzeProject } from "../_shared/analysis/analyze.ts";
import { defineFunction } from "../_shared/platform/function.ts";

export default defineFunction({
  name: "analyze-project",
  access: "user",
  group: "analysis",
  summary: "AI analysis of a project from its URL",
  input: () =>
    import("../../../shared/analysis_schemas.ts").then((schemas) => schemas.AnalyzeProjectInput),
  output: "AnalyzeProjectOutput",
  // A burst limit on every call, cached or not; uncached analyses also count
  // against the hourly ANALYZE_RATE_PER_HOUR (taken in analyzeProject).
  rateLimit: { limit: 30, windowSeconds: 60 },
  handle({ input, caller, ctx }) {
    return analyzeProject(ctx, caller, input.url);
  },
});
