import assert from "node:assert/strict";
import pg from "pg";
import { createHash } from "node:crypto";
import { AppliedMigrationChangedError, listMigrations, migrate } from "../../local/db/migrate.ts";
import { createEmptyDatabase, sqlTest } from "../support/db.ts";

/** An empty database (not the migrated template). */
function emptyDatabase(): Promise<string> {
  return createEmptyDatabase("mig");
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
  assert.deepEqual(await migrate(url, { includePlatform: true, migrationsDir: dir }), [
    "001",
    "002",
  ]);
  assert.deepEqual(await migrate(url, { includePlatform: true, migrationsDir: dir }), []);
  await Deno.writeTextFile(`${dir}/003_three.sql`, "insert into public.one values (3);");
  assert.deepEqual(await migrate(url, { includePlatform: true, migrationsDir: dir }), ["003"]);
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
  await assert.rejects(migrate(url, { includePlatform: true, migrationsDir: dir }), /"002_broken"/);
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
  await migrate(url, { includePlatform: true, migrationsDir: dir });
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
    await migrate(url, { includePlatform: true, migrationsDir: dir });
    await Deno.writeTextFile(`${dir}/002_two.sql`, "insert into public.one values (2);");
    await Deno.writeTextFile(`${dir}/003_three.sql`, "create table public.three (id int);");
    const error = await migrate(url, { includePlatform: true, migrationsDir: dir }).then(
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
    await migrate(url, { includePlatform: true, migrationsDir: dir });
    // A database migrated before the rule: the CLI's table, no checksum column.
    await sql(url, "alter table supabase_migrations.schema_migrations drop column checksum");

    assert.deepEqual(await migrate(url, { includePlatform: true, migrationsDir: dir }), []);
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
      migrate(url, { includePlatform: true, migrationsDir: dir }),
      (e: unknown) => e instanceof AppliedMigrationChangedError && /"002_two\.sql"/.test(e.message),
    );
    assert.equal((await tracked(url))[1]!.checksum, null, "nothing recorded on refusal");

    // A row the Supabase CLI wrote (split into statements) cannot be compared: it is trusted.
    await sql(
      url,
      `update supabase_migrations.schema_migrations
       set statements = array['insert into public.one', 'values (1)'] where version = '002'`,
    );
    assert.deepEqual(await migrate(url, { includePlatform: true, migrationsDir: dir }), []);
    assert.equal((await tracked(url))[1]!.checksum, sha256(two));
  },
);

/** A folder of migration files named `<version>_<name>.sql`. */
async function migrationsDir(files: Record<string, string>): Promise<string> {
  const dir = await Deno.makeTempDir();
  for (const [name, text] of Object.entries(files)) {
    await Deno.writeTextFile(`${dir}/${name}.sql`, text);
  }
  return dir;
}

const POLICY = `
drop policy if exists "Owners read their files" on storage.objects;
create policy "Owners read their files" on storage.objects
  for select to authenticated
  using (bucket_id = 'files' and owner_id = (select auth.uid())::text);
alter policy "Owners read their files" on storage.objects to authenticated, service_role;
drop policy if exists "Users read their topic" on realtime.messages;
create policy "Users read their topic" on realtime.messages
  for select to authenticated using (realtime.topic() = 'user:' || (select auth.uid())::text);
`;

