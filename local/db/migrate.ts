/**
 * Applies `local/db/platform.sql` and the migrations in `supabase/migrations/`,
 * each once, recording them in `supabase_migrations.schema_migrations` as the
 * Supabase CLI does, plus each file's sha256 in a `checksum` column (the CLI
 * ignores extra columns). An applied migration is immutable: when its file
 * no longer matches what was applied, nothing is applied and migrate fails
 * with {@linkcode AppliedMigrationChangedError}.
 *
 * The migrations are applied as hosted Supabase applies them: `supabase db
 * push` logs in as `postgres`, which is no superuser and owns none of the
 * platform's tables (see `local/db/platform.sql`). So the runner logs in as
 * `postgres` too (a real login, not SET ROLE in a superuser session, which a
 * file could undo with RESET ROLE). supautils lets `postgres` create, alter
 * and drop policies on the tables of its `policy_grants`; the runner models
 * that: it splits each file into statements (`sql_statements.ts`), records
 * the text of exactly those policy statements over the superuser connection,
 * and in the file's one transaction has each run by
 * `supautils_local.run_granted_statement()` as the superuser; everything else
 * runs as `postgres` and meets PostgreSQL's ownership checks ("must be owner
 * of …"), as on hosted.
 *
 * @module
 */
import pg from "pg";
import { createHash } from "node:crypto";
import { fileURLToPath as fromFileUrl } from "node:url";
import { grantedPolicyStatement } from "./platform_ownership.ts";
import { postgresRoleUrl } from "./postgres.ts";
import { splitStatements } from "./sql_statements.ts";

/** Default folder of the migrations. */
export const MIGRATIONS_DIR = fromFileUrl(
  new URL("../../supabase/migrations/", import.meta.url),
);
/** The local stand-in for what hosted Supabase provides. */
export const PLATFORM_SQL = fromFileUrl(new URL("./platform.sql", import.meta.url));

/** Options for {@linkcode migrate}. */
export interface MigrateOptions {
  /** Folder of `<version>_<name>.sql` files. */
  migrationsDir?: string;
  /**
   * Apply `local/db/platform.sql` first, as the URL's user (the local superuser;
   * local and test databases only). Without it the database must have had it
   * applied before: the migrations log in as the `postgres` role it creates.
   */
  includePlatform?: boolean;
}

/** One migration file. */
export interface Migration {
  version: string;
  name: string;
  path: string;
}

/** Lists the migration files in version order. */
export function listMigrations(dir: string = MIGRATIONS_DIR): Migration[] {
  const migrations: Migration[] = [];
  for (const entry of Deno.readDirSync(dir)) {
    const match = /^(\d+)_(.+)\.sql$/.exec(entry.name);
    if (!entry.isFile || !match) continue;
    migrations.push({
      version: match[1]!,
      name: match[2]!,
      path: `${dir.replace(/\/$/, "")}/${entry.name}`,
    });
  }
  return migrations.sort((a, b) => a.version.localeCompare(b.version));
}

/** The fix named by {@linkcode AppliedMigrationChangedError}. */
export const CHANGED_MIGRATION_FIX =
  "revert it and put the change in a new migration, or `deno task db:reset --yes` to rebuild the local database";

/** Raised when a migration file changed after it was applied; its message is one line. */
export class AppliedMigrationChangedError extends Error {
  override name = "AppliedMigrationChangedError";
  /** The changed files' names. */
  readonly files: string[];

  /** Names the changed files and the fix. */
  constructor(files: string[]) {
    super(
      `Cannot migrate: ${files.length === 1 ? "migration" : "migrations"} ${
        files.map((f) => `"${f}"`).join(", ")
      } changed after ${files.length === 1 ? "it was" : "they were"} applied to this database; ` +
        CHANGED_MIGRATION_FIX,
    );
    this.files = files;
  }
}

/**
 * Earlier checksums still accepted for a migration, by version: files edited
 * after they landed, by exception. A row recorded with one of them gets the
 * file's current checksum; any other difference is still a changed file.
 */
