/**
 * The local stand-in for Supabase's edge gateway: routes
 * `/functions/v1/<name>/...` to the function's handler as `/<name>/...` (the
 * caller's request itself, its `url` read so: no copy of its headers or body),
 * applies `verify_jwt` from config.toml, and serves the project's JWKS at
 * `/auth/v1/.well-known/jwks.json`. Its own answers (404, the `verify_jwt`
 * 401, the JWKS) carry what a function's answers carry: the runtime's
 * security headers, CORS headers for the caller's origin and `X-Request-Id`.
 * With `mail: true` and `LOCAL_DEV=true` it also serves the local mail viewer
 * at `/_local/mail` (local/console/mail_viewer.ts, which sets its own CSP and no CORS),
 * and given a `console` handler (local/console/server.ts) every other
 * `/_local/` path.
 * Given a `storage` handler (local/storage/api.ts) it passes every
 * `/storage/v1/...` request to it unchanged, answers their CORS preflight
 * itself, and adds the same security, CORS and request-id headers to the
 * Storage answers, so a browser at the site's origin can upload and download.
 * Before any of it, it refuses (403) a request to a `Host` that is not
 * loopback, or from a page whose origin the CORS policy does not admit.
 *
 * @module
 */
import type { EdgeFunction } from "../supabase/functions/_shared/platform/function.ts";
import type { Runtime } from "../supabase/functions/_shared/platform/runtime.ts";
import { HttpError } from "../supabase/functions/_shared/platform/errors.ts";
import { type HeaderPairs, requestIdOf } from "../supabase/functions/_shared/platform/headers.ts";
import { isLoopbackHost } from "../supabase/functions/_shared/lib/loopback.ts";
import { isConsolePath } from "./console/layout.ts";
import { createMailViewer, isMailViewerPath } from "./console/mail_viewer.ts";
import { STORAGE_PREFIX } from "./storage/api.ts";

/** Options for {@linkcode createGateway}. */
export interface GatewayOptions {
  functions: ReadonlyMap<string, EdgeFunction>;
  runtime: Runtime;
  /** `verify_jwt` per function (missing: true). */
  verifyJwt: ReadonlyMap<string, boolean>;
  /** The public JWK set served to verifiers. */
  jwks: unknown;
  /**
   * Serve the local mail viewer at `/_local/mail` from `runtime.database`;
   * only when the runtime also has `LOCAL_DEV=true` (default: off).
   */
  mail?: boolean;
  /** The local Storage API (local/storage/api.ts), served under `/storage/v1/`. */
  storage?: (req: Request) => Promise<Response>;
  /** The local console (local/console/server.ts), served under `/_local/` (but the mail viewer). */
  console?: (req: Request) => Promise<Response>;
}

/** The path of the JWKS the gateway serves. */
export const JWKS_PATH = "/auth/v1/.well-known/jwks.json";

/** Where the functions are served. */
const FUNCTIONS_PREFIX = "/functions/v1/";
/** A function's path: its name, then what follows it. */
const FUNCTION_PATH = /^\/functions\/v1\/([^/]+)(\/.*)?$/;

/** Methods the JWKS endpoint answers. */
const JWKS_METHODS = "GET, HEAD, OPTIONS";
/** Methods the Storage API answers (for CORS preflight). */
const STORAGE_METHODS = "GET, HEAD, POST, PUT, OPTIONS";

