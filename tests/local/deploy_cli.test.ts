/**
 * The real Supabase CLI (the pinned release, installed by the same function
 * `deno task check:deploy` uses) against our databases:
 *
 * - a database our runner migrated as `deno task start` does holds the CLI's
 *   history: `db push --dry-run` finds nothing to push, and `migration list`
 *   shows every file of `supabase/migrations/` applied locally and remotely;
 * - `deployCheck` fails naming the file and the statement when the CLI
 *   refuses a migration: a statement that needs ownership of `auth.users`
 *   after every real migration, a syntax error, and a policy rename on
 *   `storage.objects` (which supautils leaves to PostgreSQL), while a policy
 *   supautils' policy_grants allows goes through.
 *
 * @module
 */
import assert from "node:assert/strict";
import { listMigrations, migrate, MIGRATIONS_DIR } from "../../local/db/migrate.ts";
import {
  cliDatabaseUrl,
  deployCheck,
  installSupabaseCli,
  runSupabaseCli,
  SUPABASE_CLI_VERSION,
  type SupabaseCli,
  UP_TO_DATE,
} from "../../local/checks/check_deploy.ts";
import { REPO_ROOT } from "../../local/paths.ts";
import { createEmptyDatabase, sqlTest } from "../support/db.ts";

let installed: Promise<SupabaseCli> | undefined;
/** The pinned CLI, installed once per test process. */
function cli(): Promise<SupabaseCli> {
  installed ??= installSupabaseCli();
  return installed;
}

/**
 * A folder with the repository's `supabase/config.toml` and `.env`, and as
 * migrations the repository's (when `withRepoMigrations`) plus `extra`.
 */
async function repoCopy(
  extra: Record<string, string>,
  withRepoMigrations: boolean,
): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "market-deploy-repo-" });
  await Deno.mkdir(`${dir}/supabase/migrations`, { recursive: true });
  for (const file of ["config.toml", ".env"]) {
    await Deno.copyFile(`${REPO_ROOT}supabase/${file}`, `${dir}/supabase/${file}`);
  }
  if (withRepoMigrations) {
    for (const m of listMigrations()) {
      await Deno.copyFile(m.path, `${dir}/supabase/migrations/${m.version}_${m.name}.sql`);
    }
  }
  for (const [name, sql] of Object.entries(extra)) {
    await Deno.writeTextFile(`${dir}/supabase/migrations/${name}`, sql);
  }
  return dir;
}

sqlTest("the CLI reads the history our runner wrote as complete", async () => {
  const url = await createEmptyDatabase("deploy");
  await migrate(url, { includePlatform: true });
  const supabase = await cli();
  assert.equal(supabase.version, SUPABASE_CLI_VERSION);
  const dbUrl = cliDatabaseUrl(url);

  const dry = await runSupabaseCli(supabase, ["db", "push", "--dry-run", "--db-url", dbUrl]);
  assert.equal(dry.code, 0, dry.stderr);
  assert.match(dry.stdout + dry.stderr, new RegExp(UP_TO_DATE.replaceAll(".", "\\.")));
  assert.doesNotMatch(dry.stdout + dry.stderr, /Would push/);

  const list = await runSupabaseCli(supabase, ["migration", "list", "--db-url", dbUrl]);
  assert.equal(list.code, 0, list.stderr);
  // Rows of its table: "   `20261121000000` | `20261121000000` | `2026-11-21 00:00:00` "
  const rows = [...list.stdout.matchAll(/^\s*`?(\d*)`?\s*\|\s*`?(\d*)`?\s*\|/gm)]
    .map((m) => ({ local: m[1]!, remote: m[2]! }));
  const versions = listMigrations(MIGRATIONS_DIR).map((m) => m.version);
  assert.ok(versions.length > 0);
  assert.deepEqual(rows.map((r) => r.local), versions, list.stdout);
  assert.deepEqual(rows.map((r) => r.remote), versions, list.stdout);
});

sqlTest(
  "deployCheck names the migration and the statement the CLI refuses (ownership)",
  async () => {
    const broken = "20991231000000_broken.sql";
    const repo = await repoCopy({
      [broken]: "-- broken on purpose\ncreate table public.deploy_ok (id int);\n\n" +
        "alter table auth.users add column x int;\n",
    }, true);
    try {
      const result = await deployCheck({ repo, cli: await cli() });
      assert.equal(result.ok, false);
      if (result.ok) return;
      assert.deepEqual(result.refused, {
        file: broken,
        line: 4,
        statement: "alter table auth.users add column x int",
        error: "must be owner of table users (SQLSTATE 42501)",
      });
      assert.match(result.message, new RegExp(`refused migration ${broken}:4: must be owner`));
      assert.match(result.message, /statement: alter table auth\.users add column x int/);
    } finally {
      await Deno.remove(repo, { recursive: true });
    }
  },
);

sqlTest("deployCheck passes a granted policy and names a syntax error", async () => {
  const repo = await repoCopy({
    "20990101000000_policy.sql": `create policy "anyone reads" on storage.objects
  for select to authenticated using (true);
drop policy "anyone reads" on storage.objects;
`,
    "20990101000100_typo.sql": "select 1;\ncreate tabel public.t (id int);\n",
  }, false);
  try {
    const result = await deployCheck({ repo, cli: await cli() });
    assert.equal(result.ok, false);
    if (result.ok) return;
    assert.equal(result.refused?.file, "20990101000100_typo.sql", result.message);
    assert.equal(result.refused?.statement, "create tabel public.t (id int)");
    assert.equal(result.refused?.line, 2);
    assert.match(result.refused?.error ?? "", /syntax error at or near "tabel"/);
  } finally {
    await Deno.remove(repo, { recursive: true });
  }
});

sqlTest(
  "deployCheck refuses a policy rename on storage.objects and passes what is fine",
  async () => {
    const policy =
      `create policy "p" on storage.objects for select to authenticated using (true);\n`;
    const renamed = await repoCopy({
      "20990101000000_policy.sql": policy,
      "20990101000100_rename.sql": `alter policy "p" on storage.objects rename to "q";\n`,
    }, false);
    const fine = await repoCopy({
      "20990101000000_policy.sql": policy,
      "20990101000100_alter.sql": `alter policy "p" on storage.objects to anon, authenticated;\n`,
    }, false);
    try {
      const refused = await deployCheck({ repo: renamed, cli: await cli() });
      assert.equal(refused.ok, false);
      if (refused.ok) return;
      assert.equal(refused.refused?.file, "20990101000100_rename.sql", refused.message);
      assert.match(refused.refused?.error ?? "", /must be owner of table objects/);

      const passed = await deployCheck({ repo: fine, cli: await cli() });
      assert.ok(passed.ok, passed.ok ? "" : passed.message);
      assert.deepEqual(passed.applied, ["20990101000000_policy.sql", "20990101000100_alter.sql"]);
      assert.equal(passed.secondPush, UP_TO_DATE);
    } finally {
      await Deno.remove(renamed, { recursive: true });
      await Deno.remove(fine, { recursive: true });
    }
  },
);
