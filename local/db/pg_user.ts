/**
 * PostgreSQL refuses to run as root, so as root the embedded server runs as
 * the system user "postgres" (created when missing). This module finds that
 * user and tells whether it can reach a folder.
 *
 * @module
 */
import { dirname, resolve } from "node:path";

/** The user and group ids PostgreSQL runs as when we are root. */
export interface PostgresUser {
  uid: number;
  gid: number;
}

/** Whether this process runs as root (PostgreSQL then runs as "postgres"). */
export function runningAsRoot(): boolean {
  return Deno.uid() === 0;
}

/** The "postgres" user's ids, or null when there is no such user. */
export async function lookupPostgresUser(): Promise<PostgresUser | null> {
  const uid = await idOf(["-u", "postgres"]);
  const gid = await idOf(["-g", "postgres"]);
  return uid === null || gid === null ? null : { uid, gid };
}

/** The "postgres" user's ids, creating the system user (and its group) when missing. */
export async function ensurePostgresUser(): Promise<PostgresUser> {
  const found = await lookupPostgresUser();
  if (found) return found;
  // groupadd fails harmlessly when the group already exists; useradd then says why it failed.
  await run("groupadd", ["--system", "postgres"]);
  const useradd = await run("useradd", [
    "--system",
    "--no-create-home",
    "--gid",
    "postgres",
    "--shell",
    "/usr/sbin/nologin",
    "postgres",
  ]);
  const created = await lookupPostgresUser();
  if (!created) {
    throw new Error(`cannot create the "postgres" user to run PostgreSQL as: ${useradd}`);
  }
  return created;
}

/**
 * Whether `user` can traverse every existing folder on the way to `path`
 * (and `path` itself when it exists). Folders still to be created count as
 * reachable: they are created with mode 0755. Reads mode bits only, so an ACL
 * or a supplementary group that would grant access is not seen (the answer
 * errs on "unreachable").
 */
export function canTraverse(path: string, user: PostgresUser): boolean {
  const chain: string[] = [];
  for (let dir = resolve(path);; dir = dirname(dir)) {
    chain.unshift(dir);
    if (dir === dirname(dir)) break;
  }
  for (const dir of chain) {
    let info: Deno.FileInfo;
    try {
      info = Deno.statSync(dir);
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) return true;
      throw error;
    }
    const mode = info.mode ?? 0;
    const allowed = info.uid === user.uid
      ? (mode & 0o100) !== 0
      : info.gid === user.gid
      ? (mode & 0o010) !== 0
      : (mode & 0o001) !== 0;
    if (!allowed) return false;
  }
  return true;
}

/**
 * Creates `dir` and any missing parents with mode 0755 whatever the umask,
 * so that the "postgres" user can traverse the folders created here.
 */
export async function mkdirTraversable(dir: string): Promise<void> {
  const missing: string[] = [];
  for (let d = resolve(dir); !exists(d); d = dirname(d)) missing.unshift(d);
  for (const d of missing) {
    await Deno.mkdir(d).catch((error) => {
      if (!(error instanceof Deno.errors.AlreadyExists)) throw error;
    });
    await Deno.chmod(d, 0o755);
  }
}

/**
 * A world-traversable temporary folder that survives reboots where the system
 * has one (`/var/tmp`), else `/tmp`. Root keeps the PostgreSQL binaries and
 * unreachable clusters there.
 */
export function sharedTempDir(): string {
  for (const dir of ["/var/tmp", "/tmp"]) {
    try {
      const info = Deno.statSync(dir);
      if (info.isDirectory && ((info.mode ?? 0) & 0o001) !== 0) return dir;
    } catch {
      // try the next one
    }
  }
  return "/tmp";
}

function exists(path: string): boolean {
  try {
    Deno.lstatSync(path);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}

async function idOf(args: string[]): Promise<number | null> {
  const out = await new Deno.Command("id", { args, stdout: "piped", stderr: "null" }).output();
  const id = Number.parseInt(new TextDecoder().decode(out.stdout).trim(), 10);
  return out.code === 0 && Number.isInteger(id) ? id : null;
}

/** Runs a command; resolves with its first line of error output ("" on success). */
async function run(command: string, args: string[]): Promise<string> {
  try {
    const out = await new Deno.Command(command, { args, stdout: "null", stderr: "piped" })
      .output();
    return out.code === 0 ? "" : new TextDecoder().decode(out.stderr).trim().split("\n")[0]!;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}
