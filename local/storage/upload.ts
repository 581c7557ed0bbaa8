/**
 * One upload, as hosted Storage's `uploadFromRequest` runs it: the bucket
 * (404), the body's type and size against the bucket's limits (415, 413),
 * the permission check as the caller (RLS: 403; an existing name without
 * upsert: 409), then the bytes to a staging file and, in one superuser
 * transaction, the `storage.objects` row plus the file moved into place.
 *
 * @module
 */
import type { Db } from "../../supabase/functions/_shared/platform/db.ts";
import { readUploadBody } from "./body.ts";
import type { FileStore } from "./files.ts";
import {
  checkCanUpload,
  findBucket,
  type ObjectMetadata,
  saveObject,
  type StorageCaller,
} from "./objects.ts";

/** What to upload where, and as whom. */
export interface UploadTarget {
  bucket: string;
  name: string;
  /** The user the object belongs to. */
  owner?: string;
  /** Replace an existing object of the same name. */
  upsert: boolean;
  /** Whose RLS applies; null for a signed upload (checked when the URL was signed). */
  caller: StorageCaller | null;
}

/** Stores the body of `req` as the object `target` names; returns its id. */
export async function uploadObject(
  database: Db,
  files: FileStore,
  req: Request,
  target: UploadTarget,
): Promise<string> {
  const bucket = await findBucket(database, target.bucket);
  const upload = await readUploadBody(req, bucket);
  const row = {
    bucket: target.bucket,
    name: target.name,
    owner: target.owner,
    userMetadata: upload.userMetadata,
    version: crypto.randomUUID(),
  };
  await checkCanUpload(
    database,
    target.caller,
    { ...row, metadata: { mimetype: upload.mimeType, contentLength: upload.contentLength } },
    target.upsert,
  );
  const staged = await files.stage(upload.body, upload.maxBytes);
  try {
    const metadata: ObjectMetadata = {
      eTag: `"${staged.md5}"`,
      size: staged.size,
      mimetype: upload.mimeType,
      cacheControl: upload.cacheControl,
      lastModified: new Date().toISOString(),
      contentLength: staged.size,
      httpStatusCode: 200,
    };
    return await saveObject(
      database,
      { ...row, metadata: { ...metadata } },
      target.upsert,
      () => files.commit(staged, target.bucket, target.name),
    );
  } finally {
    await files.discard(staged);
  }
}
