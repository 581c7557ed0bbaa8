import assert from "node:assert/strict";
import pg from "pg";
import { listMigrations, migrate } from "../../local/migrate.ts";
import { sqlTest, withDatabase } from "../support/db.ts";

/** A new empty database on the test server. */
async function emptyDatabase(): Promise<string> {
  const admin = Deno.env.get("TEST_DATABASE_URL")!;
  const name = `t_${Deno.env.get("TEST_RUN_ID")}_mig_${crypto.randomUUID().slice(0, 8)}`;
  const client = new pg.Client({ connectionString: admin });
  await client.connect();
  await client.query(`create database "${name}"`);
  await client.end();
  return withDatabase(admin, name);
}

async function versions(url: string): Promise<string[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query(
      "select version from supabase_migrations.schema_migrations order by version",
    );
    return rows.map((row) => row.version);
  } finally {
    await client.end();
  }
}

sqlTest("migrate() applies each migration once and a restart applies only new ones", async () => {
  const url = await emptyDatabase();
  const dir = await Deno.makeTempDir();
  await Deno.writeTextFile(`${dir}/001_one.sql`, "create table public.one (id int);");
  await Deno.writeTextFile(`${dir}/002_two.sql`, "insert into public.one values (1);");
  await Deno.writeTextFile(`${dir}/notes.txt`, "not a migration");
  assert.deepEqual(await migrate(url, { migrationsDir: dir }), ["001", "002"]);
  assert.deepEqual(await migrate(url, { migrationsDir: dir }), []);
  await Deno.writeTextFile(`${dir}/003_three.sql`, "insert into public.one values (3);");
  assert.deepEqual(await migrate(url, { migrationsDir: dir }), ["003"]);
  assert.deepEqual(await versions(url), ["001", "002", "003"]);
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const { rows } = await client.query("select count(*)::int as n from public.one");
  await client.end();
  assert.equal(rows[0].n, 2, "002 ran once, not on every start");
});

sqlTest("migrate() rolls a failing migration back, names it and records nothing", async () => {
  const url = await emptyDatabase();
  const dir = await Deno.makeTempDir();
  await Deno.writeTextFile(`${dir}/001_ok.sql`, "create table public.ok (id int);");
  await Deno.writeTextFile(
    `${dir}/002_broken.sql`,
    "create table public.half (id int); select no_such_function();",
  );
  await assert.rejects(migrate(url, { migrationsDir: dir }), /"002_broken"/);
  assert.deepEqual(await versions(url), ["001"]);
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const { rows } = await client.query("select to_regclass('public.half') as t");
  await client.end();
  assert.equal(rows[0].t, null);
});

sqlTest("the project's migrations apply to a fresh database, then again as no-ops", async () => {
  const url = await emptyDatabase();
  const all = listMigrations().map((m) => m.version);
  assert.deepEqual(await migrate(url, { includePlatform: true }), all);
  assert.deepEqual(await migrate(url, { includePlatform: true }), []);
});

sqlTest("every migration file is safe to re-run on the same database", async () => {
  const url = await emptyDatabase();
  await migrate(url, { includePlatform: true });
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    for (const migration of listMigrations()) {
      await client.query(await Deno.readTextFile(migration.path)).catch((error) => {
        throw new Error(
          `${migration.version}_${migration.name} is not re-runnable: ${error.message}`,
        );
      });
    }
  } finally {
    await client.end();
  }
});
