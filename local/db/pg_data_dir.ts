/**
 * Where a cluster lives. Normally where it was asked for; as root, when the
 * "postgres" user cannot traverse the folders above it (a clone in a 0700
 * home or temporary folder), in a reachable folder keyed by the requested
 * path instead, so the same request always finds the same cluster.
 *
 * @module
 */
import { dirname, join, resolve } from "node:path";
import { createHash } from "node:crypto";
import type { PostgresUser } from "./pg_user.ts";
import { canTraverse, mkdirTraversable, sharedTempDir } from "./pg_user.ts";

/** Where the cluster asked for at `requested` actually lives. */
export interface DataDirPlacement {
  /** The absolute folder of the cluster. */
  dataDir: string;
  /** Set when the cluster lives elsewhere than asked: the requested folder. */
  relocatedFrom?: string;
}

/** Where the cluster for `requested` lives when PostgreSQL runs as `runAs` (null: as us). */
export function locateDataDir(requested: string, runAs: PostgresUser | null): DataDirPlacement {
  const wanted = resolve(requested);
  if (!runAs || canTraverse(dirname(wanted), runAs)) return { dataDir: wanted };
  const key = createHash("sha256").update(wanted).digest("hex").slice(0, 16);
  return { dataDir: join(sharedTempDir(), `embedded-postgres-data-${key}`), relocatedFrom: wanted };
}

/**
 * Locates the cluster folder and prepares it: creates its parents, and as
 * root hands the folder itself to the "postgres" user (mode 0700, as initdb
 * wants). Refuses a symlink or a folder some other user owns.
 */
export async function prepareDataDir(
  requested: string,
  runAs: PostgresUser | null,
): Promise<DataDirPlacement> {
  const placement = locateDataDir(requested, runAs);
  const { dataDir } = placement;
  await mkdirTraversable(dirname(dataDir));
  if (!runAs) {
    await Deno.mkdir(dataDir, { recursive: true, mode: 0o700 });
    return placement;
  }
  let info: Deno.FileInfo | null = null;
  try {
    info = await Deno.lstat(dataDir);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  if (info && (!info.isDirectory || (info.uid !== 0 && info.uid !== runAs.uid))) {
    throw new Error(`"${dataDir}" is not a cluster folder of root or "postgres"; remove it`);
  }
  if (!info) await Deno.mkdir(dataDir);
  await Deno.chown(dataDir, runAs.uid, runAs.gid);
  await Deno.chmod(dataDir, 0o700);
  return placement;
}
