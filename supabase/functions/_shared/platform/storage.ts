/**
 * Supabase Storage through `@supabase/supabase-js`, with the service role
 * (which passes storage RLS: the functions check access themselves), loaded
 * on first use. The service role is a secret key of `SUPABASE_SECRET_KEYS`
 * when the project has one, else the legacy `SUPABASE_SERVICE_ROLE_KEY`
 * ({@linkcode serviceKeyOf}). Hosted, `SUPABASE_URL` is the project; locally the same
 * calls reach the Storage API subset `deno task start` serves.
 *
 * @module
 */
import type { SupabaseClient } from "@supabase/supabase-js";
import type { Env } from "./env.ts";
import type { Runtime } from "./runtime.ts";
import { HttpError, upstreamUnavailable } from "./errors.ts";

/** The storage part of a supabase-js client. */
export type StorageClient = SupabaseClient["storage"];

/**
 * Storage through supabase-js with the service role (signed upload and
 * download URLs, uploads) for `ctx`'s runtime, loaded on first use; 503
 * `not_configured` without its settings. Never call it inside `db.tx`.
 */
export function storageFor(ctx: { readonly runtime: Runtime }): Promise<StorageClient> {
  return ctx.runtime.load("storage", () => createStorageClient(ctx.runtime.env));
}

/** A Storage client for `env` (see {@linkcode storageFor}). */
async function createStorageClient(env: Env): Promise<StorageClient> {
  const { createClient } = await import("@supabase/supabase-js");
  const client = createClient(
    env.require("SUPABASE_URL"),
    serviceKeyOf(env),
    { auth: { persistSession: false, autoRefreshToken: false, detectSessionInUrl: false } },
  );
  return client.storage;
}

/**
 * The key that makes a call the service role's: a secret key of
 * `SUPABASE_SECRET_KEYS` when there is one (the one named `default`, else
 * the first) — a project that disabled the legacy keys has only these — else
 * the legacy `SUPABASE_SERVICE_ROLE_KEY`; 503 `not_configured` naming both
 * without either.
 */
export function serviceKeyOf(env: Env): string {
  const secrets = env.values.SUPABASE_SECRET_KEYS;
  const secret = secrets?.["default"] ?? Object.values(secrets ?? {})[0];
  const key = secret ?? env.values.SUPABASE_SERVICE_ROLE_KEY;
  if (key === undefined) {
    throw new HttpError(
      503,
      "not_configured",
      "Cannot serve this request: neither SUPABASE_SECRET_KEYS nor SUPABASE_SERVICE_ROLE_KEY is configured",
      { variables: ["SUPABASE_SECRET_KEYS", "SUPABASE_SERVICE_ROLE_KEY"] },
    );
  }
  return key;
}

/** A storage-js failure (`{ error }` of a storage call). */
export interface StorageFailure {
  message: string;
  status?: number;
  statusCode?: string;
}

/**
 * Turns a failed storage call into our error model: Storage unreachable or
 * failing (no status, 5xx) is 503 `upstream_unavailable`; a refusal (4xx) is
 * 502 `storage_error` with Storage's status and code — the function checked
 * the caller's request first, so a refusal is ours to fix, not the caller's.
 */
export function storageError(action: string, error: StorageFailure): HttpError {
  // Storage answers every refusal with HTTP 400 and the real status in `statusCode`.
  const status = Number(error.statusCode) || error.status || 0;
  if (status === 0 || status >= 500) return upstreamUnavailable("storage");
  return new HttpError(502, "storage_error", `Cannot ${action}: storage answered ${status}`, {
    storageStatus: status,
    storageCode: error.statusCode ?? null,
    reason: error.message,
  });
}