sqlTest(
  "migrations apply as a non-superuser postgres: policies on platform tables are allowed, as supautils allows them",
  async () => {
    const url = await emptyDatabase();
    const dir = await migrationsDir({
      "001_policies": POLICY,
      "002_who": `create table public.who as
        select current_user as name, (select rolsuper from pg_roles where rolname = current_user) as super;`,
    });
    assert.deepEqual(await migrate(url, { includePlatform: true, migrationsDir: dir }), [
      "001",
      "002",
    ]);
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const { rows: who } = await client.query("select name, super from public.who");
      assert.deepEqual(who, [{ name: "postgres", super: false }]);
      const { rows: owner } = await client.query(
        "select pg_get_userbyid(relowner) as owner from pg_class where oid = 'public.who'::regclass",
      );
      assert.deepEqual(owner, [{ owner: "postgres" }]);
      const { rows: policies } = await client.query(
        `select schemaname, tablename, policyname, roles::text[] as roles from pg_policies
         where schemaname in ('storage', 'realtime') order by 1`,
      );
      assert.deepEqual(policies, [
        {
          schemaname: "realtime",
          tablename: "messages",
          policyname: "Users read their topic",
          roles: ["authenticated"],
        },
        {
          schemaname: "storage",
          tablename: "objects",
          policyname: "Owners read their files",
          roles: ["authenticated", "service_role"],
        },
      ]);
      const { rows: left } = await client.query(
        "select count(*)::int as n from supautils_local.granted_statements",
      );
      assert.deepEqual(left, [{ n: 0 }], "nothing granted is left behind");
    } finally {
      await client.end();
    }
  },
);

sqlTest(
  "statements that need ownership of a platform table fail as on hosted: must be owner of …",
  async () => {
    const refused: Array<[string, RegExp]> = [
      [
        `comment on policy "Owners read their files" on storage.objects is 'Owners read them';`,
        /must be owner of relation objects/,
      ],
      [
        `comment on policy "Users read their topic" on realtime.messages is 'Their topic';`,
        /must be owner of relation messages/,
      ],
      ["comment on table storage.objects is 'Files';", /must be owner of table objects/],
      ["alter table storage.objects add column note text;", /must be owner of table objects/],
      ["alter table auth.users enable row level security;", /must be owner of table users/],
      ["create index if not exists users_aud on auth.users (aud);", /must be owner of table users/],
      [
        `alter policy "Owners read their files" on storage.objects rename to "Owners' files";`,
        /must be owner of (table|relation) objects/,
      ],
    ];
    for (const [statement, error] of refused) {
      const url = await emptyDatabase();
      const dir = await migrationsDir({
        "001_policies": POLICY,
        "002_owner_only": `-- needs ownership\nselect 1;\n${statement}\n`,
      });
      await assert.rejects(
        migrate(url, { includePlatform: true, migrationsDir: dir }),
        (e: unknown) => {
          const message = e instanceof Error ? e.message : String(e);
          assert.match(message, /^Cannot apply migration "002_owner_only" \(line 3\): /, statement);
          assert.match(message, error, statement);
          return true;
        },
      );
      assert.deepEqual(await versions(url), ["001"], statement);
    }
  },
);

sqlTest("a migration cannot reach the superuser from its postgres login", async () => {
  for (
    const [statement, error] of [
      ["reset role; set role supabase_admin;", /permission denied to set role "supabase_admin"/],
      [
        "set session authorization supabase_admin;",
        /permission denied to set session authorization/,
      ],
      ["alter role postgres superuser;", /permission denied to alter role/],
      ["grant supabase_storage_admin to postgres;", /permission denied to grant role/],
      [
        `select supautils_local.run_granted_statement('x', 'alter role postgres superuser');`,
        /not granted by the migration runner/,
      ],
      [
        "insert into supautils_local.granted_statements values ('x', 'alter role postgres superuser');",
        /permission denied for table granted_statements/,
      ],
    ] as const
  ) {
    const url = await emptyDatabase();
    const dir = await migrationsDir({ "001_escalate": statement });
    await assert.rejects(
      migrate(url, { includePlatform: true, migrationsDir: dir }),
      error,
      statement,
    );
    assert.deepEqual(await versions(url), [], statement);
  }
});