export const ACCEPTED_PREVIOUS_CHECKSUMS: Readonly<Record<string, readonly string[]>> = {
  // 20261123002700_deal_documents.sql had `comment on policy … on storage.objects`.
  // Hosted projects with supautils before 3.3.0 refuse that ("must be owner of
  // relation objects": `postgres` does not own storage.objects), and
  // `supabase db push` stops there. Before the first release the comment became
  // a `--` comment: the one edit of a landed migration allowed (also in
  // check_migrations.ts). Its policies are unchanged, so a local database that
  // applied the old file holds the same objects and keeps its data.
  "20261123002700": ["baa371257c89239228c3a9d40f4bf668d03baa2f7b5ecc8a151fe49b343b7360"],
};

/** The sha256 of a migration file's bytes, hex-encoded (what `checksum` stores). */
export function migrationChecksum(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

/** A row of `supabase_migrations.schema_migrations`. */
interface AppliedRow {
  version: string;
  statements: string[] | null;
  checksum: string | null;
}

/** A migration file read from disk. */
interface MigrationFile extends Migration {
  file: string;
  sql: string;
  checksum: string;
}

/**
 * Applies what is new; returns the versions it applied. First checks that
 * every applied migration's file is unchanged: rows with a checksum compare
 * it (a checksum of {@linkcode ACCEPTED_PREVIOUS_CHECKSUMS} is replaced by
 * the current one); older rows without one compare their `statements` when
 * that is exactly the file's text, and get the checksum recorded (rows the
 * Supabase CLI wrote, split into statements, cannot be compared and get the
 * file's current checksum).
 *
 * `databaseUrl` names the local superuser (it applies `local/db/platform.sql`
 * and grants the policy statements); the migrations are applied by a login
 * as `postgres` on the same database ({@linkcode postgresRoleUrl}).
 */
export async function migrate(
  databaseUrl: string,
  options: MigrateOptions = {},
): Promise<string[]> {
  const admin = new pg.Client({ connectionString: databaseUrl });
  await admin.connect();
  let client: pg.Client | undefined;
  const runId = crypto.randomUUID();
  let granted = false;
  try {
    // One run at a time per database (two `deno task start` on one
    // SUPABASE_DB_URL): the second waits, then finds the files applied,
    // instead of failing in platform.sql with "tuple concurrently updated"
    // or on a file the first is applying. Released when `admin` ends.
    await admin.query("select pg_advisory_lock(hashtextextended('local/db/migrate.ts', 0))");
    if (options.includePlatform) {
      await admin.query(await Deno.readTextFile(PLATFORM_SQL));
    }
    // What a killed run granted and never ran (its `finally` did not run);
    // under the lock no other run's statements are there.
    await admin.query(`do $$ begin
      if to_regclass('supautils_local.granted_statements') is not null then
        delete from supautils_local.granted_statements;
      end if;
    end $$`);
    client = await connectAsPostgres(databaseUrl);
    await ensureMigrationsTable(client);
    const done = new Map(
      (await client.query<AppliedRow>(
        "select version, statements, checksum from supabase_migrations.schema_migrations",
      )).rows.map((row) => [row.version, row]),
    );
    const files = await readMigrations(options.migrationsDir);

    const changed: string[] = [];
    const toRecord: Array<{ migration: MigrationFile; was: string | null }> = [];
    for (const migration of files) {
      const row = done.get(migration.version);
      if (!row) continue;
      const accepted = ACCEPTED_PREVIOUS_CHECKSUMS[migration.version] ?? [];
      if (row.checksum !== null) {
        if (row.checksum === migration.checksum) continue;
        if (accepted.includes(row.checksum)) toRecord.push({ migration, was: row.checksum });
        else changed.push(migration.file);
      } else if (
        row.statements?.length === 1 && row.statements[0] !== migration.sql &&
        !accepted.includes(migrationChecksum(new TextEncoder().encode(row.statements[0])))
      ) {
        changed.push(migration.file);
      } else {
        toRecord.push({ migration, was: null });
      }
    }
    if (changed.length > 0) throw new AppliedMigrationChangedError(changed);
    for (const { migration, was } of toRecord) {
      await client.query(
        `update supabase_migrations.schema_migrations set checksum = $2
         where version = $1 and checksum is not distinct from $3`,
        [migration.version, migration.checksum, was],
      );
    }

    const applied: string[] = [];
    for (const migration of files) {
      if (done.has(migration.version)) continue;
      const steps = planMigration(migration.sql);
      const policies = steps.filter((step) => step.granted).map((step) => step.text);
      if (policies.length > 0) {
        granted = true;
        await admin.query(
          `insert into supautils_local.granted_statements (run_id, statement)
           select $1, unnest($2::text[])`,
          [runId, policies],
        );
      }
      let step: MigrationStep | undefined;
      await client.query("begin");
      try {
        for (step of steps) {
          if (step.granted) {
            await client.query("select supautils_local.run_granted_statement($1, $2)", [
              runId,
              step.text,
            ]);
          } else {
            await client.query(step.text);
          }
        }
        step = undefined;
        await client.query(
          "insert into supabase_migrations.schema_migrations (version, name, statements, checksum) values ($1, $2, $3, $4)",
          [migration.version, migration.name, [migration.sql], migration.checksum],
        );
        await client.query("commit");
      } catch (error) {
        await client.query("rollback");
        const message = error instanceof Error ? error.message : String(error);
        const line = step ? errorLine(migration.sql, step, error) : null;
        throw new Error(
          `Cannot apply migration "${migration.version}_${migration.name}"${
            line ? ` (line ${line})` : ""
          }: ${message}`,
        );
      }
      applied.push(migration.version);
    }
    return applied;
  } finally {
    if (granted) {
      await admin.query("delete from supautils_local.granted_statements where run_id = $1", [runId])
        .catch(() => {});
    }
    await client?.end();
    await admin.end();
  }
}

/** A login as `postgres` on the database of `databaseUrl`, or a one-line error saying why not. */
async function connectAsPostgres(databaseUrl: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: postgresRoleUrl(databaseUrl) });
  try {
    await client.connect();
  } catch (error) {
    await client.end().catch(() => {});
    const message = error instanceof Error ? error.message : String(error);
    throw new Error(
      `Cannot migrate: cannot log in as "postgres", the role migrations are applied as ` +
        `(local/db/platform.sql creates it; migrate with includePlatform): ${message}`,
    );
  }
  return client;
}

