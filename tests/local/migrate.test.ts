import assert from "node:assert/strict";
import pg from "pg";
import { createHash } from "node:crypto";
import { AppliedMigrationChangedError, listMigrations, migrate } from "../../local/migrate.ts";
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

// Re-run right after it applied, as a retried deploy would: a later
// migration may extend what an earlier one defined (a view gains columns),
// and replaying the earlier file over it would be a rollback, not a re-run.
sqlTest("every migration file is safe to re-run right after it applied", async () => {
  const url = await emptyDatabase();
  const none = await Deno.makeTempDir();
  try {
    await migrate(url, { includePlatform: true, migrationsDir: none });
  } finally {
    await Deno.remove(none);
  }
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    for (const migration of listMigrations()) {
      const text = await Deno.readTextFile(migration.path);
      await client.query(text);
      await client.query(text).catch((error) => {
        throw new Error(
          `${migration.version}_${migration.name} is not re-runnable: ${error.message}`,
        );
      });
    }
  } finally {
    await client.end();
  }
});

/** The tracking rows as (version, checksum, statements). */
async function tracked(
  url: string,
): Promise<Array<{ version: string; checksum: string | null; statements: string[] | null }>> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query(
      "select version, checksum, statements from supabase_migrations.schema_migrations order by version",
    );
    return rows;
  } finally {
    await client.end();
  }
}

async function sql(url: string, text: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

sqlTest("migrate() records each applied file's sha256", async () => {
  const url = await emptyDatabase();
  const dir = await Deno.makeTempDir();
  const one = "create table public.one (id int);";
  const two = "insert into public.one values (1);\n";
  await Deno.writeTextFile(`${dir}/001_one.sql`, one);
  await Deno.writeTextFile(`${dir}/002_two.sql`, two);
  await migrate(url, { migrationsDir: dir });
  assert.deepEqual((await tracked(url)).map((r) => [r.version, r.checksum]), [
    ["001", sha256(one)],
    ["002", sha256(two)],
  ]);
});

sqlTest(
  "migrate() refuses an applied migration whose file changed, names it and the fix, applies nothing",
  async () => {
    const url = await emptyDatabase();
    const dir = await Deno.makeTempDir();
    await Deno.writeTextFile(`${dir}/001_one.sql`, "create table public.one (id int);");
    await Deno.writeTextFile(`${dir}/002_two.sql`, "insert into public.one values (1);");
    await migrate(url, { migrationsDir: dir });
    await Deno.writeTextFile(`${dir}/002_two.sql`, "insert into public.one values (2);");
    await Deno.writeTextFile(`${dir}/003_three.sql`, "create table public.three (id int);");
    const error = await migrate(url, { migrationsDir: dir }).then(
      () => assert.fail("migrate() accepted a changed migration"),
      (e: unknown) => e,
    );
    assert.ok(error instanceof AppliedMigrationChangedError);
    assert.deepEqual(error.files, ["002_two.sql"]);
    assert.equal(error.message.split("\n").length, 1);
    assert.match(error.message, /"002_two\.sql" changed after it was applied/);
    assert.match(error.message, /put the change in a new migration/);
    assert.match(error.message, /`deno task db:reset --yes`/);
    assert.deepEqual(await versions(url), ["001", "002"], "003 was not applied");
  },
);

sqlTest(
  "migrate() checks rows applied before checksums by their statements, then records the checksum",
  async () => {
    const url = await emptyDatabase();
    const dir = await Deno.makeTempDir();
    const one = "create table public.one (id int);";
    const two = "insert into public.one values (1);";
    await Deno.writeTextFile(`${dir}/001_one.sql`, one);
    await Deno.writeTextFile(`${dir}/002_two.sql`, two);
    await migrate(url, { migrationsDir: dir });
    // A database migrated before the rule: the CLI's table, no checksum column.
    await sql(url, "alter table supabase_migrations.schema_migrations drop column checksum");

    assert.deepEqual(await migrate(url, { migrationsDir: dir }), []);
    assert.deepEqual((await tracked(url)).map((r) => [r.version, r.checksum]), [
      ["001", sha256(one)],
      ["002", sha256(two)],
    ]);

    // A legacy row whose statements differ from the file: the file changed.
    await sql(
      url,
      `update supabase_migrations.schema_migrations
       set checksum = null, statements = array['insert into public.one values (0);']
       where version = '002'`,
    );
    await assert.rejects(
      migrate(url, { migrationsDir: dir }),
      (e: unknown) => e instanceof AppliedMigrationChangedError && /"002_two\.sql"/.test(e.message),
    );
    assert.equal((await tracked(url))[1]!.checksum, null, "nothing recorded on refusal");

    // A row the Supabase CLI wrote (split into statements) cannot be compared: it is trusted.
    await sql(
      url,
      `update supabase_migrations.schema_migrations
       set statements = array['insert into public.one', 'values (1)'] where version = '002'`,
    );
    assert.deepEqual(await migrate(url, { migrationsDir: dir }), []);
    assert.equal((await tracked(url))[1]!.checksum, sha256(two));
  },
);
