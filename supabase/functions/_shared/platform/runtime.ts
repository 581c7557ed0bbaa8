/**
 * The runtime: validated configuration plus the long-lived dependencies built
 * from it (database pool, token verifier, service clients, caches). One per
 * isolate in production; tests and the local server build their own and hand
 * it to handlers with `handler.with(runtime)`.
 *
 * Heavy dependencies load on first use, not at cold start: the database
 * driver when the first query runs. The service clients (`payproc.ts`,
 * `storage.ts`, `aimodel.ts`) are not referenced here at all: the code that
 * calls one imports it and keeps its client in {@linkcode Runtime.load},
 * so a function that never calls a service never loads its SDK.
 *
 * @module
 */
import { TokenVerifier } from "./tokens.ts";
import { Db } from "./db.ts";
import { ConfigurationError, Env } from "./env.ts";
import { CorsPolicy, type HeaderPairs, securityHeaders } from "./headers.ts";
import { Logger, type LogSink } from "./log.ts";
import type { PageFetchOptions } from "./web/page_fetch.ts";

/** Options of a {@linkcode Runtime}. */
export interface RuntimeOptions {
  /** Receives the log lines (default: stdout/stderr as JSON). */
  logSink?: LogSink;
  /** The clock jobs and deadlines read (default: the system clock); tests inject one. */
  clock?: () => Date;
  /**
   * How pages are fetched for analysis (resolver, connector, limits). Tests
   * inject a stub resolver and connector here, or `allowLoopback` to reach a
   * server of their own on 127.0.0.1; a deployment never sets these (they
   * are not read from the environment).
   */
  pageFetch?: Partial<PageFetchOptions>;
}

/** Configuration and lazily built dependencies shared by every request. */
export class Runtime {
  /** Validated configuration. */
  readonly env: Env;
  /** The base logger. */
  readonly log: Logger;
  /** Security headers sent on every response. */
  readonly securityHeaders: Readonly<Record<string, string>>;
  /** The CORS policy. */
  readonly cors: CorsPolicy;
  /** Named caches that live as long as the isolate (e.g. price ids). */
  readonly caches = new Map<string, unknown>();
  private readonly securityPairs: HeaderPairs;
  /** The headers of a JSON answer but its request id, by the origin CORS names (null: none). */
  private readonly jsonHeaders = new Map<string | null, Headers>();
  private db?: Db;
  private verifier?: TokenVerifier;
  private readonly clock: () => Date;
  /** Overrides of the page fetcher's defaults (tests only; see {@linkcode RuntimeOptions.pageFetch}). */
  readonly pageFetch: Readonly<Partial<PageFetchOptions>>;

  /** Validates `source` (fails on malformed values, never on missing secrets). */
  constructor(source: Record<string, string | undefined>, options: RuntimeOptions = {}) {
    this.env = new Env(source);
    this.clock = options.clock ?? (() => new Date());
    this.pageFetch = Object.freeze({ ...options.pageFetch });
    this.log = new Logger(this.env.values.LOG_LEVEL, {}, options.logSink);
    this.securityHeaders = Object.freeze(
      securityHeaders({ supabaseUrl: this.env.values.SUPABASE_URL }),
    );
    this.securityPairs = Object.entries(this.securityHeaders);
    this.cors = new CorsPolicy(this.env.values.ALLOWED_ORIGINS);
  }

  /**
   * The headers of every answer, a function's or the local gateway's own:
   * the security set, CORS for `origin`, and the request id.
   */
  responseHeaders(origin: string | null, requestId: string): HeaderPairs {
    return [...this.securityPairs, ...this.cors.headersFor(origin), ["X-Request-Id", requestId]];
  }

  /**
   * A JSON answer (`body` is JSON text) with the headers of every answer
   * ({@linkcode responseHeaders}), `content-type: application/json` and
   * `extra`. The
   * headers are kept in one `Headers` per CORS origin, given the request id
   * right before each answer copies them: a `Headers` is copied without
   * checking every name and value again, which costs more than the rest of a
   * small answer.
   */
  jsonResponse(
    body: string,
    status: number,
    origin: string | null,
    requestId: string,
    extra?: Record<string, string>,
  ): Response {
    const key = this.cors.allowedOrigin(origin);
    let headers = this.jsonHeaders.get(key);
    if (!headers) {
      // In the order a copy lists them (lower case, sorted: names are
      // case-insensitive), which then has least to do.
      const pairs: HeaderPairs = [
        ["content-type", "application/json"],
        ...this.securityPairs,
        ...this.cors.headersFor(origin),
        ["X-Request-Id", requestId],
      ].map(([name, value]) => [name!.toLowerCase(), value!]);
      headers = new Headers(pairs.sort(([a], [b]) => (a < b ? -1 : 1)));
      this.jsonHeaders.set(key, headers);
    }
    headers.set("x-request-id", requestId);
    const response = new Response(body, { status, headers });
    // An answer's own headers (an error's `Allow`, `Retry-After`) on its copy.
    for (const [name, value] of Object.entries(extra ?? {})) response.headers.set(name, value);
    return response;
  }

  /** The database; 503 `not_configured` without `SUPABASE_DB_URL`. */
  get database(): Db {
    this.db ??= new Db(this.env.require("SUPABASE_DB_URL"), this.env.values.DB_POOL_MAX);
    return this.db;
  }

  /** The bearer credential verifier. */
  get tokens(): TokenVerifier {
    this.verifier ??= new TokenVerifier(this.env);
    return this.verifier;
  }

  /** The current time by the runtime's clock (injectable for tests). */
  now(): Date {
    return this.clock();
  }

  /** A named cache, created on first use by `create`. */
  cache<T>(name: string, create: () => T): T {
    let value = this.caches.get(name) as T | undefined;
    if (value === undefined) {
      value = create();
      this.caches.set(name, value);
    }
    return value;
  }

  /**
   * What `create` resolves to, made on first use and kept under `name` (a
   * service client); a failed attempt is forgotten, so the next call tries
   * again instead of failing for the isolate's lifetime.
   */
  load<T>(name: string, create: () => Promise<T>): Promise<T> {
    return this.cache(name, () =>
      create().catch((error) => {
        this.caches.delete(name);
        throw error;
      }));
  }

  /** Releases the database pool. */
  async close(): Promise<void> {
    await this.db?.close();
    this.db = undefined;
  }
}

let processRuntime: Runtime | ConfigurationError | undefined;

/**
 * The runtime of this isolate, built from `Deno.env` on first use; throws
 * the {@linkcode ConfigurationError} of a configuration that cannot be
 * served, the same one every time (the environment does not change).
 */
export function defaultRuntime(): Runtime {
  if (processRuntime === undefined) {
    try {
      processRuntime = new Runtime(Deno.env.toObject());
    } catch (error) {
      if (!(error instanceof ConfigurationError)) throw error;
      processRuntime = error;
      new Logger().error("misconfigured", { message: error.message, variables: error.variables });
    }
  }
  if (processRuntime instanceof ConfigurationError) throw processRuntime;
  return processRuntime;
}
