/**
 * Applies `local/platform.sql` and the migrations in `supabase/migrations/`,
 * each once, recording them in `supabase_migrations.schema_migrations` as the
 * Supabase CLI does, plus each file's sha256 in a `checksum` column (the CLI
 * ignores extra columns). An applied migration is immutable: when its file
 * no longer matches what was applied, nothing is applied and migrate fails
 * with {@linkcode AppliedMigrationChangedError}.
 *
 * @module
 */
import pg from "pg";
import { createHash } from "node:crypto";
import { fileURLToPath as fromFileUrl } from "node:url";

/** Default folder of the migrations. */
export const MIGRATIONS_DIR = fromFileUrl(
  new URL("../supabase/migrations/", import.meta.url),
);
/** The local stand-in for what hosted Supabase provides. */
export const PLATFORM_SQL = fromFileUrl(new URL("./platform.sql", import.meta.url));

/** Options for {@linkcode migrate}. */
export interface MigrateOptions {
  /** Folder of `<version>_<name>.sql` files. */
  migrationsDir?: string;
  /** Apply `local/platform.sql` first (local and test databases only). */
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
 * it; older rows without one compare their `statements` when that is exactly
 * the file's text, and get the checksum recorded (rows the Supabase CLI
 * wrote, split into statements, cannot be compared and get the file's
 * current checksum).
 */
export async function migrate(
  databaseUrl: string,
  options: MigrateOptions = {},
): Promise<string[]> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    if (options.includePlatform) {
      await client.query(await Deno.readTextFile(PLATFORM_SQL));
    }
    await ensureMigrationsTable(client);
    const done = new Map(
      (await client.query<AppliedRow>(
        "select version, statements, checksum from supabase_migrations.schema_migrations",
      )).rows.map((row) => [row.version, row]),
    );
    const files = await readMigrations(options.migrationsDir);

    const changed: string[] = [];
    const unrecorded: MigrationFile[] = [];
    for (const migration of files) {
      const row = done.get(migration.version);
      if (!row) continue;
      if (row.checksum !== null) {
        if (row.checksum !== migration.checksum) changed.push(migration.file);
      } else if (row.statements?.length === 1 && row.statements[0] !== migration.sql) {
        changed.push(migration.file);
      } else {
        unrecorded.push(migration);
      }
    }
    if (changed.length > 0) throw new AppliedMigrationChangedError(changed);
    for (const migration of unrecorded) {
      await client.query(
        "update supabase_migrations.schema_migrations set checksum = $2 where version = $1 and checksum is null",
        [migration.version, migration.checksum],
      );
    }

    const applied: string[] = [];
    for (const migration of files) {
      if (done.has(migration.version)) continue;
      await client.query("begin");
      try {
        await client.query(migration.sql);
        await client.query(
          "insert into supabase_migrations.schema_migrations (version, name, statements, checksum) values ($1, $2, $3, $4)",
          [migration.version, migration.name, [migration.sql], migration.checksum],
        );
        await client.query("commit");
      } catch (error) {
        await client.query("rollback");
        const message = error instanceof Error ? error.message : String(error);
        throw new Error(
          `Cannot apply migration "${migration.version}_${migration.name}": ${message}`,
        );
      }
      applied.push(migration.version);
    }
    return applied;
  } finally {
    await client.end();
  }
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