/** Builds the gateway's fetch handler. */
export function createGateway(options: GatewayOptions): (req: Request) => Promise<Response> {
  const { runtime } = options;
  const handlers = new Map<string, (req: Request) => Promise<Response>>();
  for (const [name, fn] of options.functions) handlers.set(name, fn.with(runtime));
  const mailViewer = options.mail && runtime.env.values.LOCAL_DEV
    ? createMailViewer(runtime)
    : undefined;
  const jwksBody = JSON.stringify(options.jwks);
  const preflight: HeaderPairs = Object.entries({
    ...runtime.cors.preflightHeaders(),
    "Access-Control-Allow-Methods": JWKS_METHODS,
  });
  const storagePreflight: HeaderPairs = Object.entries({
    ...runtime.cors.preflightHeaders(),
    "Access-Control-Allow-Methods": STORAGE_METHODS,
  });

  /** The headers a function's answer carries (the factory's own set). */
  const responseHeaders = (req: Request, requestId = requestIdOf(req)): HeaderPairs =>
    runtime.responseHeaders(req.headers.get("origin"), requestId);
  const fail = (req: Request, error: HttpError): Response => {
    const requestId = requestIdOf(req);
    runtime.log.with({ component: "gateway", request_id: requestId }).info("request", {
      method: req.method,
      path: new URL(req.url).pathname,
      status: error.status,
      code: error.code,
    });
    return runtime.jsonResponse(
      JSON.stringify(error.toBody()),
      error.status,
      req.headers.get("origin"),
      requestId,
      error.headers,
    );
  };

  return async (req) => {
    const url = new URL(req.url);
    const path = url.pathname;
    const refused = localOnly(req, url, runtime);
    if (refused) return fail(req, refused);
    if (path === JWKS_PATH) {
      if (req.method === "OPTIONS") {
        return new Response(null, {
          status: 204,
          headers: [...responseHeaders(req), ...preflight, ["Allow", JWKS_METHODS]],
        });
      }
      if (req.method !== "GET" && req.method !== "HEAD") {
        return fail(
          req,
          new HttpError(
            405,
            "method_not_allowed",
            `Cannot ${req.method} the JWKS: use GET`,
            undefined,
            { Allow: JWKS_METHODS },
          ),
        );
      }
      return new Response(req.method === "HEAD" ? null : jwksBody, {
        headers: [
          ...responseHeaders(req),
          ["content-type", "application/json"],
          ["cache-control", "max-age=600"],
        ],
      });
    }
    if (!path.startsWith(FUNCTIONS_PREFIX)) {
      if (mailViewer && isMailViewerPath(path)) return await mailViewer(req);
      if (options.console && isConsolePath(path)) return await options.console(req);
      if (options.storage && path.startsWith(STORAGE_PREFIX)) {
        if (req.method === "OPTIONS") {
          return new Response(null, {
            status: 204,
            headers: [...responseHeaders(req), ...storagePreflight, ["Allow", STORAGE_METHODS]],
          });
        }
        return withHeaders(await options.storage(req), responseHeaders(req));
      }
    }
    const match = FUNCTION_PATH.exec(path);
    if (!match) {
      return fail(req, new HttpError(404, "not_found", `No route for "${path}"`));
    }
    const name = match[1]!;
    const handler = handlers.get(name);
    if (!handler) {
      return fail(
        req,
        new HttpError(404, "function_not_found", `Function "${name}" does not exist`),
      );
    }
    if (req.method !== "OPTIONS" && options.verifyJwt.get(name) !== false) {
      const rejected = await gatewayJwtCheck(req, runtime);
      if (rejected) return fail(req, rejected);
    }
    // The function gets the request itself, its URL read as `/<name>/...`
    // (so the function's body limit applies to the caller's body as sent): a
    // copy (`new Request(url, { method, headers, body })`) checks every
    // header again and takes the body over, which cost more than the rest of
    // the gateway (`bench/gateway.ts`).
    Object.defineProperty(req, "url", {
      value: `${url.origin}/${name}${match[2] ?? ""}${url.search}`,
      configurable: true,
    });
    return await handler(req);
  };
}

/**
 * Every local credential is public (the CLI's well-known keys, the HS256
 * secret, the scheduler token), so the local stack answers only this
 * machine: a loopback `Host` (a name of another site that resolves to
 * 127.0.0.1, DNS rebinding, reads nothing) and, from a browser, a page whose
 * origin the runtime's CORS policy admits (`deno task start` allows loopback
 * pages on any port and `SITE_URL`; `ALLOWED_ORIGINS` overrides). A page
 * elsewhere cannot even send what CORS would not let it read.
 */
function localOnly(req: Request, url: URL, runtime: Runtime): HttpError | null {
  if (!isLoopbackHost(url.hostname)) {
    return new HttpError(
      403,
      "forbidden",
      `The local stack answers on 127.0.0.1 and localhost only, not "${url.hostname}"`,
    );
  }
  const origin = req.headers.get("origin");
  if (origin !== null && !runtime.cors.admits(origin)) {
    return new HttpError(
      403,
      "origin_not_allowed",
      `The local stack answers pages on this machine and SITE_URL only, not "${origin}" ` +
        "(ALLOWED_ORIGINS lists the origins it allows)",
    );
  }
  return null;
}

/** `res` with `extra` headers added (its own `Vary` kept). */
function withHeaders(res: Response, extra: HeaderPairs): Response {
  const headers = new Headers(res.headers);
  for (const [name, value] of extra) {
    if (name.toLowerCase() === "vary") headers.append(name, value);
    else headers.set(name, value);
  }
  return new Response(res.body, { status: res.status, statusText: res.statusText, headers });
}

/** A bearer token of an `Authorization` header. */
const BEARER = /^Bearer\s+(\S+)$/i;
/** Exactly two dots (`split(".").length === 3`). */
const THREE_PARTS = /^[^.]*\.[^.]*\.[^.]*$/;

/**
 * As the hosted platform's `verify_jwt` check: a valid project JWT in
 * `Authorization` is required; an API key is not a JWT, neither as a bearer
 * token nor in the `apikey` header, which this check does not read
 * (https://supabase.com/docs/guides/functions/auth-headers).
 */
async function gatewayJwtCheck(req: Request, runtime: Runtime): Promise<HttpError | null> {
  const header = req.headers.get("authorization");
  const token = header === null ? undefined : BEARER.exec(header)?.[1];
  if (!token || !THREE_PARTS.test(token)) {
    return new HttpError(401, "unauthorized", "Invalid JWT: missing or malformed bearer token");
  }
  try {
    await runtime.tokens.verify(header);
    return null;
  } catch (error) {
    if (error instanceof HttpError) {
      return new HttpError(401, "unauthorized", `Invalid JWT: ${error.message}`);
    }
    throw error;
  }
}
