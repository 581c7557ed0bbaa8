/**
 * The runtime: validated configuration plus the long-lived dependencies built
 * from it (database pool, token verifier, service clients, caches). One per
 * isolate in production; tests and the local server build their own and hand
 * it to handlers with `handler.with(runtime)`.
 *
 * @module
 */
import type Stripe from "stripe";
import { TokenVerifier } from "./auth.ts";
import { Db } from "./db.ts";
import { Env } from "./env.ts";
import { CorsPolicy, securityHeaders } from "./headers.ts";
import { Logger, type LogSink } from "./log.ts";
import { createPayprocClient } from "./payproc.ts";

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
  private db?: Db;
  private verifier?: TokenVerifier;
  private payprocClient?: Stripe;

  /** Validates `source` (fails on malformed values, never on missing secrets). */
  constructor(source: Record<string, string | undefined>, options: { logSink?: LogSink } = {}) {
    this.env = new Env(source);
    this.log = new Logger(this.env.values.LOG_LEVEL, {}, options.logSink);
    this.securityHeaders = Object.freeze(
      securityHeaders({ supabaseUrl: this.env.values.SUPABASE_URL }),
    );
    this.cors = new CorsPolicy(this.env.values.ALLOWED_ORIGINS);
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

  /** The payment processor client; 503 `not_configured` without `PAYPROC_SECRET_KEY`. */
  get payproc(): Stripe {
    this.payprocClient ??= createPayprocClient(this.env);
    return this.payprocClient;
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

  /** Releases the database pool. */
  async close(): Promise<void> {
    await this.db?.close();
    this.db = undefined;
  }
}

let processRuntime: Runtime | undefined;

/** The runtime of this isolate, built from `Deno.env` on first use. */
export function defaultRuntime(): Runtime {
  processRuntime ??= new Runtime(Deno.env.toObject());
  return processRuntime;
}
