/**
 * `defineFunction`: the one factory every edge function is declared with.
 * A function's folder declares, in its `handler.ts`, its catalog entry (who
 * may call it, its group, what it does, how to load its request's schema
 * and the name of its answer's) together with its handler; `deno task catalog` gathers
 * the declarations into the frontend's catalog (`shared/catalog.ts`). See
 * `docs/functions.md#adding-a-function`. The factory owns, once for all functions, CORS preflight,
 * security headers, the POST method rule, JSON parsing with a body limit,
 * refusing what PostgreSQL cannot store (NUL, lone surrogates, deep
 * nesting), zod validation, authentication and the access rule,
 * per-caller rate limits, the error model, the request id and one
 * structured log line per request. Handlers receive validated input, the
 * caller and `ctx`.
 *
 * A declared rate limit may be overridden per deployment with `RATE_LIMITS`
 * (see `env.ts`); the factory applies the override when it binds a function
 * to a runtime, and refuses there an override naming a function that is not
 * in the catalog or that declares no limit.
 *
 * @module
 */
import { Hono } from "hono/quick";
import type { z } from "zod";
import type { Access } from "../../../../shared/access.ts";
import { FUNCTION_NAMES } from "../../../../shared/function_names.ts";
import type { FunctionGroup } from "../../../../shared/function_groups.ts";
import type * as Contract from "../../../../shared/mod.ts";
import { ACCESS_RULES, authorize, authorizeDeal, type CallerFor } from "./access.ts";
import { DEFAULT_BODY_LIMIT, parseJsonObject, readBodyText, refuseUnstorable } from "./body.ts";
import type { Caller } from "./caller.ts";
import { Context } from "./context.ts";
import type { RateLimitOverride } from "./env.ts";
import { HttpError } from "./errors.ts";
import { requestIdOf } from "./headers.ts";
import { describeError } from "./log.ts";
import { enforceRateLimit, type RateLimit, rateLimitKey } from "./rate_limit.ts";
import { defaultRuntime, type Runtime } from "./runtime.ts";
import { toHttpError } from "./to_http_error.ts";

/** The export name of a schema of the contract (`shared/`). */
export type SchemaName = {
  [K in keyof typeof Contract]: (typeof Contract)[K] extends z.ZodType ? K : never;
}[keyof typeof Contract];

/** What a handler receives. */
export interface HandlerArgs<
  A extends Access,
  I,
  G extends FunctionGroup = FunctionGroup,
  T extends boolean = false,
> {
  /** The validated body (webhooks: undefined; see `rawBody`). */
  input: I;
  /** Who is calling, narrowed by the access rule. */
  caller: CallerFor<A, G, T>;
  /** Per-request dependencies. */
  ctx: Context;
  /** The incoming request (its body is already read). */
  request: Request;
  /** The body exactly as received, for signature checks. */
  rawBody: string;
}

/** The facts the factory needs about a function. */
export interface FunctionSpec<
  A extends Access = Access,
  S extends z.ZodType | undefined = undefined,
  G extends FunctionGroup = FunctionGroup,
  T extends boolean = false,
> {
  name: string;
  access: A;
  group: G;
  /** The scheduler (service-role key or `SCHEDULER_TOKEN`) may start an admin function too. */
  scheduler?: T;
  /**
   * Schema of the JSON body (probe functions in tests), or how to load it
   * (declared functions: on the first request that passes the access rule);
   * absent: the body must be empty or a JSON object, and is ignored.
   */
  input?: S | (() => Promise<Exclude<S, undefined>>);
  /** Export name of the answer's schema in `shared/` (checked by clients and tests, never loaded here). */
  output?: SchemaName;
  /** One line on what it does. */
  summary?: string;
  /** Why the team added it, for a function beyond the interface's 46. */
  beyondInterface?: string;
}

/** How a function works: its handler and the limits the factory applies. */
export interface FunctionOptions<
  A extends Access,
  I,
  O,
  G extends FunctionGroup = FunctionGroup,
  T extends boolean = false,
> {
  /** Body size limit in bytes (default 1 MiB). */
  bodyLimit?: number;
  /** At most `limit` calls per `windowSeconds` per caller (429 `rate_limited` beyond). */
  rateLimit?: RateLimit;
  /**
   * The body of a failure, for callers with a contract of their own
   * (Supabase Auth's hooks); default `{ error: { code, message, details } }`.
   */
  errorBody?(error: HttpError): unknown;
  /** The work: a JSON value answered with 200, or a `Response` of its own. */
  handle(args: HandlerArgs<A, I, G, T>): Promise<O | Response> | O | Response;
}

/**
 * A function's declaration: its catalog entry (name, who may call it, its
 * group, what it does, its request and answer schemas) and how it works.
 * `deno task catalog` reads every declaration into the catalog the frontend
 * imports (`shared/catalog.ts`) and into `config.toml`'s function blocks.
 */
