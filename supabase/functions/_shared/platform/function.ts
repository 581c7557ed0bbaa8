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
import type { z } from "zod";
import type { Access } from "../../../../shared/access.ts";
import { FUNCTION_NAMES } from "../../../../shared/function_names.ts";
import type { FunctionGroup } from "../../../../shared/function_groups.ts";
import type * as Contract from "../../../../shared/mod.ts";
import { ACCESS_RULES, authorize, authorizeDeal, type CallerFor } from "./access.ts";
import { DEFAULT_BODY_LIMIT, parseJsonObject, readBodyText, refuseUnstorable } from "./body.ts";
import type { Caller } from "./caller.ts";
import { Context } from "./context.ts";
import { ConfigurationError, type RateLimitOverride } from "./env.ts";
import { HttpError } from "./errors.ts";
import { loadOnce } from "../lib/load_once.ts";
import { type HeaderPairs, requestIdOf } from "./headers.ts";
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
    const preflight = Object.entries(runtime.cors.preflightHeaders());
    /** Whether the `request` line is written at all (the level is the runtime's, fixed). */
    const logsRequests = runtime.log.enabled("info");
    const log = runtime.log.with({ function: name });

    /** The work of a POST: credential, access, body, handler; the answer. */
    const post = async (request: Request, ctx: Context, outcome: Outcome): Promise<Response> => {
      let caller: Caller | { kind: "none" } = { kind: "none" };
      if (access !== "webhook") {
        // The `apikey` header counts only without `Authorization` (tokens.ts).
        const authorization = request.headers.get("authorization");
        caller = await runtime.tokens.verify(
          authorization,
          authorization === null ? request.headers.get("apikey") : null,
        );
        outcome.caller = caller.kind;
        await authorize(spec, caller, ctx);
        if (rateLimit) await enforceRateLimit(ctx, rateLimitKey(name, caller), rateLimit);
      }
      const rawBody = await readBodyText(request, bodyLimit);
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
          request,
          rawBody,
        });
      } finally {
        // E-mails the handler wrote in its transactions go out now, whether
        // it answered or failed after committing them.
        await ctx.settle();
      }
      if (result instanceof Response) {
        for (const [key, value] of outcome.headers()) result.headers.set(key, value);
        return result;
      }
      return runtime.jsonResponse(JSON.stringify(result ?? {}), 200, outcome.origin, ctx.requestId);
    };

    /** The answer to a failure: the error model, logged when it is a 5xx. */
    const failure = (error: Error, ctx: Context, outcome: Outcome): Response => {
      const httpError = toHttpError(error);
      if (httpError.status >= 500) {
        // An HttpError is a known outcome (its message says it all); anything
        // else is a bug, logged with its stack.
        ctx.log.error("request failed", {
          code: httpError.code,
          ...(error instanceof HttpError ? { error_message: error.message } : describeError(error)),
        });
      }
      outcome.code = httpError.code;
      return runtime.jsonResponse(
        JSON.stringify(options.errorBody?.(httpError) ?? httpError.toBody()),
        httpError.status,
        outcome.origin,
        ctx.requestId,
        httpError.headers,
      );
    };

    return async (request: Request): Promise<Response> => {
      const started = logsRequests ? performance.now() : 0;
      const requestId = requestIdOf(request);
      const ctx = new Context(runtime, requestId, log.with({ request_id: requestId }));
      const outcome = new Outcome(runtime, request.headers.get("origin"), requestId);
      const method = request.method;
      let response: Response;
      try {
        if (method === "POST") response = await post(request, ctx, outcome);
        else if (method === "OPTIONS") {
          response = new Response(null, {
            status: 204,
            headers: [...outcome.headers(), ...preflight],
          });
        } else {
          throw new HttpError(
            405,
            "method_not_allowed",
            `Cannot ${method} this function: use POST`,
            undefined,
            { Allow: "POST, OPTIONS" },
          );
        }
      } catch (error) {
        // Only an Error is answered; anything else thrown fails the request
        // (as a server answers a handler that throws it).
        if (!(error instanceof Error)) throw error;
        response = failure(error, ctx, outcome);
      }
      if (logsRequests) {
        ctx.log.info("request", {
          method,
          status: response.status,
          duration_ms: Math.round((performance.now() - started) * 10) / 10,
          caller: outcome.caller,
          code: outcome.code,
        });
      }
      // A HEAD is answered as a GET would be, without the body.
      return method === "HEAD" ? new Response(null, response) : response;
    };
  };

  const bound = (runtime: Runtime) => {
    let fetch = apps.get(runtime);
    if (!fetch) {
      fetch = build(runtime);
      apps.set(runtime, fetch);
    }
    return fetch;
  };

  const edge = ((request: Request) => {
    let runtime: Runtime;
    try {
      runtime = defaultRuntime();
    } catch (error) {
      if (error instanceof ConfigurationError) return Promise.resolve(misconfigured(error));
      throw error;
    }
    return bound(runtime)(request);
  }) as EdgeFunction;
  const definition: FunctionDefinition = { ...spec };
  if (declaredLimit) definition.rateLimit = declaredLimit;
  Object.defineProperty(edge, "definition", { value: Object.freeze(definition) });
  Object.defineProperty(edge, "with", { value: bound });
  return edge;
}

/**
 * The answer of every request while the configuration cannot be served:
 * 500 `misconfigured`, naming the variables (never their values).
 */
function misconfigured(error: ConfigurationError): Response {
  const body = new HttpError(500, "misconfigured", error.message, { variables: error.variables });
  return new Response(JSON.stringify(body.toBody()), {
    status: 500,
    headers: { "content-type": "application/json" },
  });
}

/** What one request's answer carries and its log line reports, filled in as it is served. */
class Outcome {
  /** The caller's kind once its credential is verified. */
  caller = "none";
  /** The error code of a failure. */
  code: string | undefined = undefined;
  #headers?: HeaderPairs;

  constructor(
    private readonly runtime: Runtime,
    /** The request's `Origin` (CORS). */
    readonly origin: string | null,
    private readonly requestId: string,
  ) {}

  /** The headers of every answer (security, CORS, request id), made when first needed. */
  headers(): HeaderPairs {
    return this.#headers ??= this.runtime.responseHeaders(this.origin, this.requestId);
  }
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
  // A load that failed is tried again by the next request, not remembered.
  return loadOnce(input);
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
