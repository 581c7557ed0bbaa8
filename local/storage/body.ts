/**
 * Reads an upload's body as hosted Storage does (`fileUploadFromRequest` in
 * `src/storage/uploader.ts`): `multipart/form-data` with one file part and
 * the fields supabase-js sends (`cacheControl`, `metadata`, `contentType`),
 * or a raw body whose `content-type`, `cache-control` and base64 `x-metadata`
 * headers describe it. Applies the bucket's limits before any byte is
 * stored: its allowed content types (415) and its size limit (413: a
 * declared length over it is refused unread, a multipart body is read only
 * up to the limit plus room for its fields; a raw stream is cut off while it
 * is stored).
 *
 * @module
 */
import { entityTooLarge, invalidMimeType, noContentProvided } from "./errors.ts";
import { parseMultipart, readLimited } from "./multipart.ts";
import type { Bucket } from "./objects.ts";

/** The largest upload when a bucket sets no limit: hosted Storage's default (50 MB). */
export const GLOBAL_FILE_SIZE_LIMIT = 50 * 1024 * 1024;
/** Room for the multipart envelope and fields (hosted allows 1 MiB of user metadata). */
const MULTIPART_OVERHEAD = 1024 * 1024 + 64 * 1024;

/** An upload's file, ready to be stored. */
export interface UploadBody {
  body: ReadableStream<Uint8Array> | null;
  mimeType: string;
  cacheControl: string;
  userMetadata?: Record<string, unknown>;
  /** The declared length (raw bodies with Content-Length), for the RLS check's metadata. */
  contentLength?: number;
  /** The most bytes the file may have. */
  maxBytes: number;
}

/** The size limit of uploads to `bucket`. */
export function maxFileSize(bucket: Bucket): number {
  return bucket.file_size_limit === null
    ? GLOBAL_FILE_SIZE_LIMIT
    : Math.min(bucket.file_size_limit, GLOBAL_FILE_SIZE_LIMIT);
}

/** Reads the upload in `req` for `bucket`, refusing what the bucket does not accept. */
export async function readUploadBody(req: Request, bucket: Bucket): Promise<UploadBody> {
  const maxBytes = maxFileSize(bucket);
  const allowed = bucket.allowed_mime_types ?? [];
  const contentType = req.headers.get("content-type") ?? "";
  if (contentType.startsWith("multipart/form-data")) {
    return await readMultipart(req, maxBytes, allowed);
  }
  const mimeType = contentType || "application/octet-stream";
  if (allowed.length > 0) validateMimeType(mimeType, allowed);
  const declared = Number(req.headers.get("content-length") ?? "NaN");
  const contentLength = Number.isFinite(declared) && declared >= 0 ? declared : undefined;
  if (contentLength !== undefined && contentLength > maxBytes) throw entityTooLarge();
  const xMetadata = req.headers.get("x-metadata");
  return {
    body: req.body,
    mimeType,
    cacheControl: req.headers.get("cache-control") ?? "no-cache",
    userMetadata: parseXMetadata(xMetadata),
    contentLength,
    maxBytes,
  };
}

async function readMultipart(
  req: Request,
  maxBytes: number,
  allowed: string[],
): Promise<UploadBody> {
  const bytes = await readLimited(req.body, maxBytes + MULTIPART_OVERHEAD);
  const parts = parseMultipart(bytes, req.headers.get("content-type") ?? "");
  const file = parts.find((part) => part.filename !== undefined);
  if (!file) throw noContentProvided();
  const field = (name: string) => {
    const part = parts.find((p) => p.name === name && p.filename === undefined);
    return part && new TextDecoder().decode(part.data);
  };
  // As busboy (hosted's parser): a file part without a type is text/plain.
  const mimeType = field("contentType") || file.contentType || "text/plain";
  if (allowed.length > 0) validateMimeType(mimeType, allowed);
  const metadata = field("metadata") ?? field("userMetadata");
  if (metadata !== undefined && new TextEncoder().encode(metadata).length > 1024 * 1024) {
    throw entityTooLarge("user_metadata");
  }
  if (file.data.byteLength > maxBytes) throw entityTooLarge();
  const cacheTime = field("cacheControl");
  return {
    body: ReadableStream.from([file.data]),
    mimeType,
    cacheControl: cacheTime ? `max-age=${cacheTime}` : "no-cache",
    userMetadata: metadata === undefined ? undefined : parseJson(metadata),
    maxBytes,
  };
}

/**
 * Hosted's `validateMimeType`: `type/subtype` must equal an allowed entry or
 * match a `type/*` entry; anything else (parameters included, so
 * `text/plain;charset=UTF-8` does not match `text/plain`) is 415.
 */
export function validateMimeType(mimeType: string, allowed: readonly string[]): void {
  const requested = mimeType.split("/");
  if (requested.length >= 2) {
    const [type, subtype] = requested;
    for (const entry of allowed) {
      const [allowedType, allowedSubtype] = entry.split("/");
      if (allowedType === type && (allowedSubtype === "*" || allowedSubtype === subtype)) return;
    }
  }
  throw invalidMimeType(mimeType);
}

/** The user metadata of a base64 JSON `x-metadata` header (hosted ignores a malformed one). */
export function parseXMetadata(value: string | null): Record<string, unknown> | undefined {
  if (value === null) return undefined;
  try {
    const bytes = Uint8Array.from(atob(value), (c) => c.charCodeAt(0));
    return parseJson(new TextDecoder().decode(bytes));
  } catch {
    return undefined;
  }
}

function parseJson(value: string): Record<string, unknown> | undefined {
  try {
    const parsed: unknown = JSON.parse(value);
    return parsed !== null && typeof parsed === "object" && !Array.isArray(parsed)
      ? parsed as Record<string, unknown>
      : undefined;
  } catch {
    return undefined;
  }
}