export interface FunctionDeclaration<
  A extends Access,
  S extends z.ZodType | undefined,
  O extends SchemaName,
  G extends FunctionGroup,
  T extends boolean,
> extends
  FunctionOptions<
    A,
    S extends z.ZodType ? z.output<S> : undefined,
    z.input<(typeof Contract)[O]>,
    G,
    T
  > {
  /** Its name: the name of its folder under `supabase/functions/`. */
  name: string;
  /** Who may call it (`shared/access.ts`). */
  access: A;
  /**
   * An admin function the schedule starts as well: the scheduler's
   * credentials (the service-role key or `SCHEDULER_TOKEN`) are accepted
   * besides an admin's token; the anon key never is.
   */
  scheduler?: T;
  /** Its group (`shared/function_groups.ts`). */
  group: G;
  /** One line on what it does. */
  summary: string;
  /** Why the team added it, for a function beyond the interface's 46. */
  beyondInterface?: string;
  /**
   * Loads the request body's schema, a schema exported from `shared/` (a
   * dynamic `import()`); absent: the function takes no body. The factory
   * calls it on the first request that passes the access rule, so no
   * function loads zod at cold start and a refused call never does.
   */
  input?: () => Promise<Exclude<S, undefined>>;
  /**
   * Export name of the answer's schema in `shared/`: clients and tests check
   * answers against it, and the function itself never loads it.
   */
  output: O;
}

/** What a declared function exposes of its declaration (the catalog, tests and docs read it). */
export interface FunctionDefinition
  extends FunctionSpec<Access, z.ZodType | undefined, FunctionGroup, boolean> {
  /** The per-caller limit it declares (a deployment may override it: `RATE_LIMITS`). */
  rateLimit?: Readonly<RateLimit>;
}

/** A declared function: a fetch handler, plus a way to run it on another runtime. */
export interface EdgeFunction {
  /** Serves a request on the isolate's default runtime. */
  (request: Request): Promise<Response>;
  /** The facts it was declared with (frozen). */
  readonly definition: Readonly<FunctionDefinition>;
  /** A fetch handler bound to `runtime` (local server, tests). */
  with(runtime: Runtime): (request: Request) => Promise<Response>;
}

/**
 * Declares a function: its catalog entry and its handler, together in its
 * folder's `handler.ts`. Misdeclarations fail here, at cold start.
 */
export function defineFunction<
  const A extends Access,
  const O extends SchemaName,
  const G extends FunctionGroup,
  S extends z.ZodType | undefined = undefined,
  const T extends boolean = false,
>(declaration: FunctionDeclaration<A, S, O, G, T>): EdgeFunction {
  const { name, access, scheduler, group, summary, beyondInterface, input, output } = declaration;
  const { bodyLimit, rateLimit, errorBody, handle } = declaration;
  return createFunction<A, S, G, T>(
    {
      name,
      access,
      group,
      summary,
      output,
      ...(scheduler ? { scheduler } : {}),
      ...(input ? { input } : {}),
      ...(beyondInterface ? { beyondInterface } : {}),
    },
    { bodyLimit, rateLimit, errorBody, handle } as FunctionOptions<
      A,
      S extends z.ZodType ? z.output<S> : undefined,
      unknown,
      G,
      T
    >,
  );
}

/**
 * The factory under {@linkcode defineFunction}, for an explicit spec (tests
 * declare probe functions with it). Misdeclarations fail here, at cold start.
 */
export function createFunction<
  A extends Access,
  S extends z.ZodType | undefined = undefined,
  G extends FunctionGroup = FunctionGroup,
  T extends boolean = false,