/** A statement of a migration file, run in order. */
export interface MigrationStep {
  /** The exact text (with the comments before it): the steps joined are the file. */
  text: string;
  /** Offset of `text` in the file. */
  start: number;
  /** 1-based line of the statement's first word. */
  line: number;
  /** A policy statement supautils' policy_grants runs as the superuser. */
  granted: boolean;
}

/**
 * A file cut into its statements, each marked when supautils' policy_grants
 * runs it as the superuser. Statement by statement, so that an error names
 * its line (PostgreSQL gives no position for "must be owner of …").
 */
export function planMigration(sql: string): MigrationStep[] {
  return splitStatements(sql).map((statement) => ({
    text: statement.text,
    start: statement.start,
    line: statement.line,
    granted: grantedPolicyStatement(statement.tokens) !== null,
  }));
}

/** The file's line of a PostgreSQL error raised by `step`. */
function errorLine(sql: string, step: MigrationStep, error: unknown): number {
  const position = Number((error as { position?: string }).position);
  if (step.granted || !Number.isInteger(position) || position < 1) return step.line;
  const offset = step.start + [...step.text].slice(0, position - 1).join("").length;
  return sql.slice(0, offset).split("\n").length;
}

/** The Supabase CLI's tracking table, with the `checksum` column added when absent. */
async function ensureMigrationsTable(client: pg.Client): Promise<void> {
  await client.query(`
    create schema if not exists supabase_migrations;
    create table if not exists supabase_migrations.schema_migrations (
      version text primary key,
      statements text[],
      name text
    );`);
  const { rowCount } = await client.query(
    `select 1 from information_schema.columns
     where table_schema = 'supabase_migrations' and table_name = 'schema_migrations'
       and column_name = 'checksum'`,
  );
  if (rowCount === 0) {
    await client.query(
      "alter table supabase_migrations.schema_migrations add column if not exists checksum text",
    );
  }
}

async function readMigrations(dir?: string): Promise<MigrationFile[]> {
  return await Promise.all(
    listMigrations(dir).map(async (migration) => {
      const bytes = await Deno.readFile(migration.path);
      return {
        ...migration,
        file: migration.path.slice(migration.path.lastIndexOf("/") + 1),
        sql: new TextDecoder().decode(bytes),
        checksum: migrationChecksum(bytes),
      };
    }),
  );
}
