/**
 * A fresh database per test file, cloned from the migrated template that
 * `tests/run.ts` builds once per run.
 *
 * @module
 */
import pg from "pg";

/** A database of one's own for a test file. */
export interface TestDatabase {
  /**
   * Connection URL as the local superuser `supabase_admin` (fixtures may do
   * anything; `postgresRoleUrl` in local/db/postgres.ts gives the `postgres`
   * login that migrations and the local stack's functions use).
   */
  url: string;
  /** A pool on {@linkcode TestDatabase.url}. */
  pool: pg.Pool;
  /** Closes the pool and drops the database. */
  close(): Promise<void>;
}

/** Clones the template into a new database; needs `deno task test`'s environment. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const adminUrl = Deno.env.get("TEST_DATABASE_URL");
  const template = Deno.env.get("TEST_TEMPLATE_DATABASE");
  const runId = Deno.env.get("TEST_RUN_ID") ?? "adhoc";
  if (!adminUrl || !template) {
    throw new Error(
      "Cannot create a test database: run the tests with `deno task test`, which provides TEST_DATABASE_URL and TEST_TEMPLATE_DATABASE",
    );
  }
  const name = `t_${runId}_${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`;
  await cloneTemplate(adminUrl, template, name);
  const url = withDatabase(adminUrl, name);
  const pool = new pg.Pool({ connectionString: url, max: 10 });
  return {
    url,
    pool,
    async close() {
      await pool.end();
      await dropDatabase(adminUrl, name);
    },
  };
}

/** Creates `name` from `template`, retrying while another clone holds the template. */
async function cloneTemplate(adminUrl: string, template: string, name: string) {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    for (let attempt = 0;; attempt++) {
      try {
        // Owned by `postgres`, as hosted's database is (local/db/platform.sql).
        await admin.query(`create database "${name}" template "${template}" owner postgres`);
        return;
      } catch (error) {
        const busy = error instanceof Error &&
          /being accessed by other users/.test(error.message);
        if (!busy || attempt >= 50) throw error;
        await new Promise((resolve) => setTimeout(resolve, 50 + Math.random() * 100));
      }
    }
  } finally {
    await admin.end();
  }
}

/**
 * A new empty database on the test server (not the migrated template), for
 * tests that migrate or start the stack themselves; `tag` marks its name.
 * The run's cleanup drops it with the others.
 */
export async function createEmptyDatabase(tag: string): Promise<string> {
  const admin = Deno.env.get("TEST_DATABASE_URL");
  if (!admin) {
    throw new Error("Cannot create a test database: run the tests with `deno task test`");
  }
  const name = `t_${Deno.env.get("TEST_RUN_ID") ?? "adhoc"}_${tag}_${
    crypto.randomUUID().slice(0, 8)
  }`;
  const client = new pg.Client({ connectionString: admin });
  await client.connect();
  try {
    await client.query(`create database "${name}"`);
  } finally {
    await client.end();
  }
  return withDatabase(admin, name);
}

/**
 * Drops database `name` once the connections this process closed have left
 * it. `pg.Pool.end()` resolves as soon as it has asked its clients to end,
 * not when their sockets closed: a `drop … with (force)` at that moment
 * terminates a backend whose client no longer has an error listener, and
 * the "terminating connection due to administrator command" error is then
 * uncaught and fails the test file. So wait (up to 5 s) for the backends to
 * go, then force what is left.
 */
export async function dropDatabase(adminUrl: string, name: string): Promise<void> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    for (let waited = 0; waited < 5_000; waited += 25) {
      const { rows } = await admin.query<{ n: number }>(
        "select count(*)::int as n from pg_stat_activity where datname = $1",
        [name],
      );
      if (rows[0]!.n === 0) break;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    await admin.query(`drop database if exists "${name}" with (force)`);
  } finally {
    await admin.end();
  }
}

/** The URL of another database on the same server. */
export function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

/**
 * `Deno.test` for tests that use a test database: pooled sockets outlive a
 * single test by design, so the op and resource sanitizers are off.
 */
export function sqlTest(name: string, fn: () => Promise<void>): void {
  Deno.test({ name, fn, sanitizeOps: false, sanitizeResources: false });
}
