/**
 * `deno task db:reset --yes`: deletes the local embedded cluster (the one
 * `deno task start` uses, `$LOCAL_STATE_DIR/db`) and the local Storage files
 * (`$LOCAL_STATE_DIR/storage`, described by rows of that cluster) and
 * rebuilds it: init,
 * `local/db/platform.sql`, every migration, `supabase/seed.sql`; then stops.
 * Without `--yes` it only says what it would do. It refuses while a server
 * runs on that cluster, and with `SUPABASE_DB_URL` set (it never touches
 * another database).
 *
 * @module
 */
import { join } from "node:path";
import process from "node:process";
import { listMigrations, migrate } from "./migrate.ts";
import { LOCAL_DB_PORT, LOCAL_STATE_DIR } from "../paths.ts";
import { locateDataDir } from "./pg_data_dir.ts";
import { lookupPostgresUser, runningAsRoot } from "./pg_user.ts";
import { postgresRoleUrl, PostgresStartError, startPostgres } from "./postgres.ts";
import { seedDatabase } from "./seed.ts";

/** A refusal or failure reported as one line, without a stack trace. */
export class ResetError extends Error {
  override name = "ResetError";
}

/** The folder of the local cluster `deno task start` uses (relocated as root when needed). */
export async function localClusterDir(stateDir: string = LOCAL_STATE_DIR): Promise<string> {
  // Before the "postgres" user exists, it would be a new user: other permission bits apply.
  const runAs = runningAsRoot() ? (await lookupPostgresUser()) ?? { uid: -1, gid: -1 } : null;
  return locateDataDir(join(stateDir, "db"), runAs).dataDir;
}

/** The pid in `<dataDir>/postmaster.pid` when that process is alive, else null. */
export async function runningServerPid(dataDir: string): Promise<number | null> {
  let text: string;
  try {
    text = await Deno.readTextFile(join(dataDir, "postmaster.pid"));
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return null;
    throw error;
  }
  const pid = Number.parseInt(text.split("\n")[0] ?? "", 10);
  if (!Number.isInteger(pid) || pid <= 0) return null;
  try {
    process.kill(pid, 0);
    return pid;
  } catch (error) {
    // EPERM: it exists but belongs to another user.
    return (error as { code?: string }).code === "EPERM" ? pid : null;
  }
}

/** Options for {@linkcode resetLocalDatabase}. */
export interface ResetOptions {
  /** Really do it (otherwise only describe it). */
  yes: boolean;
  env: Record<string, string | undefined>;
  stateDir?: string;
  port?: number;
  log?: (line: string) => void;
}

/** Deletes and rebuilds the local cluster; throws {@linkcode ResetError} when it refuses. */
export async function resetLocalDatabase(options: ResetOptions): Promise<void> {
  const log = options.log ?? console.log;
  if (options.env.SUPABASE_DB_URL) {
    throw new ResetError(
      "Cannot reset: SUPABASE_DB_URL is set, and `deno task db:reset` only resets the embedded " +
        "local database (unset SUPABASE_DB_URL, or rebuild that database yourself)",
    );
  }
  const stateDir = options.stateDir ?? LOCAL_STATE_DIR;
  const dataDir = await localClusterDir(stateDir);
  const migrations = listMigrations().length;
  if (!options.yes) {
    throw new ResetError(
      `Cannot reset without --yes: it would delete the local database in ${dataDir} ` +
        `and the local storage files, and rebuild ` +
        `it (init, local/db/platform.sql, ${migrations} migrations, supabase/seed.sql); ` +
        "run `deno task db:reset --yes` to do it",
    );
  }
  const pid = await runningServerPid(dataDir);
  if (pid !== null) {
    throw new ResetError(
      `Cannot reset: a PostgreSQL server (pid ${pid}) is running on ${dataDir}; ` +
        "stop `deno task start` first",
    );
  }
  // Stored files go with the rows that describe them (storage.objects).
  for (const dir of [dataDir, join(stateDir, "storage")]) {
    await Deno.remove(dir, { recursive: true }).catch((error) => {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    });
  }
  log(`Deleted ${dataDir} and the local storage files; rebuilding…`);
  const database = await startPostgres({
    dataDir: join(stateDir, "db"),
    port: options.port ?? LOCAL_DB_PORT,
    persistent: true,
  });
  try {
    const applied = await migrate(database.url, { includePlatform: true });
    // The seed runs as `postgres`, as the Supabase CLI applies it.
    await seedDatabase(postgresRoleUrl(database.url));
    log(
      `Local database rebuilt in ${database.dataDir}: ${applied.length} migration(s) applied, seeded`,
    );
  } finally {
    await database.stop();
  }
}

if (import.meta.main) {
  const unknown = Deno.args.filter((arg) => arg !== "--yes");
  if (unknown.length > 0) {
    console.error(`Usage: deno task db:reset --yes (unknown: ${unknown.join(" ")})`);
    Deno.exit(2);
  }
  try {
    await resetLocalDatabase({ yes: Deno.args.includes("--yes"), env: Deno.env.toObject() });
  } catch (error) {
    if (error instanceof ResetError || error instanceof PostgresStartError) {
      console.error(error.message);
    } else {
      console.error(`Cannot reset: ${error instanceof Error ? error.message : error}`);
    }
    Deno.exit(1);
  }
  Deno.exit(0);
}
