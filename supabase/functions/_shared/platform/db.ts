/**
 * The database: a `pg` pool on `SUPABASE_DB_URL` with transactions and
 * user-scoped (RLS) execution. Session state is always transaction-local so
 * the pool works behind Supabase's transaction pooler. The driver is loaded
 * when the first query runs, so functions that never query never load it.
 *
 * @module
 */
import type pg from "pg";
import { HttpError, upstreamUnavailable } from "./errors.ts";

/** Values a query can take as parameters. */
export type SqlParam = string | number | boolean | null | Date | readonly unknown[] | object;

/** Something to run SQL on: the pool or a transaction's client. */
export interface Sql {
  /** Runs `text` and returns its rows. */
  query<R extends object = Record<string, unknown>>(
    text: string,
    params?: readonly SqlParam[],
  ): Promise<R[]>;
  /** Runs `text` and returns its only row, or null when there is none. */
  maybeOne<R extends object = Record<string, unknown>>(
    text: string,
    params?: readonly SqlParam[],
  ): Promise<R | null>;
  /** Runs `text` and returns its first row; throws when there is none. */
  one<R extends object = Record<string, unknown>>(
    text: string,
    params?: readonly SqlParam[],
  ): Promise<R>;
}

/**
 * Runs `fn` in a savepoint of transaction `sql`: released when it succeeds,
 * rolled back (and the error rethrown) when it fails, so one item's failure
 * leaves the rest of the transaction usable. E-mails it queued are skipped
 * by the outbox once rolled back.
 */
export async function inSavepoint<T>(sql: Sql, fn: () => Promise<T>): Promise<T> {
  await sql.query("savepoint item");
  try {
    const result = await fn();
    await sql.query("release savepoint item");
    return result;
  } catch (error) {
    await sql.query("rollback to savepoint item");
    throw error;
  }
}

/** JWT claims that RLS reads through `auth.uid()`, `auth.role()` and `auth.jwt()`. */
export interface SqlClaims {
  sub: string;
  role: "authenticated";
  email?: string | null;
  [claim: string]: unknown;
}

/** Anything with `pg`'s query method: the pool, a checked-out client. */
interface Queryable {
  query<R extends pg.QueryResultRow>(
    text: string,
    params?: unknown[],
  ): Promise<pg.QueryResult<R>>;
}

function sqlOn(target: Queryable): Sql {
  const query = async <R extends object>(text: string, params?: readonly SqlParam[]) => {
    try {
      const result = await target.query<R>(text, params as unknown[] | undefined);
      return result.rows;
    } catch (error) {
      throw mapDbError(error);
    }
  };
  return {
    query,
    async maybeOne<R extends object>(text: string, params?: readonly SqlParam[]) {
      const rows = await query<R>(text, params);
      return rows[0] ?? null;
    },
    async one<R extends object>(text: string, params?: readonly SqlParam[]) {
      const rows = await query<R>(text, params);
      const row = rows[0];
      if (row === undefined) throw new Error(`Expected a row from: ${text.slice(0, 80)}`);
      return row;
    },
  };
}

/**
 * Maps database failures a client should see: connection-level failures
 * become 503; our state machines' refusals (SQLSTATE PT409, raised with
 * messages written for clients) become 409 (with the hint, when there is
 * one, as `details.reason`), and privilege refusals (42501,
 * from RLS and grants under `asUser`) 403. Other SQL errors stay as they are
 * (a 500: a bug to fix).
 */
function mapDbError(error: unknown): unknown {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    if (code === "PT409") {
      // The hint, when the refusal names one, is its machine-readable reason.
      const hint = (error as { hint?: unknown }).hint;
      return new HttpError(
        409,
        "conflict",
        error.message,
        typeof hint === "string" && hint ? { reason: hint } : undefined,
      );
    }
    if (code === "42501") {
      return new HttpError(403, "forbidden", "Cannot do this: the database refused the change");
    }
    if (
      code === "ECONNREFUSED" || code === "ENOTFOUND" || code === "ECONNRESET" ||
      code === "57P01" || code === "57P03" || code === "53300" ||
      /timeout exceeded when trying to connect|Connection terminated/i.test(error.message)
    ) {
      return upstreamUnavailable("database");
    }
  }
  return error;
}

/** Opens a pool on `url` once the driver is loaded (no connection until the first query). */
async function openPool(url: string, max: number): Promise<pg.Pool> {
  const { default: driver } = await import("pg");
  const pool = new driver.Pool({
    connectionString: url,
    max,
    connectionTimeoutMillis: 5_000,
    idleTimeoutMillis: 10_000,
    allowExitOnIdle: true,
  });
  pool.on("error", () => {/* an idle client died; the pool replaces it */});
  return pool;
}

/** The pool plus transaction helpers; one per runtime. */
export class Db implements Sql {
  private pool?: Promise<pg.Pool>;
  private closed = false;
  private readonly root: Sql;

  /** Prepares a pool on `url` of at most `max` connections; nothing is loaded or opened yet. */
  constructor(private readonly url: string, private readonly max = 5) {
    const queryable: Queryable = {
      query: async (text, params) => (await this.connected()).query(text, params),
    };
    this.root = sqlOn(queryable);
  }

  private connected(): Promise<pg.Pool> {
    if (this.closed) throw new Error("Cannot query: the database pool is closed");
    this.pool ??= openPool(this.url, this.max);
    return this.pool;
  }

  /** Runs `text` on the pool and returns its rows. */
  query<R extends object = Record<string, unknown>>(text: string, params?: readonly SqlParam[]) {
    return this.root.query<R>(text, params);
  }
  /** Runs `text` and returns its only row, or null. */
  maybeOne<R extends object = Record<string, unknown>>(text: string, params?: readonly SqlParam[]) {
    return this.root.maybeOne<R>(text, params);
  }
  /** Runs `text` and returns its first row; throws when there is none. */
  one<R extends object = Record<string, unknown>>(text: string, params?: readonly SqlParam[]) {
    return this.root.one<R>(text, params);
  }

  /** Runs `fn` in a transaction: committed when it returns, rolled back when it throws. */
  async tx<T>(fn: (sql: Sql) => Promise<T>): Promise<T> {
    let client: pg.PoolClient;
    try {
      client = await (await this.connected()).connect();
    } catch (error) {
      throw mapDbError(error);
    }
    try {
      await client.query("begin");
      const result = await fn(sqlOn(client));
      await client.query("commit");
      return result;
    } catch (error) {
      await client.query("rollback").catch(() => {});
      throw error;
    } finally {
      client.release();
    }
  }

  /**
   * Runs `fn` in a transaction as role `authenticated` with `claims` set, so
   * row level security applies exactly as it does for the user's own requests.
   */
  asUser<T>(claims: SqlClaims, fn: (sql: Sql) => Promise<T>): Promise<T> {
    return this.tx(async (sql) => {
      await sql.query("select set_config('request.jwt.claims', $1, true)", [
        JSON.stringify(claims),
      ]);
      await sql.query("set local role authenticated");
      return await fn(sql);
    });
  }

  /** Closes every connection. */
  async close(): Promise<void> {
    this.closed = true;
    const pool = await this.pool;
    this.pool = undefined;
    await pool?.end();
  }
}
