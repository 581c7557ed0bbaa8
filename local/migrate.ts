/**
 * Applies `local/platform.sql` and the migrations in `supabase/migrations/`,
 * each once, recording them in `supabase_migrations.schema_migrations` as the
 * Supabase CLI does.
 *
 * @module
 */
import pg from "pg";
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

/** Applies what is new; returns the versions it applied. */
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
    await client.query(`
      create schema if not exists supabase_migrations;
      create table if not exists supabase_migrations.schema_migrations (
        version text primary key,
        statements text[],
        name text
      );`);
    const done = new Set(
      (await client.query<{ version: string }>(
        "select version from supabase_migrations.schema_migrations",
      )).rows.map((row) => row.version),
    );
    const applied: string[] = [];
    for (const migration of listMigrations(options.migrationsDir)) {
      if (done.has(migration.version)) continue;
      const sql = await Deno.readTextFile(migration.path);
      await client.query("begin");
      try {
        await client.query(sql);
        await client.query(
          "insert into supabase_migrations.schema_migrations (version, name, statements) values ($1, $2, $3)",
          [migration.version, migration.name, [sql]],
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
