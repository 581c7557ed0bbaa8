/**
 * A fresh database per test file, cloned from the migrated template that
 * `tests/run.ts` builds once per run.
 *
 * @module
 */
import pg from "pg";

/** A database of one's own for a test file. */
export interface TestDatabase {
  /** Connection URL (superuser, like the functions' service connection). */
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
      const admin = new pg.Client({ connectionString: adminUrl });
      await admin.connect();
      try {
        await admin.query(`drop database if exists "${name}" with (force)`);
      } finally {
        await admin.end();
      }
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
        await admin.query(`create database "${name}" template "${template}"`);
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
