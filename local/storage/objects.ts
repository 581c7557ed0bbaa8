/**
 * SQL on `storage.buckets` and `storage.objects`, the way hosted Storage
 * runs it (`src/storage/database/pg.ts`): reads and permission checks as the
 * caller, under its role with `request.jwt.claims` set so RLS applies; the
 * final write as the superuser once the bytes are stored.
 *
 * @module
 */
import type { Caller } from "../../supabase/functions/_shared/platform/caller.ts";
import type { Db, Sql, SqlParam } from "../../supabase/functions/_shared/platform/db.ts";
import { HttpError } from "../../supabase/functions/_shared/platform/errors.ts";
import {
  accessDenied,
  keyAlreadyExists,
  noSuchBucket,
  noSuchKey,
  relatedResourceNotFound,
} from "./errors.ts";

/** A caller the Storage API serves (the scheduler token is refused before). */
export type StorageCaller = Exclude<Caller, { kind: "scheduler" }>;

/** The bucket columns uploads and downloads need. */
export interface Bucket {
  id: string;
  public: boolean;
  file_size_limit: number | null;
  allowed_mime_types: string[] | null;
}

/** What Storage records about an object's bytes (`storage.objects.metadata`). */
export interface ObjectMetadata {
  eTag: string;
  size: number;
  mimetype: string;
  cacheControl: string;
  lastModified: string;
  contentLength: number;
  httpStatusCode: number;
}

/** The object columns downloads need. */
export interface StoredObject {
  id: string;
  version: string | null;
  metadata: Partial<ObjectMetadata> | null;
}

