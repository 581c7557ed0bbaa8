/**
 * zod schemas of the AI project analysis (`docs/analysis.md`): what
 * `analyze-project` takes, the fields the model fills in (also the JSON
 * schema of the tool the model is asked to call), and the answer.
 *
 * @module
 */
import { z } from "zod";

/** `analyze-project` request: the address of a public web page (http or https). */
export const AnalyzeProjectInput = z.object({
  url: z.url({ protocol: /^https?$/, error: "Must be an http or https URL" }).max(2048),
});

/** A rough price range for the project, with the reasoning behind it. */
export const ValuationHint = z.object({
  low: z.number().min(0).meta({ description: "Lower end of a plausible sale price" }),
  high: z.number().min(0).meta({ description: "Upper end of a plausible sale price" }),
  currency: z.string().regex(/^[A-Z]{3}$/).meta({
    description: "ISO 4217 code of low and high, e.g. USD",
  }),
  basis: z.string().min(1).max(600).meta({
    description: "What the range rests on (revenue multiple, traffic, comparable sales, ...)",
  }),
}).refine((hint) => hint.low <= hint.high, {
  message: "low must not exceed high",
  path: ["high"],
});

/**
 * What the model reports about a project. Its JSON schema is the input
 * schema of the tool the model must call, so the descriptions are the
 * model's instructions field by field.
 */
export const ProjectAnalysisFields = z.object({
  summary: z.string().min(1).max(1500).meta({
    description: "Two to four sentences: what the project is, for whom, and its state",
  }),
  category: z.string().min(1).max(60).meta({
    description: "A short marketplace category, e.g. SaaS, E-commerce, Content site, Mobile app",
  }),
  businessModel: z.string().min(1).max(400).meta({
    description: "How the project creates and captures value",
  }),
  techStack: z.array(z.string().min(1).max(60)).max(20).meta({
    description: "Technologies visible from the page (frameworks, platforms, services)",
  }),
  monetization: z.string().min(1).max(600).meta({
    description: "How it makes or could make money (subscriptions, ads, sales, ...)",
  }),
  strengths: z.array(z.string().min(1).max(300)).max(10).meta({
    description: "What makes it attractive to a buyer",
  }),
  risks: z.array(z.string().min(1).max(300)).max(10).meta({
    description: "What a buyer should check or worry about",
  }),
  valuationHint: ValuationHint,
  confidence: z.number().min(0).max(1).meta({
    description: "0 to 1: how much the page supports this analysis",
  }),
});
/** What the model reports about a project. */
export type ProjectAnalysisFields = z.infer<typeof ProjectAnalysisFields>;

/** `analyze-project` response: the analysis, who made it, and when the page was read. */
export const AnalyzeProjectOutput = ProjectAnalysisFields.extend({
  /** The model that answered (the primary or the fallback). */
  model: z.string().min(1),
  /** When the page was fetched (cached answers keep the original time). */
  fetchedAt: z.iso.datetime({ offset: true }),
  /** The normalized address that was analyzed (the cache key). */
  url: z.url(),
  /** Whether this answer came from the 24-hour cache (no model call). */
  cached: z.boolean(),
});
/** `analyze-project` response. */
export type AnalyzeProjectOutput = z.infer<typeof AnalyzeProjectOutput>;
