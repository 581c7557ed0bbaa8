/**
 * `deno task check:deploy` (run by CI after `check:migrations`): the tool that
 * deploys, the real Supabase CLI, applies every migration. A migration that
 * only our runner (`local/db/migrate.ts`) accepts never lands.
 *
 * 1. Installs the pinned CLI ({@linkcode SUPABASE_CLI_VERSION}) from npm into
 *    the git-ignored {@linkcode SUPABASE_CLI_DIR} when the binary there is
 *    missing or reports another version ({@linkcode installSupabaseCli}).
 * 2. Starts a throwaway embedded PostgreSQL built as the local stack builds
 *    it: `local/db/platform.sql` (hosted's roles and owners) as the local
 *    superuser, then `deploy_supautils.sql`, supautils' `policy_grants` for a
 *    client that is not our runner. Our runner applies nothing.
 * 3. Runs `supabase db push --db-url postgresql://postgres:…@127.0.0.1:<port>/postgres?sslmode=disable --yes`
 *    from the repository root (so the CLI reads `supabase/config.toml` and
 *    `supabase/.env`), which logs in as `postgres` as on hosted. When the CLI
 *    refuses a migration, fails naming the file and the statement. Checks that
 *    every file was applied and recorded in `supabase_migrations.schema_migrations`.
 * 4. Pushes again: the CLI must find nothing to do.
 *
 * The database and its folder are removed in every case. Everything runs on
 * 127.0.0.1; the CLI's telemetry and update check are switched off
 * ({@linkcode SUPABASE_CLI_ENV}), so only npm's registry is reached (to install).
 *
 * @module
 */
import { withClient } from "../db/pg_client.ts";
import { listMigrations, PLATFORM_SQL } from "../db/migrate.ts";
import { PLATFORM_SCHEMAS, POLICY_GRANT_TABLES } from "../db/platform_ownership.ts";
import {
  freePort,
  postgresRoleUrl,
  PostgresStartError,
  type RunningPostgres,
  startPostgres,
} from "../db/postgres.ts";
import { REPO_ROOT } from "../paths.ts";

/** The Supabase CLI release CI deploys with (npm package `supabase`). */
export const SUPABASE_CLI_VERSION = "2.117.0";
/** Where the pinned CLI is installed (under the git-ignored `.local/`). */
export const SUPABASE_CLI_DIR = `${REPO_ROOT}.local/tools/supabase-cli`;
/**
 * The environment every CLI run gets on top of the shell's: no telemetry
 * (PostHog; `SUPABASE_TELEMETRY_DISABLED`, `DO_NOT_TRACK`) and no release
 * check (`SUPABASE_NO_UPDATE_NOTIFIER`). Verified with strace: with them the
 * CLI connects to nothing but the database; without, it resolves names.
 */
export const SUPABASE_CLI_ENV: Readonly<Record<string, string>> = {
  SUPABASE_TELEMETRY_DISABLED: "1",
  DO_NOT_TRACK: "1",
  SUPABASE_NO_UPDATE_NOTIFIER: "1",
};
/** supautils' policy_grants for clients other than our runner (applied after platform.sql). */
export const DEPLOY_SUPAUTILS_SQL = new URL("./deploy_supautils.sql", import.meta.url);
/** What the CLI prints when there is nothing to push. */
export const UP_TO_DATE = "Remote database is up to date.";

/** An installed Supabase CLI. */
export interface SupabaseCli {
  /** The `supabase` executable. */
  path: string;
  /** What `supabase --version` printed. */
  version: string;
}