/** The row an upload writes (or tries, for a permission check). */
export interface ObjectRow {
  bucket: string;
  name: string;
  /** The uploader's user id (none for the service role and signed uploads it issued). */
  owner?: string;
  metadata: Record<string, unknown>;
  userMetadata?: Record<string, unknown>;
  version: string;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The database role and JWT claims a caller's queries run under. */
function scopeOf(caller: StorageCaller): { role: string; sub: string; claims: string } {
  switch (caller.kind) {
    case "user":
      return {
        role: "authenticated",
        sub: caller.id,
        claims: JSON.stringify({ ...caller.claims, role: "authenticated", sub: caller.id }),
      };
    case "anon":
      return { role: "anon", sub: "", claims: JSON.stringify({ role: "anon" }) };
    case "service":
      return { role: "service_role", sub: "", claims: JSON.stringify({ role: "service_role" }) };
  }
}

/**
 * Runs `fn` in a transaction as `caller` (role and claims transaction-local,
 * as hosted Storage sets them; `null`: as the superuser), rolled back
 * afterwards when `rollback`.
 */
async function asCaller<T>(
  db: Db,
  caller: StorageCaller | null,
  operation: string,
  fn: (sql: Sql) => Promise<T>,
  rollback = false,
): Promise<T> {
  const rolledBack = Symbol("rolled back");
  let result: T | undefined;
  try {
    return await db.tx(async (sql) => {
      if (caller) await setScope(sql, caller, operation);
      result = await fn(sql);
      if (rollback) throw rolledBack;
      return result;
    });
  } catch (error) {
    if (error === rolledBack) return result as T;
    throw mapWriteError(error);
  }
}

/** Sets `caller`'s role and claims for the rest of the transaction. */
async function setScope(sql: Sql, caller: StorageCaller, operation: string): Promise<void> {
  const scope = scopeOf(caller);
  await sql.query(
    `select set_config('role', $1, true), set_config('request.jwt.claim.role', $1, true),
            set_config('request.jwt.claim.sub', $2, true),
            set_config('request.jwt.claims', $3, true),
            set_config('storage.operation', $4, true)`,
    [scope.role, scope.sub, scope.claims, operation],
  );
}

/** Maps the database's refusals to Storage's errors (as `DBError.fromDBError`). */
function mapWriteError(error: unknown): unknown {
  // Db maps 42501 (RLS, grants) to a 403 HttpError before it reaches us.
  if (error instanceof HttpError && error.status === 403) {
    return accessDenied("new row violates row-level security policy");
  }
  const code = error instanceof Error ? (error as { code?: unknown }).code : undefined;
  if (code === "42501") return accessDenied("new row violates row-level security policy");
  if (code === "23505") return keyAlreadyExists();
  if (code === "23503") return relatedResourceNotFound();
  return error;
}

/** The bucket `id`, read as the superuser; 404 `NoSuchBucket` when there is none. */
export async function findBucket(db: Db, id: string): Promise<Bucket> {
  const bucket = await db.maybeOne<Bucket>(
    `select id, public, file_size_limit::float8 as file_size_limit, allowed_mime_types
       from storage.buckets where id = $1`,
    [id],
  );
  if (!bucket) throw noSuchBucket();
  return bucket;
}

/**
 * The object `name` of `bucket` as `caller` sees it under RLS (every object
 * for the service role; `null` caller: as the superuser); 404 `NoSuchKey`
 * when it does not exist or the caller may not see it.
 */
export async function findObject(
  db: Db,
  caller: StorageCaller | null,
  bucket: string,
  name: string,
): Promise<StoredObject> {
  const text = `select id, version, metadata from storage.objects
                 where name = $1 and bucket_id = $2 limit 1`;
  const row = caller
    ? await asCaller(
      db,
      caller,
      "storage.object.get",
      (sql) => sql.maybeOne<StoredObject>(text, [name, bucket]),
    )
    : await db.maybeOne<StoredObject>(text, [name, bucket]);
  if (!row) throw noSuchKey();
  return row;
}

/** The columns and values of an object row, as hosted's createObject/upsertObject write them. */
function rowValues(row: ObjectRow): SqlParam[] {
  const owner = row.owner && UUID.test(row.owner) ? row.owner : null;
  return [
    row.bucket,
    row.name,
    owner,
    row.owner ?? null,
    JSON.stringify(row.metadata),
    row.userMetadata === undefined ? null : JSON.stringify(row.userMetadata),
    row.version,
  ];
}

const INSERT = `insert into storage.objects
  (bucket_id, name, owner, owner_id, metadata, user_metadata, version)
  values ($1, $2, $3, $4, $5::jsonb, $6::jsonb, $7)`;
const UPSERT = `${INSERT}
  on conflict (bucket_id, name) do update set
    owner = excluded.owner, owner_id = excluded.owner_id, metadata = excluded.metadata,
    user_metadata = excluded.user_metadata, version = excluded.version, updated_at = now()
  returning id`;

/**
 * Hosted's `canUpload`: tries the row's insert (upsert: insert or update,
 * returning it) as `caller` (`null`: the superuser) and rolls back. 403
 * `AccessDenied` when RLS refuses, 409 `KeyAlreadyExists` when the name
 * exists and `upsert` is off.
 */
export async function checkCanUpload(
  db: Db,
  caller: StorageCaller | null,
  row: ObjectRow,
  upsert: boolean,
): Promise<void> {
  await asCaller(
    db,
    caller,
    "storage.object.upload",
    (sql) => sql.query(upsert ? UPSERT : INSERT, rowValues(row)),
    true,
  );
}

/**
 * Writes the row as the superuser in a transaction and, while it holds the
 * row, runs `place` (moving the bytes into place); returns the object's id.
 * 409 `KeyAlreadyExists` when the name exists and `upsert` is off.
 */
export async function saveObject(
  db: Db,
  row: ObjectRow,
  upsert: boolean,
  place: () => Promise<void>,
): Promise<string> {
  try {
    return await db.tx(async (sql) => {
      const saved = await sql.maybeOne<{ id: string }>(
        upsert ? UPSERT : `${INSERT} on conflict (bucket_id, name) do nothing returning id`,
        rowValues(row),
      );
      if (!saved) throw keyAlreadyExists();
      await place();
      return saved.id;
    });
  } catch (error) {
    throw mapWriteError(error);
  }
}