sqlTest("two runs at once on one database: the second waits, then applies nothing", async () => {
  const url = await emptyDatabase();
  const dir = await migrationsDir({
    // Slow enough that the second run reaches it while the first applies it.
    "001_policies": `${POLICY}\nselect pg_sleep(0.5);\n`,
    "002_two": "create table public.two (id int);",
  });
  const runs = await Promise.allSettled([
    migrate(url, { includePlatform: true, migrationsDir: dir }),
    migrate(url, { includePlatform: true, migrationsDir: dir }),
  ]);
  const outcomes = runs.map((run) =>
    run.status === "fulfilled" ? run.value : `failed: ${(run.reason as Error).message}`
  );
  assert.deepEqual(outcomes.map((outcome) => JSON.stringify(outcome)).sort(), [
    '["001","002"]',
    "[]",
  ]);
  assert.deepEqual(await versions(url), ["001", "002"]);
});

sqlTest("a run removes what a killed run granted and never ran", async () => {
  const url = await emptyDatabase();
  const dir = await migrationsDir({ "001_policies": POLICY });
  await migrate(url, { includePlatform: true, migrationsDir: dir });
  // As a run killed between recording its policy statements and its `finally` leaves them.
  await sql(
    url,
    `insert into supautils_local.granted_statements (run_id, statement)
     values ('a-killed-run', 'drop policy "Owners read their files" on storage.objects;')`,
  );
  await Deno.writeTextFile(`${dir}/002_two.sql`, "create table public.two (id int);");
  assert.deepEqual(await migrate(url, { includePlatform: true, migrationsDir: dir }), ["002"]);
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query(
      "select count(*)::int as n from supautils_local.granted_statements",
    );
    assert.deepEqual(rows, [{ n: 0 }]);
  } finally {
    await client.end();
  }
});

const DEAL_DOCUMENTS = "20261123002700";
/** The sha256 of 20261123002700_deal_documents.sql before its COMMENT ON POLICY became a `--` comment. */
const DEAL_DOCUMENTS_BEFORE = "baa371257c89239228c3a9d40f4bf668d03baa2f7b5ecc8a151fe49b343b7360";

sqlTest(
  "a database that applied deal_documents before its one allowed edit is accepted and its checksum updated",
  async () => {
    const url = await emptyDatabase();
    await migrate(url, { includePlatform: true });
    const file = listMigrations().find((m) => m.version === DEAL_DOCUMENTS)!;
    const now = sha256(await Deno.readTextFile(file.path));
    assert.notEqual(now, DEAL_DOCUMENTS_BEFORE, "the file is the edited one");
    await sql(
      url,
      `update supabase_migrations.schema_migrations set checksum = '${DEAL_DOCUMENTS_BEFORE}'
       where version = '${DEAL_DOCUMENTS}'`,
    );
    assert.deepEqual(await migrate(url, { includePlatform: true }), []);
    const row = (await tracked(url)).find((r) => r.version === DEAL_DOCUMENTS)!;
    assert.equal(row.checksum, now);

    // Any other earlier content of it is still a changed file…
    await sql(
      url,
      `update supabase_migrations.schema_migrations set checksum = repeat('1', 64)
       where version = '${DEAL_DOCUMENTS}'`,
    );
    await assert.rejects(
      migrate(url, { includePlatform: true }),
      (e: unknown) =>
        e instanceof AppliedMigrationChangedError &&
        e.files.length === 1 && e.files[0] === `${DEAL_DOCUMENTS}_deal_documents.sql`,
    );
    // …and so is another migration recorded with the same old checksum.
    const other = listMigrations()[0]!;
    await sql(
      url,
      `update supabase_migrations.schema_migrations set checksum = case version
         when '${DEAL_DOCUMENTS}' then '${now}' else '${DEAL_DOCUMENTS_BEFORE}' end
       where version in ('${DEAL_DOCUMENTS}', '${other.version}')`,
    );
    await assert.rejects(
      migrate(url, { includePlatform: true }),
      (e: unknown) =>
        e instanceof AppliedMigrationChangedError &&
        e.files.length === 1 && e.files[0] === `${other.version}_${other.name}.sql`,
    );
  },
);
