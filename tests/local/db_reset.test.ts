import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import pg from "pg";
import {
  localClusterDir,
  ResetError,
  resetLocalDatabase,
  runningServerPid,
} from "../../local/db/db_reset.ts";
import { listMigrations } from "../../local/db/migrate.ts";
import { withClient } from "../../local/db/pg_client.ts";
import {
  freePort,
  LOCAL_DB_USER,
  postgresRoleUrl,
  PostgresStartError,
  startPostgres,
} from "../../local/db/postgres.ts";

const DB_RESET = fileURLToPath(new URL("../../local/db/db_reset.ts", import.meta.url));

/** A fresh state folder (0700, like a private clone's) and the cluster folder it maps to. */
async function state(): Promise<{ dir: string; cluster: string; remove(): Promise<void> }> {
  const dir = await Deno.makeTempDir({ prefix: "db-reset-" });
  const cluster = await localClusterDir(dir);
  return {
    dir,
    cluster,
    async remove() {
      await Deno.remove(dir, { recursive: true }).catch(() => {});
      await Deno.remove(cluster, { recursive: true }).catch(() => {});
    },
  };
}

async function runReset(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", DB_RESET, ...args],
    env: { SUPABASE_DB_URL: "", ...env },
    stdin: "null",
  }).output();
  const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  return { code: out.code, stdout: text(out.stdout), stderr: text(out.stderr) };
}

Deno.test("db:reset refuses without --yes and says what it would do", async () => {
  const s = await state();
  try {
    const result = await runReset([], { LOCAL_STATE_DIR: s.dir, DB_PORT: String(freePort()) });
    assert.equal(result.code, 1);
    assert.equal(result.stderr.trim().split("\n").length, 1, result.stderr);
    assert.match(result.stderr, /^Cannot reset without --yes: it would delete the local database/);
    assert.ok(result.stderr.includes(s.cluster), result.stderr);
    assert.match(result.stderr, new RegExp(`${listMigrations().length} migrations`));
    assert.match(result.stderr, /`deno task db:reset --yes`/);
  } finally {
    await s.remove();
  }
});

Deno.test("db:reset refuses with SUPABASE_DB_URL set: it only resets the embedded database", async () => {
  const s = await state();
  try {
    await assert.rejects(
      resetLocalDatabase({
        yes: true,
        env: { SUPABASE_DB_URL: "postgresql://postgres:postgres@127.0.0.1:1/remote" },
        stateDir: s.dir,
        log: () => {},
      }),
      (error: unknown) =>
        error instanceof ResetError && /SUPABASE_DB_URL is set/.test(error.message) &&
        /only resets the embedded local database/.test(error.message),
    );
  } finally {
    await s.remove();
  }
});

Deno.test("db:reset refuses while a server runs on the cluster (postmaster.pid)", async () => {
  const s = await state();
  try {
    await Deno.mkdir(s.cluster, { recursive: true });
    await Deno.writeTextFile(`${s.cluster}/postmaster.pid`, `${Deno.pid}\n${s.cluster}\n`);
    await Deno.writeTextFile(`${s.cluster}/PG_VERSION`, "17\n");
    await assert.rejects(
      resetLocalDatabase({ yes: true, env: {}, stateDir: s.dir, log: () => {} }),
      (error: unknown) =>
        error instanceof ResetError &&
        error.message.includes(`server (pid ${Deno.pid}) is running on ${s.cluster}`) &&
        /stop `deno task start` first/.test(error.message),
    );
    assert.equal(await Deno.readTextFile(`${s.cluster}/PG_VERSION`), "17\n", "nothing deleted");
  } finally {
    await s.remove();
  }
});

Deno.test({
  name: "db:reset --yes deletes the cluster and rebuilds it: migrations and seed, then stops",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const s = await state();
    const port = String(freePort());
    try {
      const first = await runReset(["--yes"], { LOCAL_STATE_DIR: s.dir, DB_PORT: port });
      assert.equal(first.code, 0, first.stderr);
      assert.match(
        first.stdout,
        /Local database rebuilt in .*: \d+ migration\(s\) applied, seeded/,
      );
      await Deno.writeTextFile(`${s.cluster}/left-behind`, "from before the reset");

      const second = await runReset(["--yes"], { LOCAL_STATE_DIR: s.dir, DB_PORT: port });
      assert.equal(second.code, 0, second.stderr);
      assert.ok(second.stdout.includes(`Deleted ${s.cluster}`), second.stdout);
      await assert.rejects(Deno.stat(`${s.cluster}/left-behind`), Deno.errors.NotFound);
      await assert.rejects(Deno.stat(`${s.cluster}/postmaster.pid`), Deno.errors.NotFound);

      const server = await startPostgres({
        dataDir: `${s.dir}/db`,
        port: freePort(),
        persistent: true,
      });
      try {
        assert.equal(server.dataDir, s.cluster);
        const client = new pg.Client({ connectionString: server.url });
        await client.connect();
        try {
          const { rows: [migrated] } = await client.query(
            "select count(*)::int as n from supabase_migrations.schema_migrations where checksum is not null",
          );
          assert.equal(migrated.n, listMigrations().length);
          const { rows: [seeded] } = await client.query(
            "select count(*)::int as n from auth.users where email like '%@example.com'",
          );
          assert.ok(seeded.n >= 4, "seed users are present");
        } finally {
          await client.end();
        }
      } finally {
        await server.stop();
      }
    } finally {
      await s.remove();
    }
  },
});

Deno.test({
  name:
    "a cluster whose superuser is postgres (made before hosted's roles were modelled) is refused with the fix, and db:reset rebuilds it",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const s = await state();
    try {
      // A cluster as the local stack used to make it: its bootstrap superuser
      // named "postgres" (password "postgres").
      const made = await startPostgres({
        dataDir: `${s.dir}/db`,
        port: freePort(),
        persistent: true,
      });
      try {
        await withClient(
          made.url,
          (c) => c.query("create role renamer superuser login password 'renamer'"),
        );
        const renamer = new URL(made.url);
        renamer.username = "renamer";
        renamer.password = "renamer";
        await withClient(
          renamer.toString(),
          (c) => c.query(`alter role ${LOCAL_DB_USER} rename to postgres`),
        );
        await withClient(postgresRoleUrl(made.url), (c) => c.query("drop role renamer"));
      } finally {
        await made.stop();
      }

      await assert.rejects(
        startPostgres({ dataDir: `${s.dir}/db`, port: freePort(), persistent: true }),
        (error: unknown) =>
          error instanceof PostgresStartError &&
          error.message.split("\n").length === 1 &&
          error.message.includes(s.cluster) &&
          /created when its superuser was "postgres"/.test(error.message) &&
          /`deno task db:reset --yes`/.test(error.message),
      );
      assert.deepEqual(await runningServerPid(s.cluster), null, "the server was stopped");

      await resetLocalDatabase({
        yes: true,
        env: {},
        stateDir: s.dir,
        port: freePort(),
        log: () => {},
      });
      const server = await startPostgres({
        dataDir: `${s.dir}/db`,
        port: freePort(),
        persistent: true,
      });
      try {
        const { rows } = await withClient(postgresRoleUrl(server.url), (c) =>
          c.query(
            "select current_user as name, (select rolname from pg_roles where oid = 10) as superuser",
          ));
        assert.deepEqual(rows, [{ name: "postgres", superuser: LOCAL_DB_USER }]);
      } finally {
        await server.stop();
      }
    } finally {
      await s.remove();
    }
  },
});
