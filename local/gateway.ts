/**
 * The local stand-in for Supabase's edge gateway: routes
 * `/functions/v1/<name>/...` to the function's handler as `/<name>/...`,
 * applies `verify_jwt` from config.toml, and serves the project's JWKS at
 * `/auth/v1/.well-known/jwks.json`.
 *
 * @module
 */
import type { EdgeFunction } from "../supabase/functions/_shared/function.ts";
import type { Runtime } from "../supabase/functions/_shared/runtime.ts";
import { HttpError } from "../supabase/functions/_shared/errors.ts";
import type { HeaderPairs } from "../supabase/functions/_shared/headers.ts";

/** Options for {@linkcode createGateway}. */
export interface GatewayOptions {
  functions: ReadonlyMap<string, EdgeFunction>;
  runtime: Runtime;
  /** `verify_jwt` per function (missing: true). */
  verifyJwt: ReadonlyMap<string, boolean>;
  /** The public JWK set served to verifiers. */
  jwks: unknown;
}

/** Builds the gateway's fetch handler. */
export function createGateway(options: GatewayOptions): (req: Request) => Promise<Response> {
  const handlers = new Map<string, (req: Request) => Promise<Response>>();
  for (const [name, fn] of options.functions) handlers.set(name, fn.with(options.runtime));
  const jwksBody = JSON.stringify(options.jwks);
  const cors = options.runtime.cors;

  return async (req) => {
    const url = new URL(req.url);
    if (url.pathname === "/auth/v1/.well-known/jwks.json") {
      return new Response(jwksBody, {
        headers: { "content-type": "application/json", "cache-control": "max-age=600" },
      });
    }
    const match = /^\/functions\/v1\/([^/]+)(\/.*)?$/.exec(url.pathname);
    if (!match) {
      return errorResponse(
        new HttpError(404, "not_found", `No route for "${url.pathname}"`),
        cors.headersFor(null),
      );
    }
    const name = match[1]!;
    const handler = handlers.get(name);
    if (!handler) {
      return errorResponse(
        new HttpError(404, "function_not_found", `Function "${name}" does not exist`),
        cors.headersFor(req.headers.get("origin")),
      );
    }
    if (req.method !== "OPTIONS" && options.verifyJwt.get(name) !== false) {
      const rejected = await gatewayJwtCheck(req, options.runtime);
      if (rejected) return errorResponse(rejected, cors.headersFor(req.headers.get("origin")));
    }
    const forwarded = new URL(`/${name}${match[2] ?? ""}${url.search}`, url.origin);
    // Small bodies are handed over whole (cheaper than re-streaming); large or
    // unsized ones stream through so the function's body limit still applies.
    const size = Number(req.headers.get("content-length") ?? "-1");
    const body = size >= 0 && size <= 64 * 1024 ? await req.arrayBuffer() : req.body;
    return await handler(
      new Request(forwarded, { method: req.method, headers: req.headers, body }),
    );
  };
}

/** As the hosted gateway: a valid project JWT is required (opaque tokens are not JWTs). */
async function gatewayJwtCheck(req: Request, runtime: Runtime): Promise<HttpError | null> {
  const header = req.headers.get("authorization");
  const token = /^Bearer\s+(\S+)$/i.exec(header ?? "")?.[1];
  if (!token || token.split(".").length !== 3) {
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

function errorResponse(error: HttpError, headers: HeaderPairs): Response {
  return Response.json(error.toBody(), {
    status: error.status,
    headers: headers.map(([k, v]) => [k, v]),
  });
}