/** The output of one CLI run. */
export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the CLI with `args` in `cwd`, telemetry and update check off. */
export async function runSupabaseCli(
  cli: SupabaseCli | string,
  args: string[],
  cwd: string = REPO_ROOT,
): Promise<CliRun> {
  const path = typeof cli === "string" ? cli : cli.path;
  const output = await new Deno.Command(path, {
    args,
    cwd,
    env: { ...SUPABASE_CLI_ENV },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  return { code: output.code, stdout: decode(output.stdout), stderr: decode(output.stderr) };
}

/** The version the executable at `path` reports, or null when there is none or it does not run. */
async function installedVersion(path: string): Promise<string | null> {
  try {
    const run = await runSupabaseCli(path, ["--version"]);
    return run.code === 0 ? run.stdout.trim() : null;
  } catch {
    return null;
  }
}

/**
 * The pinned CLI in `dir`, installed with npm first when missing or of
 * another version (`npm install --no-save --no-package-lock --prefix <dir>`).
 */
export async function installSupabaseCli(dir: string = SUPABASE_CLI_DIR): Promise<SupabaseCli> {
  const path = `${dir}/node_modules/.bin/supabase`;
  let version = await installedVersion(path);
  if (version !== SUPABASE_CLI_VERSION) {
    await Deno.mkdir(dir, { recursive: true });
    let output: Deno.CommandOutput;
    try {
      output = await new Deno.Command("npm", {
        args: [
          "install",
          "--silent",
          "--no-save",
          "--no-package-lock",
          "--no-audit",
          "--no-fund",
          "--prefix",
          dir,
          `supabase@${SUPABASE_CLI_VERSION}`,
        ],
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).output();
    } catch (error) {
      throw new Error(
        `Cannot install the Supabase CLI ${SUPABASE_CLI_VERSION}: cannot run npm (${
          oneLine(error)
        })`,
      );
    }
    if (!output.success) {
      throw new Error(
        `Cannot install the Supabase CLI ${SUPABASE_CLI_VERSION} into ${dir}: npm install failed: ${
          oneLine(new TextDecoder().decode(output.stderr))
        }`,
      );
    }
    version = await installedVersion(path);
    if (version !== SUPABASE_CLI_VERSION) {
      throw new Error(
        `Cannot install the Supabase CLI ${SUPABASE_CLI_VERSION}: after npm install, ${path} reports ${
          version ?? "nothing"
        }`,
      );
    }
  }
  return { path, version };
}

/** Options for {@linkcode deployCheck}. */
export interface DeployCheckOptions {
  /** A folder holding `supabase/` (config.toml, .env, migrations/): the CLI's working directory. */
  repo: string;
  /** The CLI to push with ({@linkcode installSupabaseCli}). */
  cli: SupabaseCli;
}

/** Where the CLI stopped on a migration it refused. */
export interface RefusedMigration {
  /** The migration's file name, e.g. `20261129000100_x.sql`. */
  file: string;
  /** The statement the CLI printed (as it printed it, trimmed). */
  statement: string;
  /** 1-based line of the statement in the file, when found. */
  line: number | null;
  /** The database's error, e.g. `must be owner of table users (SQLSTATE 42501)`. */
  error: string;
}

/** What {@linkcode deployCheck} found. */
export type DeployCheckResult =
  | {
    ok: true;
    cliVersion: string;
    /** The files the first push applied, in order. */
    applied: string[];
    /** What the second push printed. */
    secondPush: string;
    /** Wall time of the check, in milliseconds. */
    ms: number;
  }
  | {
    ok: false;
    cliVersion: string;
    /** One line: what failed and where. */
    message: string;
    /** Set when the CLI refused a migration. */
    refused?: RefusedMigration;
  };

/**
 * Pushes every migration of `repo/supabase/migrations/` with the real CLI
 * to a throwaway database built like hosted Supabase, then pushes again
 * expecting nothing to do. Always stops the database and removes its folder.
 */
export async function deployCheck(options: DeployCheckOptions): Promise<DeployCheckResult> {
  const started = performance.now();
  const { cli, repo } = options;
  const fail = (message: string, refused?: RefusedMigration): DeployCheckResult => ({
    ok: false,
    cliVersion: cli.version,
    message,
    ...(refused ? { refused } : {}),
  });
  const migrationsDir = `${repo.replace(/\/$/, "")}/supabase/migrations`;
  const files = listMigrations(migrationsDir).map((m) => `${m.version}_${m.name}.sql`);
  const dataDir = await Deno.makeTempDir({ prefix: "market-deploy-pg-" });
  let server: RunningPostgres | undefined;
  try {
    server = await startPostgres({ dataDir, port: freePort(), persistent: false });
    await buildHostedLikeDatabase(server.url);
    const dbUrl = cliDatabaseUrl(server.url);

    const first = await runSupabaseCli(cli, ["db", "push", "--db-url", dbUrl, "--yes"], repo);
    const applied = appliedMigrations(first.stderr + first.stdout);
    if (first.code !== 0) {
      const refused = await refusedMigration(first, migrationsDir);
      if (refused) {
        const where = refused.line ? `${refused.file}:${refused.line}` : refused.file;
        return fail(
          `supabase db push (CLI ${cli.version}) refused migration ${where}: ${refused.error}; statement: ${
            oneLine(refused.statement)
          }`,
          refused,
        );
      }
      return fail(
        `supabase db push (CLI ${cli.version}) failed (exit ${first.code}): ${
          lastLines(first.stderr + first.stdout)
        }`,
      );
    }
    if (applied.join("\n") !== files.join("\n")) {
      const missing = files.filter((f) => !applied.includes(f));
      return fail(
        `supabase db push applied ${applied.length} of ${files.length} migrations; not applied: ${
          missing.join(", ") || "(order differs)"
        }`,
      );
    }
    const recorded = await recordedVersions(server.url);
    const unrecorded = files.filter((f) => !recorded.has(f.slice(0, f.indexOf("_"))));
    if (unrecorded.length > 0) {
      return fail(
        `supabase db push did not record in supabase_migrations.schema_migrations: ${
          unrecorded.join(", ")
        }`,
      );
    }
    const lent = await lentPlatformRoles(server.url);
    if (lent.length > 0) {
      return fail(
        `deploy_supautils.sql left "postgres" a member of ${
          lent.join(", ")
        } (the policy_grants stand-in must lend them for one statement only)`,
      );
    }

    const second = await runSupabaseCli(cli, ["db", "push", "--db-url", dbUrl, "--yes"], repo);
    const secondOut = second.stderr + second.stdout;
    if (second.code !== 0 || !secondOut.includes(UP_TO_DATE)) {
      return fail(
        `a second supabase db push did not report "${UP_TO_DATE}" (exit ${second.code}): ${
          lastLines(secondOut)
        }`,
      );
    }
    return {
      ok: true,
      cliVersion: cli.version,
      applied,
      secondPush: UP_TO_DATE,
      ms: Math.round(performance.now() - started),
    };
  } finally {
    await server?.stop();
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
}

/**
 * Applies `local/db/platform.sql` and the policy_grants stand-in as the local
 * superuser `url` names, as the local stack does before its runner (which is
 * not run here).
 */
export async function buildHostedLikeDatabase(url: string): Promise<void> {
  await withClient(url, async (client) => {
    await client.query(await Deno.readTextFile(PLATFORM_SQL));
    await client.query(await Deno.readTextFile(DEPLOY_SUPAUTILS_SQL));
    await client.query(
      `insert into supautils_local.policy_grant_tables (table_name)
       select unnest($1::text[]) on conflict do nothing`,
      [[...POLICY_GRANT_TABLES]],
    );
  });
}

/** The URL the CLI logs in with: `postgres` on the same database, no TLS (127.0.0.1). */
export function cliDatabaseUrl(superuserUrl: string): string {
  const url = new URL(postgresRoleUrl(superuserUrl));
  url.searchParams.set("sslmode", "disable");
  return url.toString();
}

/** The line the CLI prints before it applies a migration file. */
const APPLYING = /^Applying migration (\S+\.sql)\.\.\.$/;

/** The files named by the CLI's `Applying migration <file>...` lines, in order. */
export function appliedMigrations(output: string): string[] {
  return output.split("\n").map((line) => APPLYING.exec(line)?.[1])
    .filter((file) => file !== undefined);
}

/**
 * The migration the CLI refused, parsed from its output:
 *
 * ```
 * Applying migration 20991231000000_broken.sql...
 * ERROR: must be owner of table users (SQLSTATE 42501)
 * At statement: 1
 * alter table auth.users add column x int
 * Try rerunning the command with --debug to troubleshoot the error.
 * ```
 *
 * (a syntax error adds a caret line under the statement). Null when the
 * output has no such error.
 */
export function parseRefusal(output: string): Omit<RefusedMigration, "line"> | null {
  const lines = output.split("\n");
  const errorAt = lines.findIndex((l) => l.startsWith("ERROR: "));
  if (errorAt < 0) return null;
  const file = lines.slice(0, errorAt).reverse()
    .map((l) => APPLYING.exec(l)?.[1])
    .find((f) => f !== undefined);
  const statementAt = lines.findIndex((l, i) => i > errorAt && /^At statement: \d+$/.test(l));
  if (!file || statementAt < 0) return null;
  const end = lines.findIndex((l, i) =>
    i > statementAt && l.startsWith("Try rerunning the command")
  );
  const statement = lines.slice(statementAt + 1, end < 0 ? undefined : end)
    .filter((l) => !/^\s*\^\s*$/.test(l))
    .join("\n").trim();
  return { file, statement, error: lines[errorAt]!.slice("ERROR: ".length).trim() };
}

async function refusedMigration(
  run: CliRun,
  migrationsDir: string,
): Promise<RefusedMigration | null> {
  const refusal = parseRefusal(run.stderr + "\n" + run.stdout);
  if (!refusal) return null;
  let line: number | null = null;
  const text = await Deno.readTextFile(`${migrationsDir}/${refusal.file}`).catch(() => null);
  const first = refusal.statement.split("\n")[0]!;
  if (text !== null && first !== "") {
    const at = text.indexOf(first);
    if (at >= 0) line = text.slice(0, at).split("\n").length;
  }
  return { ...refusal, line };
}

async function recordedVersions(url: string): Promise<Set<string>> {
  return await withClient(url, async (client) => {
    const { rows } = await client.query<{ version: string }>(
      "select version from supabase_migrations.schema_migrations",
    );
    return new Set(rows.map((row) => row.version));
  });
}

/** The owners of the platform's tables that `postgres` is a member of (none, as on hosted). */
async function lentPlatformRoles(url: string): Promise<string[]> {
  return await withClient(url, async (client) => {
    const { rows } = await client.query<{ role: string }>(
      `select distinct m.roleid::regrole::text as role from pg_auth_members m
       where m.member = 'postgres'::regrole and m.roleid in (
         select c.relowner from pg_class c join pg_namespace n on n.oid = c.relnamespace
         where n.nspname = any($1::text[]))
       order by 1`,
      [[...PLATFORM_SCHEMAS]],
    );
    return rows.map((row) => row.role);
  });
}

function oneLine(value: unknown): string {
  const text = value instanceof Error ? value.message : String(value);
  const line = text.replace(/\s+/g, " ").trim();
  return line.length > 300 ? `${line.slice(0, 300)}…` : line;
}

function lastLines(output: string): string {
  return oneLine(output.trim().split("\n").slice(-4).join(" | "));
}

if (import.meta.main) {
  try {
    const cli = await installSupabaseCli();
    const result = await deployCheck({ repo: REPO_ROOT, cli });
    if (!result.ok) {
      console.error(`check:deploy: ${result.message}`);
      Deno.exit(1);
    }
    console.log(
      `check:deploy: Supabase CLI ${result.cliVersion}: db push applied ${result.applied.length} migrations as "postgres" to a hosted-like database; second push: nothing to do ("${result.secondPush}"); ${
        (result.ms / 1000).toFixed(1)
      } s`,
    );
  } catch (error) {
    console.error(
      `check:deploy: ${error instanceof PostgresStartError ? error.message : oneLine(error)}`,
    );
    Deno.exit(1);
  }
}