>(
  spec: FunctionSpec<A, S, G, T>,
  options: FunctionOptions<A, S extends z.ZodType ? z.output<S> : undefined, unknown, G, T>,
): EdgeFunction {
  const { name, access } = spec;
  if (!ACCESS_RULES.includes(access)) {
    throw new Error(`Cannot define function "${name}": unknown access "${access}"`);
  }
  const dealRule = access === "deal-participant" || access === "deal-participant-or-admin";
  if (dealRule && !spec.input) {
    throw new Error(
      `Cannot define function "${name}": a ${access} function needs an input with dealId`,
    );
  }
  if (options.rateLimit && (access === "webhook" || options.rateLimit.limit < 1)) {
    throw new Error(`Cannot define function "${name}": a rate limit needs a caller and limit >= 1`);
  }
  const inputSchema = inputLoader(spec.input);
  const declaredLimit = options.rateLimit && Object.freeze({ ...options.rateLimit });
  const bodyLimit = options.bodyLimit ?? DEFAULT_BODY_LIMIT;
  const apps = new WeakMap<Runtime, (request: Request) => Promise<Response>>();

  const build = (runtime: Runtime) => {
    const rateLimit = effectiveRateLimit(name, declaredLimit, runtime.env.values.RATE_LIMITS);
    type Vars = { ctx: Context; caller: string; headers: Array<[string, string]>; code?: string };
    const app = new Hono<{ Variables: Vars }>();
    const preflight = Object.entries(runtime.cors.preflightHeaders());
    const json = (body: unknown, status: number, headers: Array<[string, string]>) =>
      new Response(JSON.stringify(body), {
        status,
        headers: [["content-type", "application/json"], ...headers],
      });

    app.use("*", async (c, next) => {
      const started = performance.now();
      const requestId = requestIdOf(c.req.raw);
      const log = runtime.log.with({ function: name, request_id: requestId });
      c.set("ctx", new Context(runtime, requestId, log));
      c.set("caller", "none");
      c.set("headers", runtime.responseHeaders(c.req.header("origin") ?? null, requestId));
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
        caller = await runtime.tokens.verify(
          c.req.header("authorization") ?? null,
          c.req.header("apikey") ?? null,
        );
        c.set("caller", caller.kind);
        await authorize(spec, caller, ctx);
        if (rateLimit) await enforceRateLimit(ctx, rateLimitKey(name, caller), rateLimit);
      }
      const rawBody = await readBodyText(c.req.raw, bodyLimit);
      let input: unknown = undefined;
      if (access !== "webhook") {
        const body = parseJsonObject(rawBody);
        if (inputSchema) {
          // What PostgreSQL cannot store (NUL, lone surrogates, deep nesting)
          // is refused here, once for every function, before zod: see
          // body.ts. A body a function ignores (no input schema) is not
          // looked into.
          refuseUnstorable(body);
          input = validate(await inputSchema(), body);
        }
      }
      if (dealRule && caller.kind === "user") {
        await authorizeDeal(caller, input, ctx, access === "deal-participant-or-admin");
      }
      let result: unknown;
      try {
        result = await options.handle({
          input: input as never,
          caller: caller as CallerFor<A, G, T>,
          ctx,
          request: c.req.raw,
          rawBody,
        });
      } finally {
        // E-mails the handler wrote in its transactions go out now, whether
        // it answered or failed after committing them.
        await ctx.settle();
      }
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
      return json(options.errorBody?.(httpError) ?? httpError.toBody(), httpError.status, [
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
  const definition: FunctionDefinition = { ...spec };
  if (declaredLimit) definition.rateLimit = declaredLimit;
  Object.defineProperty(edge, "definition", { value: Object.freeze(definition) });
  Object.defineProperty(edge, "with", { value: bound });
  return edge;
}

/**
 * The limit function `name` enforces on a runtime: `declared`, or the
 * runtime's `RATE_LIMITS` override of it. Throws (the function's cold start
 * on that runtime) when an override names a function that is not in the
 * catalog, or names this function while it declares no limit: its callers
 * would share one counter (webhooks, and public or scheduled callers, are
 * counted by kind, not by user).
 */
function effectiveRateLimit(
  name: string,
  declared: Readonly<RateLimit> | undefined,
  overrides: readonly RateLimitOverride[],
): Readonly<RateLimit> | undefined {
  const unknown = overrides.find((override) =>
    !(FUNCTION_NAMES as readonly string[]).includes(override.name)
  );
  if (unknown) {
    throw new Error(
      `Cannot define function "${name}": RATE_LIMITS names "${unknown.name}", which is not in the catalog`,
    );
  }
  const override = overrides.find((candidate) => candidate.name === name);
  if (!override) return declared;
  if (!declared) {
    throw new Error(
      `Cannot define function "${name}": RATE_LIMITS sets a limit for it, but it declares no rate limit to override`,
    );
  }
  return Object.freeze({ limit: override.limit, windowSeconds: override.windowSeconds });
}

/**
 * How a function gets its input schema: a probe's schema as it is, a
 * declared function's from its loader, called on first use and then kept.
 */
function inputLoader(
  input: z.ZodType | (() => Promise<z.ZodType>) | undefined,
): (() => Promise<z.ZodType>) | undefined {
  if (input === undefined) return undefined;
  if (typeof input !== "function") return () => Promise.resolve(input);
  let loading: Promise<z.ZodType> | undefined;
  // A load that failed is tried again by the next request, not remembered.
  return () =>
    loading ??= input().catch((error) => {
      loading = undefined;
      throw error;
    });
}

/** The body parsed by `schema`; 400 `invalid_input` listing zod's issues otherwise. */
function validate(schema: z.ZodType, body: unknown): unknown {
  const parsed = schema.safeParse(body);
  if (parsed.success) return parsed.data;
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
