/**
 * `defineFunction`: the one factory every edge function is declared with.
 * It owns, once for all functions, CORS preflight, security headers, the POST
 * method rule, JSON parsing with a body limit, zod validation, authentication
 * and the access rule, the error model, the request id and one structured log
 * line per request. Handlers receive validated input, the caller and `ctx`.
 *
 * @module
 */
import { Hono } from "hono";
import type { z } from "zod";
import { type FunctionName, FUNCTIONS } from "../../../shared/functions.ts";
import { type Access, ACCESS_RULES, authorize, authorizeDeal, type CallerFor } from "./access.ts";
import { DEFAULT_BODY_LIMIT, parseJsonObject, readBodyText } from "./body.ts";
import type { Caller } from "./caller.ts";
import { Context } from "./context.ts";
import { HttpError } from "./errors.ts";
import { describeError } from "./log.ts";
import { defaultRuntime, type Runtime } from "./runtime.ts";
import { toHttpError } from "./to_http_error.ts";

/** What a handler receives. */
export interface HandlerArgs<A extends Access, I> {
  /** The validated body (webhooks: undefined; see `rawBody`). */
  input: I;
  /** Who is calling, narrowed by the access rule. */
  caller: CallerFor<A>;
  /** Per-request dependencies. */
  ctx: Context;
  /** The incoming request (its body is already read). */
  request: Request;
  /** The body exactly as received, for signature checks. */
  rawBody: string;
}

/** A handler's result: a JSON value answered with 200, or a `Response` of its own. */
export type HandlerResult = unknown;

/** A function's declaration. */
export interface FunctionDefinition<A extends Access, S extends z.ZodType | undefined> {
  /** The function's name; must be in the catalog (`shared/functions.ts`). */
  name: FunctionName;
  /** Who may call it; must match the catalog. */
  access: A;
  /** Schema of the JSON body; omitted: the body must be empty or `{}`-like and is ignored. */
  input?: S;
  /** Body size limit in bytes (default 1 MiB). */
  bodyLimit?: number;
  /** The work. */
  handle(
    args: HandlerArgs<A, S extends z.ZodType ? z.output<S> : undefined>,
  ): Promise<HandlerResult> | HandlerResult;
}

/** A declared function: a fetch handler, plus a way to run it on another runtime. */
export interface EdgeFunction {
  /** Serves a request on the isolate's default runtime. */
  (request: Request): Promise<Response>;
  /** The declaration. */
  readonly definition: { name: FunctionName; access: Access; input?: z.ZodType };
  /** A fetch handler bound to `runtime` (local server, tests). */
  with(runtime: Runtime): (request: Request) => Promise<Response>;
}

/** Declares an edge function; misdeclarations fail here, at cold start. */
export function defineFunction<A extends Access, S extends z.ZodType | undefined = undefined>(
  definition: FunctionDefinition<A, S>,
): EdgeFunction {
  const { name, access } = definition;
  const entry = FUNCTIONS[name];
  if (!entry) throw new Error(`Cannot define function "${name}": it is not in the catalog`);
  if (!ACCESS_RULES.includes(access)) {
    throw new Error(`Cannot define function "${name}": unknown access "${access}"`);
  }
  if (entry.access !== access) {
    throw new Error(
      `Cannot define function "${name}": access "${access}" differs from the catalog's "${entry.access}"`,
    );
  }
  const bodyLimit = definition.bodyLimit ?? DEFAULT_BODY_LIMIT;
  const apps = new WeakMap<Runtime, (request: Request) => Promise<Response>>();

  const build = (runtime: Runtime) => {
    type Vars = { ctx: Context; caller: string; headers: Array<[string, string]>; code?: string };
    const app = new Hono<{ Variables: Vars }>();
    const security = Object.entries(runtime.securityHeaders);
    const preflight = Object.entries(runtime.cors.preflightHeaders());
    const json = (body: unknown, status: number, headers: Array<[string, string]>) =>
      new Response(JSON.stringify(body), {
        status,
        headers: [["content-type", "application/json"], ...headers],
      });

    app.use("*", async (c, next) => {
      const started = performance.now();
      const requestId = c.req.header("x-request-id")?.slice(0, 100) || crypto.randomUUID();
      const log = runtime.log.with({ function: name, request_id: requestId });
      c.set("ctx", new Context(runtime, requestId, log));
      c.set("caller", "none");
      c.set("headers", [
        ...security,
        ...runtime.cors.headersFor(c.req.header("origin") ?? null),
        ["X-Request-Id", requestId],
      ]);
      await next();
      log.info("request", {
        method: c.req.method,
        status: c.res.status,
        duration_ms: Math.round((performance.now() - started) * 10) / 10,
        caller: c.get("caller"),
        code: c.get("code"),
      });
    });

    app.options(
      "*",
      (c) => new Response(null, { status: 204, headers: [...c.get("headers"), ...preflight] }),
    );

    app.post("*", async (c) => {
      const ctx = c.get("ctx");
      let caller: Caller | { kind: "none" } = { kind: "none" };
      if (access !== "webhook") {
        caller = await runtime.tokens.verify(c.req.header("authorization") ?? null);
        c.set("caller", caller.kind);
        await authorize(access, caller, ctx);
      }
      const rawBody = await readBodyText(c.req.raw, bodyLimit);
      let input: unknown = undefined;
      if (access !== "webhook") {
        const json = parseJsonObject(rawBody);
        if (definition.input) {
          const parsed = definition.input.safeParse(json);
          if (!parsed.success) {
            throw new HttpError(
              400,
              "invalid_input",
              "Cannot accept the request body: it does not match the expected shape",
              parsed.error.issues.map((issue) => ({
                path: issue.path.map(String).join("."),
                code: issue.code,
                message: issue.message,
              })),
            );
          }
          input = parsed.data;
        }
      }
      if (access === "deal-participant" && caller.kind === "user") {
        await authorizeDeal(caller, input, ctx);
      }
      const result = await definition.handle({
        input: input as never,
        caller: caller as CallerFor<A>,
        ctx,
        request: c.req.raw,
        rawBody,
      });
      if (result instanceof Response) {
        for (const [key, value] of c.get("headers")) result.headers.set(key, value);
        return result;
      }
      return json(result ?? {}, 200, c.get("headers"));
    });

    app.all("*", (c) => {
      throw new HttpError(
        405,
        "method_not_allowed",
        `Cannot ${c.req.method} this function: use POST`,
        undefined,
        { Allow: "POST, OPTIONS" },
      );
    });

    app.onError((error, c) => {
      const httpError = toHttpError(error);
      if (httpError.status >= 500) {
        // An HttpError is a known outcome (its message says it all); anything
        // else is a bug, logged with its stack.
        c.get("ctx").log.error("request failed", {
          code: httpError.code,
          ...(error instanceof HttpError ? { error_message: error.message } : describeError(error)),
        });
      }
      c.set("code", httpError.code);
      return json(httpError.toBody(), httpError.status, [
        ...c.get("headers"),
        ...Object.entries(httpError.headers ?? {}),
      ]);
    });

    return (request: Request) => Promise.resolve(app.fetch(request));
  };

  const bound = (runtime: Runtime) => {
    let fetch = apps.get(runtime);
    if (!fetch) {
      fetch = build(runtime);
      apps.set(runtime, fetch);
    }
    return fetch;
  };

  const edge = ((request: Request) => bound(defaultRuntime())(request)) as EdgeFunction;
  Object.defineProperty(edge, "definition", {
    value: { name, access, input: definition.input },
  });
  Object.defineProperty(edge, "with", { value: bound });
  return edge;
}
