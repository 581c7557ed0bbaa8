/**
 * A runtime for handler tests: the test database, the test project's keys,
 * and any service doubles the test passes through `env`.
 *
 * @module
 */
import { Runtime, type RuntimeOptions } from "../../supabase/functions/_shared/platform/runtime.ts";
import type { EdgeFunction } from "../../supabase/functions/_shared/platform/function.ts";
import type { TestDatabase } from "./db.ts";
import * as Contract from "../../shared/mod.ts";
import { TEST_JWT_SECRET, TEST_SUPABASE_URL, testCredentials } from "./credentials.ts";

/**
 * Builds a runtime on `db`; `env` adds or overrides variables (e.g. doubles'
 * URLs); `options.logSink` receives the log lines (then set `LOG_LEVEL`),
 * `options.clock` replaces the system clock.
 */
export async function testRuntime(
  db: TestDatabase,
  env: Record<string, string | undefined> = {},
  options: RuntimeOptions = {},
): Promise<Runtime> {
  const keys = await testCredentials();
  return new Runtime({
    SUPABASE_URL: TEST_SUPABASE_URL,
    SUPABASE_DB_URL: db.url,
    SUPABASE_JWT_SECRET: TEST_JWT_SECRET,
    SUPABASE_JWKS: JSON.stringify(keys.jwks),
    SUPABASE_ANON_KEY: keys.anonKey,
    SUPABASE_SERVICE_ROLE_KEY: keys.serviceKey,
    SCHEDULER_TOKEN: keys.schedulerToken,
    SITE_URL: "http://localhost:5173",
    LOG_LEVEL: "silent",
    ...env,
  }, options);
}

/** What {@linkcode invoke} returns: status, headers and the parsed JSON body. */
export interface Invocation<T = Record<string, unknown>> {
  status: number;
  headers: Headers;
  body: T;
}

/** Options for {@linkcode invoke}. */
export interface InvokeOptions {
  body?: unknown;
  /** Bearer token; omitted: no Authorization header. */
  token?: string;
  method?: string;
  headers?: Record<string, string>;
  /** A raw body string (overrides `body`). */
  rawBody?: string;
}

/**
 * Calls a function's handler in-process, as the gateway would. Every answer
 * is held to the contract: a 200 must match the function's catalog `output`
 * schema (when it has one), any other JSON answer the error body.
 */
export async function invoke<T = Record<string, unknown>>(
  fn: EdgeFunction,
  runtime: Runtime,
  options: InvokeOptions = {},
): Promise<Invocation<T>> {
  const headers = new Headers(options.headers);
  if (options.token) headers.set("authorization", `Bearer ${options.token}`);
  const method = options.method ?? "POST";
  let body: string | undefined = options.rawBody;
  if (body === undefined && options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers.set("content-type", "application/json");
  }
  const res = await fn.with(runtime)(
    new Request(`http://127.0.0.1/${fn.definition.name}`, {
      method,
      headers,
      body: method === "GET" || method === "HEAD" ? undefined : body,
    }),
  );
  const text = await res.text();
  const answer: unknown = text ? JSON.parse(text) : null;
  checkContract(fn, res.status, answer);
  return { status: res.status, headers: res.headers, body: answer as T };
}

/** Throws when an answer breaks the contract (see {@linkcode invoke}). */
export function checkContract(fn: EdgeFunction, status: number, body: unknown): void {
  if (status === 204 || body === null) return;
  // A declared function names its answer's schema; probe functions name none.
  const output = fn.definition.output;
  const schema = status === 200 ? (output ? Contract[output] : undefined) : Contract.ErrorBody;
  if (!schema) return;
  const parsed = schema.safeParse(body);
  if (!parsed.success) {
    throw new Error(
      `${fn.definition.name} answered ${status} with a body that breaks its contract: ${
        JSON.stringify(parsed.error.issues)
      }\n${JSON.stringify(body)}`,
    );
  }
}
