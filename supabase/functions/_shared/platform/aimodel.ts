/**
 * The AI model provider's client (`@anthropic-ai/sdk`), loaded on first use,
 * and how its failures read: busy (try another model, or tell the caller
 * when to come back) or refused (our request or configuration is wrong).
 * Nothing here imports the SDK at cold start.
 *
 * @module
 */
import type Anthropic from "@anthropic-ai/sdk";
import type { Env } from "./env.ts";
import type { Runtime } from "./runtime.ts";

/** The SDK's module: its client class and error classes. */
export type AimodelSdk = typeof Anthropic;

let loading: Promise<AimodelSdk> | undefined;

/** Loads the SDK once per isolate. */
export function loadAimodelSdk(): Promise<AimodelSdk> {
  loading ??= import("@anthropic-ai/sdk").then((module) => module.default);
  return loading;
}

/**
 * Builds a client from `AIMODEL_API_KEY` (503 `not_configured` when unset)
 * and `AIMODEL_BASE_URL`. The SDK's own retries are off: a busy model is
 * answered by asking the fallback model, not by waiting for the same one.
 */
/**
 * The AI model provider's client of `ctx`'s runtime, loaded on first use;
 * 503 `not_configured` without `AIMODEL_API_KEY`. Never call it inside
 * `db.tx`.
 */
export function aimodelFor(ctx: { readonly runtime: Runtime }): Promise<Anthropic> {
  return ctx.runtime.load("aimodel", () => createAimodelClient(ctx.runtime.env));
}

/** A model client for `env` (see {@linkcode aimodelFor}). */
async function createAimodelClient(env: Env): Promise<Anthropic> {
  const apiKey = env.require("AIMODEL_API_KEY");
  const Sdk = await loadAimodelSdk();
  return new Sdk({
    apiKey,
    baseURL: env.values.AIMODEL_BASE_URL,
    maxRetries: 0,
    timeout: env.values.AIMODEL_TIMEOUT_MS,
  });
}

/** How a failed model call reads. */
export type AimodelFailure =
  /** Rate limited (429), overloaded (529), failing (5xx), unreachable or timed out: ask another model. */
  | { kind: "busy"; status: number | null; retryAfterSeconds: number | null }
  /** Refused our request (400, 401, 403, 404, …): nothing another attempt would fix. */
  | { kind: "rejected"; status: number; type: string | null };

/** Reads an error thrown by a client call; undefined when it is not the SDK's. */
export function aimodelFailure(sdk: AimodelSdk, error: unknown): AimodelFailure | undefined {
  if (error instanceof sdk.APIConnectionError) {
    return { kind: "busy", status: null, retryAfterSeconds: null };
  }
  if (!(error instanceof sdk.APIError)) return undefined;
  const status = error.status ?? 0;
  if (status === 429 || status === 408 || status >= 500 || status === 0) {
    return { kind: "busy", status: status || null, retryAfterSeconds: retryAfterOf(error.headers) };
  }
  return { kind: "rejected", status, type: error.type ?? null };
}

/**
 * Seconds to wait from a `retry-after` header (whole seconds or an HTTP
 * date), or null when absent or unreadable.
 */
export function retryAfterOf(headers: Headers | undefined, now: Date = new Date()): number | null {
  const value = headers?.get("retry-after")?.trim();
  if (!value) return null;
  if (/^\d+$/.test(value)) return Number(value);
  const date = Date.parse(value);
  if (Number.isNaN(date)) return null;
  return Math.max(0, Math.ceil((date - now.getTime()) / 1000));
}
