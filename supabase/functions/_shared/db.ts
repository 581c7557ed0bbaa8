/**
 * The database: a `pg` pool on `SUPABASE_DB_URL` with transactions and
 * user-scoped (RLS) execution. Session state is always transaction-local so
 * the pool works behind Supabase's transaction pooler.
 *
 * @module
 */
import pg from "pg";
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

/** JWT claims that RLS reads through `auth.uid()`, `auth.role()` and `auth.jwt()`. */
export interface SqlClaims {
  sub: string;
  role: "authenticated";
  email?: string | null;
  [claim: string]: unknown;
}

type Queryable = pg.Pool | pg.PoolClient;

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
 * messages written for clients) become 409, and privilege refusals (42501,
 * from RLS and grants under `asUser`) 403. Other SQL errors stay as they are
 * (a 500: a bug to fix).
 */
function mapDbError(error: unknown): unknown {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    if (code === "PT409") return new HttpError(409, "conflict", error.message);
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

/** The pool plus transaction helpers; one per runtime. */
export class Db implements Sql {
  private readonly pool: pg.Pool;
  private readonly root: Sql;

  /** Opens a lazy pool (no connection until the first query). */
  constructor(url: string, max = 5) {
    this.pool = new pg.Pool({
      connectionString: url,
      max,
      connectionTimeoutMillis: 5_000,
      idleTimeoutMillis: 10_000,
      allowExitOnIdle: true,
    });
    this.pool.on("error", () => {/* an idle client died; the pool replaces it */});
    this.root = sqlOn(this.pool);
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
      client = await this.pool.connect();
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
  close(): Promise<void> {
    return this.pool.end();
  }
}
