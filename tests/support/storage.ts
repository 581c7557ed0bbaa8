/**
 * The local Storage API (local/storage/) for tests: served over HTTP on an
 * ephemeral port through the same gateway `deno task start` uses, on the
 * test database, with files in a temporary folder. Point a function's
 * supabase-js at it with `testRuntime(db, storage.env)`. Helpers make
 * buckets, supabase-js storage clients, and read what was stored.
 *
 * @module
 */
import { createClient } from "@supabase/supabase-js";
import type pg from "pg";
import { createGateway } from "../../local/gateway.ts";
import { createStorageApi } from "../../local/storage/api.ts";
import { TEST_ISSUER, TEST_JWT_SECRET, testCredentials } from "./credentials.ts";
import type { TestDatabase } from "./db.ts";
import { testRuntime } from "./runtime.ts";

/** A running local Storage API. */
export interface LocalStorage {
  /** `http://127.0.0.1:<port>`; the API is under `/storage/v1`, as on the gateway. */
  url: string;
  /** The temporary folder holding the objects' files (`<root>/<bucket>/<name>`). */
  root: string;
  /**
   * `{ SUPABASE_URL, SUPABASE_JWT_ISSUER }` for `testRuntime(db, env)`: the
   * functions' supabase-js reaches this server and user tokens still verify.
   */
  env: Record<string, string>;
  /** Stops the server, closes its pool and removes the folder. */
  stop(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/**
 * Starts the Storage API on `db` at 127.0.0.1 on a free port; `env` adds to
 * the project's settings it verifies callers with (e.g. `SUPABASE_SECRET_KEYS`:
 * hosted Storage takes the project's secret keys as the service role).
 */
export async function startLocalStorage(
  db: TestDatabase,
  env: Record<string, string | undefined> = {},
): Promise<LocalStorage> {
  const runtime = await testRuntime(db, env);
  const keys = await testCredentials();
  const root = await Deno.makeTempDir({ prefix: "market-test-storage-" });
  const gateway = createGateway({
    functions: new Map(),
    runtime,
    verifyJwt: new Map(),
    jwks: keys.jwks,
    storage: createStorageApi({
      database: runtime.database,
      tokens: runtime.tokens,
      jwtSecret: TEST_JWT_SECRET,
      root,
      log: runtime.log,
    }),
  });
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, gateway);
  const url = `http://127.0.0.1:${server.addr.port}`;
  let stopped: Promise<void> | undefined;
  const stop = () =>
    stopped ??= (async () => {
      await server.shutdown();
      await runtime.close();
      await Deno.remove(root, { recursive: true }).catch(() => {});
    })();
  return {
    url,
    root,
    env: { SUPABASE_URL: url, SUPABASE_JWT_ISSUER: TEST_ISSUER },
    stop,
    [Symbol.asyncDispose]: stop,
  };
}

/** Options of a test bucket. */
export interface TestBucketOptions {
  public?: boolean;
  /** `file_size_limit` in bytes (default: none). */
  fileSizeLimit?: number | null;
  /** `allowed_mime_types` (default: any). */
  allowedMimeTypes?: string[] | null;
}

/** Creates a bucket `t-<random>` in `storage.buckets`; returns its id. */
export async function createBucket(
  pool: pg.Pool,
  options: TestBucketOptions = {},
): Promise<string> {
  const id = `t-${crypto.randomUUID().slice(0, 8)}`;
  await pool.query(
    `insert into storage.buckets (id, name, public, file_size_limit, allowed_mime_types)
     values ($1, $1, $2, $3, $4)`,
    [id, options.public ?? false, options.fileSizeLimit ?? null, options.allowedMimeTypes ?? null],
  );
  return id;
}

/** The storage client of a supabase-js client on `storage` calling with bearer `token`. */
export function storageClient(storage: LocalStorage, anonKey: string, token: string) {
  return createClient(storage.url, anonKey, {
    global: { headers: { Authorization: `Bearer ${token}` } },
    auth: { persistSession: false, autoRefreshToken: false },
  }).storage;
}

/** A row of `storage.objects`. */
export interface ObjectRowInfo {
  id: string;
  owner: string | null;
  owner_id: string | null;
  metadata: Record<string, unknown>;
  user_metadata: Record<string, unknown> | null;
}

/** The `storage.objects` row of `name` in `bucket`, or null. */
export async function objectRow(
  pool: pg.Pool,
  bucket: string,
  name: string,
): Promise<ObjectRowInfo | null> {
  const { rows } = await pool.query<ObjectRowInfo>(
    `select id, owner, owner_id, metadata, user_metadata from storage.objects
      where bucket_id = $1 and name = $2`,
    [bucket, name],
  );
  return rows[0] ?? null;
}

/** Every file under `dir` (recursively), as paths relative to it, sorted. */
export async function filesUnder(dir: string): Promise<string[]> {
  const found: string[] = [];
  const walk = async (path: string, prefix: string) => {
    for await (const entry of Deno.readDir(path)) {
      const relative = `${prefix}${entry.name}`;
      if (entry.isDirectory) await walk(`${path}/${entry.name}`, `${relative}/`);
      else found.push(relative);
    }
  };
  await walk(dir, "");
  return found.sort();
}
