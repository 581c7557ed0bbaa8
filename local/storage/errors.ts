/**
 * The Storage API's error bodies, as hosted Supabase Storage renders them
 * (`src/internal/errors/codes.ts` and `src/http/error-handler.ts` of
 * supabase/storage): `{ statusCode: "404", code: "NoSuchKey", error:
 * "not_found", message: "Object not found" }`. supabase-js builds its
 * `StorageApiError` from them (`statusCode`, `code`, `message`).
 *
 * Hosted Storage answers every such error with HTTP 400 (500 for a 500); the
 * logical status travels in the body's `statusCode`. Only an unknown route
 * is a real 404. This copy does the same, so code written against the local
 * stack reads `error.statusCode` exactly as it must on hosted Supabase.
 *
 * @module
 */

/** A failure of the Storage API, rendered like hosted Storage renders it. */
export class StorageApiFailure extends Error {
  override name = "StorageApiFailure";

  /**
   * `statusCode` is the logical status (the body's), `code` the hosted error
   * code, `error` the hosted short name (defaults to the code).
   */
  constructor(
    readonly statusCode: number,
    readonly code: string,
    message: string,
    readonly error: string = code,
    /** The HTTP status; hosted answers 400 for every logical 4xx. */
    readonly httpStatus: number = statusCode >= 500 ? 500 : 400,
  ) {
    super(message);
  }

  /** The JSON body. */
  toBody(): { statusCode: string; code: string; error: string; message: string } {
    return {
      statusCode: String(this.statusCode),
      code: this.code,
      error: this.error,
      message: this.message,
    };
  }

  /** The answer: the body as JSON with the HTTP status. */
  toResponse(headers: HeadersInit = {}): Response {
    return Response.json(this.toBody(), { status: this.httpStatus, headers });
  }
}

/** 404 `NoSuchBucket`: the bucket does not exist (or is not public where it must be). */
export function noSuchBucket(): StorageApiFailure {
  return new StorageApiFailure(404, "NoSuchBucket", "Bucket not found", "Bucket not found");
}

/** 404 `NoSuchKey`: the object does not exist or the caller may not see it. */
export function noSuchKey(): StorageApiFailure {
  return new StorageApiFailure(404, "NoSuchKey", "Object not found", "not_found");
}

/** 404 `NoSuchKey` as the renderer answers when the bytes are missing. */
export function resourceNotFound(): StorageApiFailure {
  return new StorageApiFailure(404, "NoSuchKey", "The resource was not found", "Not found");
}

/** 404 `InvalidRequest` for a route the API does not have (a real HTTP 404). */
export function routeNotFound(method: string, url: string): StorageApiFailure {
  return new StorageApiFailure(
    404,
    "InvalidRequest",
    `Route ${method}:${url} not found`,
    "Not Found",
    404,
  );
}

/** 404 `InvalidRequest`: a row the write refers to (the bucket) does not exist. */
export function relatedResourceNotFound(): StorageApiFailure {
  return new StorageApiFailure(404, "InvalidRequest", "The related resource does not exist");
}

/** 400 `InvalidJWT`: a signed URL's token is not valid (signature, expiry, format). */
export function invalidJwt(message = "Invalid JWT"): StorageApiFailure {
  return new StorageApiFailure(400, "InvalidJWT", message);
}

/** 400 `InvalidSignature`: a valid token, but for another object or another scope. */
export function invalidSignature(message = "Invalid signature"): StorageApiFailure {
  return new StorageApiFailure(400, "InvalidSignature", message);
}

/** 400 `ExpiredToken`: a signed URL's token has expired. */
export function expiredToken(): StorageApiFailure {
  return new StorageApiFailure(400, "ExpiredToken", "The provided token has expired.");
}

/** 403 `AccessDenied`: no valid credential, or RLS refused the write. */
export function accessDenied(message = "Access denied"): StorageApiFailure {
  return new StorageApiFailure(403, "AccessDenied", message, "Unauthorized");
}

/** 409 `KeyAlreadyExists`: an upload without upsert to a name that exists. */
export function keyAlreadyExists(): StorageApiFailure {
  return new StorageApiFailure(409, "KeyAlreadyExists", "The resource already exists", "Duplicate");
}

/** 413 `EntityTooLarge`: the file exceeds the bucket's (or the global) size limit. */
export function entityTooLarge(
  entity = "object",
  limit = "the maximum allowed size",
): StorageApiFailure {
  return new StorageApiFailure(
    413,
    "EntityTooLarge",
    `The ${entity} exceeded ${limit}`,
    "Payload too large",
  );
}

/** 415 `InvalidMimeType`: the bucket does not accept the file's content type. */
export function invalidMimeType(mimeType: string): StorageApiFailure {
  return new StorageApiFailure(
    415,
    "InvalidMimeType",
    `mime type ${mimeType} is not supported`,
    "invalid_mime_type",
  );
}

/** 400 `InvalidKey`: an object name Storage does not accept. */
export function invalidKey(key: string): StorageApiFailure {
  const shown = key.length > 200 ? `${key.slice(0, 200)}…` : key;
  return new StorageApiFailure(400, "InvalidKey", `Invalid key: ${shown}`);
}

/** 400 `InvalidBucketName`: a bucket name Storage does not accept. */
export function invalidBucketName(): StorageApiFailure {
  return new StorageApiFailure(400, "InvalidBucketName", "Bucket name invalid", "Invalid Input");
}

/** 400 `InvalidRequest`: a malformed request (missing header, parameter or body). */
export function invalidRequest(message: string): StorageApiFailure {
  return new StorageApiFailure(400, "InvalidRequest", message, "Bad Request");
}

/** 400 `InvalidParameter`. */
export function invalidParameter(name: string): StorageApiFailure {
  return new StorageApiFailure(400, "InvalidParameter", `Invalid Parameter ${name}`);
}

/** 400 `InvalidRequest`: an upload without a file. */
export function noContentProvided(): StorageApiFailure {
  return new StorageApiFailure(400, "InvalidRequest", "No content provided");
}

/** 500 `InternalError`: anything unexpected (logged; the body leaks nothing). */
export function internalError(): StorageApiFailure {
  return new StorageApiFailure(500, "InternalError", "Internal Server Error", "Internal");
}
