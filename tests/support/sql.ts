/**
 * SQL helpers for tests: run as a platform role with JWT claims, create users.
 *
 * @module
 */
import pg from "pg";

/** Who a statement runs as, the way PostgREST and `ctx.db.asUser` set it. */
export interface SqlIdentity {
  role: "anon" | "authenticated" | "service_role";
  userId?: string;
  email?: string;
  /** An anonymous sign-in: the JWT carries `is_anonymous: true`. */
  anonymous?: boolean;
  /** The request headers PostgREST passes to SQL as `request.headers` (lower-case names). */
  headers?: Record<string, string>;
}

/**
 * Runs `fn` in a transaction under `identity`'s role with `request.jwt.claims`
 * set, then rolls back so the test leaves nothing behind.
 */
export async function asRole<T>(
  pool: pg.Pool,
  identity: SqlIdentity,
  fn: (client: pg.PoolClient) => Promise<T>,
): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query("begin");
    const claims: Record<string, unknown> = { role: identity.role };
    if (identity.userId) claims.sub = identity.userId;
    if (identity.email) claims.email = identity.email;
    if (identity.role === "authenticated") claims.aud = "authenticated";
    if (identity.anonymous) claims.is_anonymous = true;
    await client.query("select set_config('request.jwt.claims', $1, true)", [
      JSON.stringify(claims),
    ]);
    if (identity.headers) {
      await client.query("select set_config('request.headers', $1, true)", [
        JSON.stringify(identity.headers),
      ]);
    }
    await client.query(`set local role ${identity.role}`);
    return await fn(client);
  } finally {
    await client.query("rollback").catch(() => {});
    client.release();
  }
}

/**
 * Runs `sql` as signed-in `user` through RLS and commits it, as a supabase-js
 * call would; answers its rows.
 */
export async function queryAs<T extends pg.QueryResultRow = Record<string, unknown>>(
  pool: pg.Pool,
  user: { id: string },
  sql: string,
  params: unknown[] = [],
): Promise<T[]> {
  return await asRole(pool, { role: "authenticated", userId: user.id }, async (client) => {
    const { rows } = await client.query<T>(sql, params);
    await client.query("commit");
    return rows;
  });
}

/** A user created in `auth.users`. */
export interface TestUser {
  id: string;
  email: string;
  /** Whether the address is confirmed (`email_confirmed_at` set). */
  email_confirmed: boolean;
}

/**
 * Inserts a user into `auth.users` (its profile follows by trigger);
 * optionally an admin, optionally with a confirmed address.
 */
export async function createUser(
  pool: pg.Pool,
  options: { email?: string; admin?: boolean; createdAt?: Date; confirmed?: boolean } = {},
): Promise<TestUser> {
  const email = options.email ??
    `user-${crypto.randomUUID().slice(0, 8)}@example.test`;
  const confirmed = options.confirmed ?? false;
  const { rows } = await pool.query<{ id: string }>(
    `insert into auth.users (email, created_at, email_confirmed_at)
     values ($1, coalesce($2, now()), case when $3 then now() end) returning id`,
    [email, options.createdAt ?? null, confirmed],
  );
  const id = rows[0]!.id;
  if (options.admin) {
    await pool.query(
      "insert into public.user_roles (user_id, role) values ($1, 'admin') on conflict do nothing",
      [id],
    );
  }
  return { id, email, email_confirmed: confirmed };
}

/** One statement of a race: who runs it, and what. */
export interface RacingCall {
  who: SqlIdentity;
  sql: string;
  params?: unknown[];
}

/**
 * Runs every call at once, each in its own transaction on its own connection
 * of a pool of their own: all transactions are open (role and claims set)
 * before the first statement is sent, and each commits after its statement.
 * Answers each call's rows, or its error.
 */
export async function raceCalls(
  url: string,
  calls: RacingCall[],
): Promise<PromiseSettledResult<Record<string, unknown>[]>[]> {
  const pool = new pg.Pool({ connectionString: url, max: calls.length });
  try {
    let arrived = 0;
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    return await Promise.allSettled(
      calls.map(({ who, sql, params }) =>
        asRole(pool, who, async (c) => {
          arrived += 1;
          if (arrived === calls.length) open();
          await gate;
          const { rows } = await c.query(sql, params ?? []);
          await c.query("commit");
          return rows;
        })
      ),
    );
  } finally {
    await pool.end();
  }
}

/** The SQLSTATE of a settled call that failed (undefined when it succeeded). */
export function settledCode(result: PromiseSettledResult<unknown>): string | undefined {
  return result.status === "rejected" ? (result.reason as { code?: string }).code : undefined;
}

/**
 * Runs `sql` as `who` and commits, as a supabase-js call does; answers the
 * first column of its first row (an RPC's result).
 */
export async function valueAs<T = unknown>(
  pool: pg.Pool,
  who: SqlIdentity,
  sql: string,
  params: unknown[] = [],
): Promise<T> {
  return await asRole(pool, who, async (c) => {
    const { rows } = await c.query(sql, params);
    await c.query("commit");
    return Object.values(rows[0] ?? {})[0] as T;
  });
}

/** The database error `sql` fails with as `who` (nothing is committed); throws if it succeeds. */
export async function failureAs(
  pool: pg.Pool,
  who: SqlIdentity,
  sql: string,
  params: unknown[] = [],
): Promise<{ code: string; message: string; hint?: string }> {
  return await asRole(pool, who, async (c) => {
    try {
      await c.query(sql, params);
    } catch (error) {
      return error as { code: string; message: string; hint?: string };
    }
    throw new Error(`Expected ${sql} to fail as ${JSON.stringify(who)}`);
  });
}
