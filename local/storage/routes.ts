/**
 * The Storage API's object routes that supabase-js's uploads and downloads
 * call, each as hosted Storage answers it (`src/http/routes/object/` of
 * supabase/storage). Paths are relative to `/storage/v1/object/`.
 *
 * @module
 */
import type { TokenVerifier } from "../../supabase/functions/_shared/platform/tokens.ts";
import type { Db } from "../../supabase/functions/_shared/platform/db.ts";
import { optionalCaller, ownerOf, requireCaller } from "./caller.ts";
import { parseXMetadata } from "./body.ts";
import { renderObject } from "./download.ts";
import { invalidParameter, invalidRequest, noSuchBucket } from "./errors.ts";
import type { FileStore } from "./files.ts";
import { mustBeValidBucketName, mustBeValidKey } from "./names.ts";
import { checkCanUpload, findObject } from "./objects.ts";
import { signUrlToken, UPLOAD_URL_SECONDS, verifyUrlToken } from "./tokens.ts";
import { uploadObject } from "./upload.ts";

/** What the routes share. */
export interface RouteContext {
  database: Db;
  tokens: TokenVerifier;
  jwtSecret: string;
  files: FileStore;
}

/** One request to an object route: the request, its URL, and the object it names. */
export interface ObjectRequest {
  req: Request;
  url: URL;
  bucket: string;
  name: string;
}

/** The latest expiry a signed URL may have (hosted's bound, in epoch seconds). */
const MAX_EXPIRY_SECONDS = Math.floor(Number.MAX_SAFE_INTEGER / 1000);

/** Validates the bucket and object name of `r` (400 before anything else is touched). */
function checkNames(r: ObjectRequest): void {
  mustBeValidBucketName(r.bucket);
  mustBeValidKey(r.name);
}

/** `POST upload/sign/{bucket}/{name}`: a signed upload URL, valid two hours → `{ url, token }`. */
export async function signUploadUrl(ctx: RouteContext, r: ObjectRequest): Promise<Response> {
  const caller = await requireCaller(ctx.tokens, r.req);
  checkNames(r);
  const upsert = r.req.headers.get("x-upsert") === "true";
  const owner = ownerOf(caller);
  const declared = Number(r.req.headers.get("content-length") ?? "NaN");
  await checkCanUpload(ctx.database, caller, {
    bucket: r.bucket,
    name: r.name,
    owner,
    metadata: {
      mimetype: r.req.headers.get("content-type") ?? undefined,
      contentLength: Number.isFinite(declared) ? declared : undefined,
    },
    userMetadata: parseXMetadata(r.req.headers.get("x-metadata")),
    version: "1",
  }, upsert);
  const path = `${r.bucket}/${r.name}`;
  const token = await signUrlToken(
    ctx.jwtSecret,
    { url: path, scope: "upload", owner, upsert },
    UPLOAD_URL_SECONDS,
  );
  return Response.json({ url: `/object/upload/sign/${path}?token=${token}`, token });
}

/** `PUT upload/sign/{bucket}/{name}?token=…`: an upload through a signed URL → `{ Key }`. */
export async function uploadToSignedUrl(ctx: RouteContext, r: ObjectRequest): Promise<Response> {
  const claims = await verifyUrlToken(ctx.jwtSecret, tokenOf(r.url), "upload", r.bucket, r.name);
  checkNames(r);
  await uploadObject(ctx.database, ctx.files, r.req, {
    bucket: r.bucket,
    name: r.name,
    owner: claims.owner,
    upsert: claims.upsert === true,
    caller: null,
  });
  return Response.json({ Key: `${r.bucket}/${r.name}` });
}

/** `POST|PUT {bucket}/{name}`: an upload as the caller (PUT or `x-upsert: true` replace) → `{ Id, Key }`. */
export async function createObject(ctx: RouteContext, r: ObjectRequest): Promise<Response> {
  const caller = await requireCaller(ctx.tokens, r.req);
  checkNames(r);
  const id = await uploadObject(ctx.database, ctx.files, r.req, {
    bucket: r.bucket,
    name: r.name,
    owner: ownerOf(caller),
    upsert: r.req.method === "PUT" || r.req.headers.get("x-upsert") === "true",
    caller,
  });
  return Response.json({ Id: id, Key: `${r.bucket}/${r.name}` });
}

