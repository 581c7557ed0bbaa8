/**
 * The local Storage API: the subset of hosted Supabase Storage that
 * supabase-js's uploads and downloads use, served under `/storage/v1/`
 * from the project's database (`storage.buckets`, `storage.objects`, with
 * their RLS) and files under a root folder:
 *
 * | route (after `/storage/v1`)                     | supabase-js                  |
 * |-------------------------------------------------|------------------------------|
 * | `POST /object/upload/sign/{bucket}/{name}`      | `createSignedUploadUrl`      |
 * | `PUT /object/upload/sign/{bucket}/{name}?token` | `uploadToSignedUrl`          |
 * | `POST\|PUT /object/{bucket}/{name}`             | `upload`, `update`           |
 * | `POST /object/sign/{bucket}/{name}`             | `createSignedUrl`            |
 * | `GET\|HEAD /object/sign/{bucket}/{name}?token`  | the signed URL itself        |
 * | `GET\|HEAD /object/{bucket}/{name}`             | `download`                   |
 * | `GET\|HEAD /object/authenticated/{bucket}/{name}` | (authenticated download)   |
 * | `GET\|HEAD /object/public/{bucket}/{name}`      | `getPublicUrl`'s URL         |
 *
 * Answers and errors have hosted Storage's shapes (see `errors.ts`); any
 * other route is a 404. CORS and security headers are the gateway's job.
 *
 * @module
 */
import type { TokenVerifier } from "../../supabase/functions/_shared/platform/tokens.ts";
import type { Db } from "../../supabase/functions/_shared/platform/db.ts";
import { describeError, type Logger } from "../../supabase/functions/_shared/platform/log.ts";
import { internalError, routeNotFound, StorageApiFailure } from "./errors.ts";
import { FileStore } from "./files.ts";
import { splitObjectPath } from "./names.ts";
import {
  createObject,
  downloadObject,
  downloadPublic,
  downloadSigned,
  type ObjectRequest,
  type RouteContext,
  signDownloadUrl,
  signUploadUrl,
  uploadToSignedUrl,
} from "./routes.ts";

/** Options for {@linkcode createStorageApi}. */
export interface StorageApiOptions {
  /** The project's database (the superuser connection; RLS checks switch roles). */
  database: Db;
  /** Verifies the callers' bearer credentials. */
  tokens: TokenVerifier;
  /** The project's JWT secret: signs and verifies signed-URL tokens (HS256). */
  jwtSecret: string;
  /** The folder the objects' files live in. */
  root: string;
  /** Where request lines and unexpected errors go. */
  log?: Logger;
}

/** The path prefix of the Storage API. */
export const STORAGE_PREFIX = "/storage/v1/";

/** Route segments after `/object/` that are never bucket names (hosted's fixed routes). */
const RESERVED = new Set([
  "authenticated",
  "copy",
  "info",
  "list",
  "list-v2",
  "move",
  "public",
  "sign",
  "upload",
]);

type Handler = (ctx: RouteContext, r: ObjectRequest) => Promise<Response>;

/** Builds the Storage API's fetch handler; fails now on a missing secret or root. */
export function createStorageApi(options: StorageApiOptions): (req: Request) => Promise<Response> {
  if (options.jwtSecret.length < 32) {
    throw new Error(
      "Cannot create the Storage API: the JWT secret must have 32 characters or more",
    );
  }
  if (!options.root) throw new Error("Cannot create the Storage API: no root folder given");
  const ctx: RouteContext = {
    database: options.database,
    tokens: options.tokens,
    jwtSecret: options.jwtSecret,
    files: new FileStore(options.root),
  };
  const log = options.log?.with({ component: "storage" });

  return async (req) => {
    const started = performance.now();
    const url = new URL(req.url);
    let res: Response;
    let code: string | undefined;
    try {
      res = await route(ctx, req, url);
    } catch (error) {
      const failure = error instanceof StorageApiFailure ? error : internalError();
      if (failure !== error) {
        log?.error("unexpected error", { path: url.pathname, ...describeError(error) });
      }
      code = failure.code;
      // A refused upload may leave its body unread: close the connection
      // rather than read the rest (as hosted does after a cut-off upload).
      res = failure.toResponse(req.body ? { connection: "close" } : {});
    }
    log?.info("request", {
      method: req.method,
      path: url.pathname,
      status: res.status,
      ...(code ? { code } : {}),
      duration_ms: Math.round(performance.now() - started),
    });
    return res;
  };
}

/** Finds the route of `req` and runs it; 404 for anything else. */
function route(ctx: RouteContext, req: Request, url: URL): Promise<Response> {
  const path = url.pathname.startsWith(STORAGE_PREFIX)
    ? url.pathname.slice(STORAGE_PREFIX.length)
    : "";
  const method = req.method;
  const notFound = () => routeNotFound(method, `/${path}`);
  if (!path.startsWith("object/")) throw notFound();
  const rest = path.slice("object/".length);
  const [handler, objectPath] = pick(method, rest);
  if (!handler) throw notFound();
  const target = splitObjectPath(objectPath);
  if (!target) throw notFound();
  return handler(ctx, { req, url, ...target });
}

/** The handler for `method` on `object/<rest>` and the `{bucket}/{name}` part of `rest`. */
function pick(method: string, rest: string): [Handler | undefined, string] {
  const get = method === "GET" || method === "HEAD";
  const write = method === "POST" || method === "PUT";
  if (rest.startsWith("upload/sign/")) {
    const path = rest.slice("upload/sign/".length);
    return [
      method === "POST" ? signUploadUrl : method === "PUT" ? uploadToSignedUrl : undefined,
      path,
    ];
  }
  if (rest.startsWith("sign/")) {
    return [method === "POST" ? signDownloadUrl : get ? downloadSigned : undefined, rest.slice(5)];
  }
  if (rest.startsWith("authenticated/")) {
    const path = rest.slice("authenticated/".length);
    return [get ? (ctx, r) => downloadObject(ctx, r, "required") : undefined, path];
  }
  if (rest.startsWith("public/")) return [get ? downloadPublic : undefined, rest.slice(7)];
  if (RESERVED.has(rest.split("/", 1)[0]!)) return [undefined, rest];
  if (write) return [createObject, rest];
  if (get) return [(ctx, r) => downloadObject(ctx, r, "optional"), rest];
  return [undefined, rest];
}