/**
 * `POST sign/{bucket}/{name}` with `{ expiresIn }`: a signed download URL
 * for an object the caller can see under RLS → `{ signedURL }`.
 */
export async function signDownloadUrl(ctx: RouteContext, r: ObjectRequest): Promise<Response> {
  const caller = await requireCaller(ctx.tokens, r.req);
  const expiresIn = await expiresInOf(r.req);
  checkNames(r);
  await findObject(ctx.database, caller, r.bucket, r.name);
  const path = `${r.bucket}/${r.name}`;
  const token = await signUrlToken(ctx.jwtSecret, { url: path, scope: "download" }, expiresIn);
  return Response.json({ signedURL: `/object/sign/${path}?token=${token}` });
}

/** `GET|HEAD sign/{bucket}/{name}?token=…[&download]`: the bytes through a signed URL. */
export async function downloadSigned(ctx: RouteContext, r: ObjectRequest): Promise<Response> {
  const claims = await verifyUrlToken(
    ctx.jwtSecret,
    tokenOf(r.url),
    "download",
    r.bucket,
    r.name,
  );
  checkNames(r);
  const object = await findObject(ctx.database, null, r.bucket, r.name);
  return await renderObject(ctx.files, {
    ...r,
    object,
    download: r.url.searchParams.get("download"),
    expires: claims.exp,
    head: r.req.method === "HEAD",
  });
}

/**
 * `GET|HEAD authenticated/{bucket}/{name}` (credential required) and
 * `GET|HEAD {bucket}/{name}` (credential optional): the bytes, for a public
 * bucket to anyone, for a private one to a caller RLS lets see the object.
 */
export async function downloadObject(
  ctx: RouteContext,
  r: ObjectRequest,
  credential: "required" | "optional",
): Promise<Response> {
  const caller = credential === "optional"
    ? await optionalCaller(ctx.tokens, r.req)
    : await requireCaller(ctx.tokens, r.req);
  checkNames(r);
  const bucket = await ctx.database.maybeOne<{ public: boolean }>(
    "select public from storage.buckets where id = $1",
    [r.bucket],
  );
  if (!bucket || (!caller && !bucket.public)) throw noSuchBucket();
  const object = await findObject(ctx.database, bucket.public ? null : caller, r.bucket, r.name);
  return await renderObject(ctx.files, {
    ...r,
    object,
    download: r.url.searchParams.get("download"),
    head: r.req.method === "HEAD",
  });
}

/** `GET|HEAD public/{bucket}/{name}`: the bytes of an object in a public bucket, to anyone. */
export async function downloadPublic(ctx: RouteContext, r: ObjectRequest): Promise<Response> {
  checkNames(r);
  const bucket = await ctx.database.maybeOne<{ public: boolean }>(
    "select public from storage.buckets where id = $1 and public",
    [r.bucket],
  );
  if (!bucket) throw noSuchBucket();
  const object = await findObject(ctx.database, null, r.bucket, r.name);
  return await renderObject(ctx.files, {
    ...r,
    object,
    download: r.url.searchParams.get("download"),
    head: r.req.method === "HEAD",
  });
}

/** The `token` query parameter; 400 `InvalidRequest` without one. */
function tokenOf(url: URL): string {
  const token = url.searchParams.get("token");
  if (!token) throw invalidRequest("querystring must have required property 'token'");
  return token;
}

/** The `expiresIn` of a sign request's JSON body (whole seconds, at least 1). */
async function expiresInOf(req: Request): Promise<number> {
  let body: unknown;
  try {
    body = await req.json();
  } catch {
    throw invalidRequest("Body is not valid JSON");
  }
  if (body === null || typeof body !== "object" || Array.isArray(body)) {
    throw invalidRequest("body must be object");
  }
  const expiresIn = (body as { expiresIn?: unknown }).expiresIn;
  if (expiresIn === undefined) {
    throw invalidRequest("body must have required property 'expiresIn'");
  }
  if (typeof expiresIn !== "number" || !Number.isInteger(expiresIn)) {
    throw invalidRequest("body/expiresIn must be integer");
  }
  if (expiresIn < 1) throw invalidRequest("body/expiresIn must be >= 1");
  if (expiresIn > MAX_EXPIRY_SECONDS - Math.floor(Date.now() / 1000)) {
    throw invalidParameter("expiresIn");
  }
  return expiresIn;
}
