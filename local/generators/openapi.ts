/**
 * `deno task openapi`: writes `docs/openapi.json`, an OpenAPI 3.1 document of
 * every function, from the catalog (`shared/functions.ts`): one
 * `POST /functions/v1/<name>` per function with its request and answer
 * schemas (zod's JSON Schema output), the error body, the credentials its
 * access rule admits and a request example (`openapi_examples.ts`). See
 * `docs/functions.md#openapi`.
 *
 * `deno task openapi --check [file]` (part of `deno task check`) writes nothing: it
 * fails, naming the fix, when the committed file differs from a fresh build,
 * and when an OpenAPI 3.1 validator (`@seriousme/openapi-schema-validator`)
 * refuses the document.
 *
 * What JSON Schema cannot say is handled on purpose, never dropped silently:
 * - a request field that zod normalises before it checks it (a transform
 *   piped into a schema, e.g. `deal-create-upload-url`'s `contentType`) is
 *   described by what it accepts (its input side), with the check that
 *   follows the normalisation in `x-normalized` and in its description;
 * - refinements (e.g. "exactly one of userId and email") are not in the
 *   schemas; the examples satisfy them and the server answers 400 otherwise;
 * - anything else without a JSON Schema form (a `z.date()`, a transform in
 *   an answer) stops the build with the schema's path: answers are JSON, so
 *   such a schema would be a bug in the contract.
 *
 * @module
 */
import { Validator } from "@seriousme/openapi-schema-validator";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import type { Access } from "../../shared/access.ts";
import {
  FUNCTION_GROUPS,
  FUNCTION_NAMES,
  type FunctionEntry,
  type FunctionGroup,
  type FunctionName,
  FUNCTIONS,
} from "../../shared/functions.ts";
import * as Contract from "../../shared/mod.ts";
import { AuthHookPayload } from "../../supabase/functions/_shared/email/auth_hook_payload.ts";
import type { RateLimit } from "../../supabase/functions/_shared/platform/rate_limit.ts";
import { denoFmt } from "./deno_fmt.ts";
import { loadFunctions } from "../functions.ts";
import { OPENAPI_EXAMPLES } from "./openapi_examples.ts";

const root = fileURLToPath(new URL("../../", import.meta.url));

/** Where the document is written, repo-relative. */
export const OPENAPI_PATH = "docs/openapi.json";

/** A JSON Schema (draft 2020-12, OpenAPI 3.1's dialect) or a `$ref` to one. */
export type JsonSchema = { [keyword: string]: unknown };

/** A `$ref` to another part of the document. */
export interface Ref {
  $ref: string;
}

/** How a credential is sent. */
export type SecurityScheme =
  | { type: "apiKey"; in: "header"; name: string; description: string }
  | { type: "http"; scheme: "bearer"; bearerFormat?: string; description: string };

/** A response header. */
export interface Header {
  description: string;
  schema: JsonSchema;
}

/** A JSON body with its schema and an example. */
export interface MediaType {
  schema: JsonSchema | Ref;
  example?: unknown;
}

/** A response. */
export interface Response {
  description: string;
  headers?: Record<string, Header | Ref>;
  content?: Record<string, MediaType>;
}

/** A function's operation. */
export interface Operation {
  operationId: FunctionName;
  summary: string;
  description: string;
  tags: [FunctionGroup];
  /** Alternatives: any one of them admits the call. */
  security: Array<Record<string, string[]>>;
  requestBody: { description: string; required: boolean; content: Record<string, MediaType> };
  responses: Record<string, Response | Ref>;
  /** The access rule as the catalog declares it (`shared/access.ts`). */
  "x-access": Access;
  /** An admin function the scheduler may also start. */
  "x-scheduler"?: true;
  /** The per-caller limit it declares (a deployment may override it: `RATE_LIMITS`). */
  "x-rate-limit"?: { limit: number; windowSeconds: number };
  /** Why the team added it, for a function beyond the interface's 46. */
  "x-beyond-interface"?: string;
}

/** The parts of an OpenAPI 3.1 document this module emits. */
export interface OpenApiDocument {
  openapi: "3.1.0";
  info: { title: string; version: string; description: string };
  jsonSchemaDialect: string;
  servers: Array<{
    url: string;
    description: string;
    variables?: Record<string, { default: string; description: string }>;
  }>;
  tags: Array<{ name: FunctionGroup; description: string }>;
  paths: Record<string, { post: Operation }>;
  components: {
    schemas: Record<string, JsonSchema>;
    responses: Record<string, Response>;
    headers: Record<string, Header>;
    securitySchemes: Record<string, SecurityScheme>;
  };
}

const DIALECT = "https://json-schema.org/draft/2020-12/schema";
const schemaRef = (name: string): Ref => ({ $ref: `#/components/schemas/${name}` });
const responseRef = (name: string): Ref => ({ $ref: `#/components/responses/${name}` });

/** What each group holds (the tags' descriptions). */
const GROUP_DESCRIPTIONS: Record<FunctionGroup, string> = {
  billing: "Subscriptions, the processor's webhook and the admin repairs (docs/billing.md)",
  checkout: "Subscription checkout and the billing portal (docs/billing.md)",
  deals: "Escrowed deals: payment, payout, refund, cancel (docs/deals.md)",
  notifications: "E-mails and in-app notices (docs/email-and-notifications.md)",
  schedulers: "Jobs the schedule starts (docs/schedulers.md)",
  connect: "Sellers' payout accounts (docs/billing.md)",
  documents: "Deal documents and the purchase agreement (docs/documents.md)",
  analysis: "AI analysis of a project (docs/analysis.md)",
  utilities: "Diagnostics (docs/functions.md)",
};

/** How each credential is sent (`docs/functions.md#credentials`). */
const SECURITY_SCHEMES: Record<string, SecurityScheme> = {
  publishableKey: {
    type: "apiKey",
    in: "header",
    name: "apikey",
    description:
      "The project's publishable key (`sb_publishable_…`) or legacy anon key, in `apikey` with no `Authorization` header: how supabase-js calls a function when no user is signed in.",
  },
  publishableKeyBearer: {
    type: "http",
    scheme: "bearer",
    description: "The project's publishable key or legacy anon JWT key as the bearer token.",
  },
  userJwt: {
    type: "http",
    scheme: "bearer",
    bearerFormat: "JWT",
    description:
      "A signed-in user's access token from Supabase Auth (ES256/RS256 against the project's JWKS, or HS256 with the legacy JWT secret). An anonymous sign-in (`is_anonymous`) is refused with 403.",
  },
  adminJwt: {
    type: "http",
    scheme: "bearer",
    bearerFormat: "JWT",
    description:
      "A signed-in user's access token, for an account holding the admin role (`public.has_role(uid, 'admin')`); any other user gets 403.",
  },
  secretKey: {
    type: "apiKey",
    in: "header",
    name: "apikey",
    description:
      "The project's secret key (`sb_secret_…`) or legacy service-role key, in `apikey` with no `Authorization` header: the service role. Server side only.",
  },
  secretKeyBearer: {
    type: "http",
    scheme: "bearer",
    description:
      "The project's secret key or legacy service-role JWT key as the bearer token: the service role. Server side only.",
  },
  schedulerToken: {
    type: "http",
    scheme: "bearer",
    description:
      "`SCHEDULER_TOKEN`, the opaque token the job schedule sends (docs/schedulers.md). It starts scheduled functions and admin functions marked `x-scheduler`, nothing else.",
  },
  payprocSignature: {
    type: "apiKey",
    in: "header",
    name: "Stripe-Signature",
    description:
      "The payment processor's signature of the raw body with `PAYPROC_WEBHOOK_SECRET` (platform endpoint) or `PAYPROC_CONNECT_WEBHOOK_SECRET` (Connect endpoint). No token.",
  },
  authHookSignature: {
    type: "apiKey",
    in: "header",
    name: "webhook-signature",
    description:
      "Supabase Auth's Standard Webhooks signature of the raw body with `SEND_EMAIL_HOOK_SECRET`, together with the `webhook-id` and `webhook-timestamp` headers (5 minutes' tolerance). No token.",
  },
};

/** The credentials each access rule admits, as alternatives (`shared/access.ts`). */
const SECURITY_BY_ACCESS: Record<Exclude<Access, "webhook">, string[]> = {
  public: ["publishableKey", "publishableKeyBearer", "userJwt", "secretKey", "secretKeyBearer"],
  user: ["userJwt"],
  seller: ["userJwt"],
  "deal-participant": ["userJwt"],
  "deal-participant-or-admin": ["userJwt", "adminJwt"],
  admin: ["adminJwt"],
  scheduled: ["secretKeyBearer", "secretKey", "schedulerToken", "adminJwt"],
  system: ["secretKeyBearer", "secretKey", "adminJwt"],
};

/** Who may call, in a sentence per access rule (`shared/access.ts`). */
const ACCESS_DESCRIPTIONS: Record<Access, string> = {
  public: "Any valid project key: the publishable key, a user's token or the service role.",
  user: "A signed-in user (not an anonymous sign-in).",
  seller:
    'A signed-in seller: a user with a listing or a payout account (`public.is_seller`). Anyone else gets 403 `forbidden` with `details.next = "connect-onboarding-link"`.',
  "deal-participant":
    "The buyer or seller of the deal named by `dealId` in the body (404 `not_found` for an unknown deal).",
  "deal-participant-or-admin":
    "The buyer or seller of the deal named by `dealId` in the body, or an admin (404 `not_found` for an unknown deal).",
  admin: "A signed-in user holding the admin role.",
  scheduled:
    "The service role, the scheduler token or an admin; locally also the publishable key when the server runs with `LOCAL_DEV=true`.",
  system: "The service role or an admin.",
  webhook: "No token: the body's signature is the authentication.",
};

/** What a webhook receives and how it answers failures. */
interface WebhookSpec {
  scheme: keyof typeof SECURITY_SCHEMES;
  /** The component describing its body. */
  body: string;
  bodyDescription: string;
  /** The status of a missing, forged or stale signature. */
  signatureStatus: 400 | 401;
  /** The component of its failures' body. */
  errorBody: string;
}

/** The webhooks: a function with access `webhook` must be described here. */
const WEBHOOKS: Record<string, WebhookSpec> = {
  "payproc-webhook": {
    scheme: "payprocSignature",
    body: "PayprocEvent",
    bodyDescription:
      "A payment processor event, exactly as the processor signed it (the signature covers the raw bytes).",
    signatureStatus: 400,
    errorBody: "ErrorBody",
  },
  "auth-email-webhook": {
    scheme: "authHookSignature",
    body: "AuthHookPayload",
    bodyDescription:
      "Supabase Auth's Send Email Hook delivery `{ user, email_data }`, exactly as Auth signed it (unknown fields are kept).",
    signatureStatus: 401,
    errorBody: "AuthHookErrorBody",
  },
};

/** Schemas the contract does not export: what the webhooks exchange. */
const EXTRA_SCHEMAS: Record<string, JsonSchema> = {
  PayprocEvent: {
    type: "object",
    description:
      "A payment processor event (the parts the webhook reads; the processor documents the rest).",
    properties: {
      id: { type: "string" },
      object: { const: "event" },
      type: { type: "string", description: "e.g. `checkout.session.completed`" },
      api_version: { type: "string" },
      created: { type: "integer" },
      livemode: { type: "boolean" },
      account: { type: "string", description: "The connected account (Connect events)" },
      data: {
        type: "object",
        properties: { object: { type: "object" } },
        required: ["object"],
      },
    },
    required: ["id", "type", "data"],
  },
  AuthHookErrorBody: {
    type: "object",
    description:
      "A Send Email Hook failure as Supabase Auth reads it (`http_code`, `message`), with our own `code`.",
    properties: {
      error: {
        type: "object",
        properties: {
          http_code: { type: "integer" },
          code: { type: "string" },
          message: { type: "string" },
          details: {},
        },
        required: ["http_code", "code", "message"],
      },
    },
    required: ["error"],
  },
};

/** The error responses every function may give, by component name. */
function errorResponses(): Record<string, Response> {
  const failure = (description: string, code: string, message: string, retry = false) => ({
    description,
    headers: {
      "X-Request-Id": { $ref: "#/components/headers/XRequestId" },
      ...(retry ? { "Retry-After": { $ref: "#/components/headers/RetryAfter" } } : {}),
    },
    content: {
      "application/json": {
        schema: schemaRef("ErrorBody"),
        example: { error: { code, message } },
      },
    },
  });
  return {
    BadRequest: failure(
      "`invalid_json` (not a JSON object) or `invalid_input` (the zod issues in `details`, also for text PostgreSQL cannot store)",
      "invalid_input",
      "Cannot accept the request: dealId: Invalid UUID",
    ),
    Unauthorized: failure(
      "`unauthorized`: the credential is missing, malformed, expired or badly signed",
      "unauthorized",
      "Cannot authenticate the request: the token has expired",
    ),
    Forbidden: failure(
      "`forbidden`: a valid credential without the right (see the access rule)",
      "forbidden",
      "This function is for admins",
    ),
    NotFound: failure(
      "`not_found`: the deal named by `dealId` does not exist",
      "not_found",
      'Deal "7c9e6679-7425-40de-944b-e07fc1f90ae7" does not exist',
    ),
    PayloadTooLarge: failure(
      "`payload_too_large`: the body is over the function's limit (1 MiB unless it declares another)",
      "payload_too_large",
      "Cannot read the request body: it is larger than 1048576 bytes",
    ),
    RateLimited: failure(
      "`rate_limited`: over the function's per-caller limit (`x-rate-limit`); retry after `Retry-After` seconds (also in `details.retryAfter`)",
      "rate_limited",
      "Cannot serve this request: at most 10 calls per 60 s; retry in 42 s",
      true,
    ),
    Internal: failure(
      "`internal`: a bug; the details are only in the log, under the answer's `X-Request-Id`",
      "internal",
      "Something went wrong on our side; it has been logged",
    ),
    Unavailable: failure(
      "`not_configured` (names the missing variable) or `upstream_unavailable` (a service we depend on failed or timed out)",
      "not_configured",
      "Cannot serve this request: PAYPROC_SECRET_KEY is not configured",
    ),
    OtherFailure: failure(
      "Another failure of this function, in the same body: e.g. 404 `not_found`, 409 `conflict`, 502 from a provider (see the function's page in docs/)",
      "conflict",
      "Cannot do this: the deal is already paid",
    ),
  };
}

/** The export name of every zod schema of the contract (an alias keeps the first name). */
function contractSchemas(): Map<z.ZodType, string> {
  const names = new Map<z.ZodType, string>();
  const all: Record<string, unknown> = { ...Contract, AuthHookPayload };
  for (const [name, value] of Object.entries(all)) {
    if (value instanceof z.ZodType && !names.has(value)) names.set(value, name);
  }
  return names;
}

/** Walks `value`, calling `visit` on every object. */
function eachObject(value: unknown, visit: (object: Record<string, unknown>) => void): void {
  if (Array.isArray(value)) {
    for (const item of value) eachObject(item, visit);
  } else if (value !== null && typeof value === "object") {
    visit(value as Record<string, unknown>);
    for (const item of Object.values(value)) eachObject(item, visit);
  }
}

/** Names of the components `schema` refers to. */
function refsOf(schema: unknown): string[] {
  const found: string[] = [];
  eachObject(schema, (object) => {
    const ref = object.$ref;
    if (typeof ref === "string" && ref.startsWith("#/components/schemas/")) {
      found.push(ref.slice("#/components/schemas/".length));
    }
  });
  return found;
}

/**
 * Every contract schema in JSON Schema, as a request (`io: "input"`: before
 * defaults and transforms) or as an answer (`io: "output"`), each named
 * schema a component the others refer to.
 */
function convert(registry: z.core.$ZodRegistry<{ id: string }>, io: "input" | "output") {
  const { schemas } = z.toJSONSchema(registry, {
    target: "draft-2020-12",
    io,
    uri: (id) => `#/components/schemas/${id}`,
    // Marked, not thrown: only the schemas a request or an answer reaches
    // must be representable (see `unrepresentableIn`).
    unrepresentable: ({ path, message }) => ({
      [UNREPRESENTABLE]: `${message} (as ${io === "input" ? "a request" : "an answer"}, at ${
        path.join(".") || "its root"
      })`,
    }),
    override: io === "input" ? describeNormalization : undefined,
  });
  const out: Record<string, JsonSchema> = {};
  for (const [name, schema] of Object.entries(schemas)) {
    // Each would otherwise be a standalone document; within the components
    // it takes the document's dialect and no identifier of its own.
    const { $schema: _dialect, $id: _id, ...rest } = schema as JsonSchema;
    out[name] = rest;
  }
  return out;
}

/**
 * A request field zod normalises before checking it (a transform piped into
 * a schema): its JSON Schema is what it accepts, and the check after the
 * normalisation goes in `x-normalized`, since JSON Schema cannot run the
 * transform.
 */
function describeNormalization(
  ctx: { zodSchema: z.core.$ZodTypes; jsonSchema: z.core.JSONSchema.BaseSchema },
): void {
  const def = ctx.zodSchema._zod.def;
  if (def.type !== "pipe" || def.out._zod.def.type === "transform") return;
  const normalized = z.toJSONSchema(def.out, { target: "draft-2020-12", io: "output" });
  const { $schema: _dialect, ...after } = normalized;
  ctx.jsonSchema["x-normalized"] = after;
  ctx.jsonSchema.description = [
    ctx.jsonSchema.description,
    "The server normalises the value first, then checks it against `x-normalized`.",
  ].filter(Boolean).join(" ");
}

/** Marks what JSON Schema cannot express while converting. */
const UNREPRESENTABLE = "x-unrepresentable";

/** Why `schema` cannot be described, when a part of it has no JSON Schema form. */
function unrepresentableIn(schema: JsonSchema): string | undefined {
  let why: string | undefined;
  eachObject(schema, (object) => {
    const found = object[UNREPRESENTABLE];
    if (why === undefined && typeof found === "string") why = found;
  });
  return why;
}

/** The components a request (`input`) or an answer (`output`) reaches, from `roots`. */
function reachable(roots: Iterable<string>, schemas: Record<string, JsonSchema>): Set<string> {
  const seen = new Set<string>();
  const pending = [...roots];
  while (pending.length > 0) {
    const name = pending.pop()!;
    if (seen.has(name)) continue;
    seen.add(name);
    const schema = schemas[name];
    if (!schema) throw new Error(`Cannot build the OpenAPI document: no schema "${name}"`);
    pending.push(...refsOf(schema));
  }
  return seen;
}

/** `schema` with every `$ref` to a renamed component pointing at its new name. */
function renamed(schema: JsonSchema, names: Map<string, string>): JsonSchema {
  const copy = structuredClone(schema);
  eachObject(copy, (object) => {
    const ref = object.$ref;
    if (typeof ref !== "string" || !ref.startsWith("#/components/schemas/")) return;
    const to = names.get(ref.slice("#/components/schemas/".length));
    if (to) object.$ref = `#/components/schemas/${to}`;
  });
  return copy;
}

/** The body a function without an input accepts: nothing, or any JSON object (ignored). */
const IGNORED_BODY: JsonSchema = {
  type: "object",
  description: "Ignored: send no body or any JSON object.",
};

/** A function's facts, as the document needs them. */
interface FunctionFacts {
  name: FunctionName;
  entry: FunctionEntry;
  webhook: WebhookSpec | undefined;
  /** The component of its request (after renaming, see `buildOpenApi`). */
  input: string | undefined;
  /** The component of its answer. */
  output: string;
  rateLimit: Readonly<RateLimit> | undefined;
}

/** The operation of one function. */
function operationOf(
  { name, entry, webhook, input, output, rateLimit }: FunctionFacts,
): Operation {
  const example = OPENAPI_EXAMPLES[name];
  let requestBody: Operation["requestBody"];
  if (webhook) {
    requestBody = {
      description: webhook.bodyDescription,
      required: true,
      content: { "application/json": { schema: schemaRef(webhook.body), example } },
    };
  } else if (input && entry.input) {
    const optional = entry.input.safeParse({}).success;
    requestBody = {
      description: optional
        ? "A JSON object; every field is optional, and no body reads as `{}`."
        : "A JSON object.",
      required: !optional,
      content: {
        "application/json": { schema: schemaRef(input), example },
      },
    };
  } else {
    requestBody = {
      description: "None: the function takes no input (no body, or any JSON object, ignored).",
      required: false,
      content: { "application/json": { schema: IGNORED_BODY, example } },
    };
  }

  const errorBody = webhook?.errorBody ?? "ErrorBody";
  const responses: Record<string, Response | Ref> = {
    "200": {
      description: "The answer",
      headers: { "X-Request-Id": { $ref: "#/components/headers/XRequestId" } },
      content: { "application/json": { schema: schemaRef(output) } },
    },
  };
  if (webhook) {
    const own = (description: string): Response => ({
      description,
      headers: { "X-Request-Id": { $ref: "#/components/headers/XRequestId" } },
      content: { "application/json": { schema: schemaRef(errorBody) } },
    });
    const signature = "a missing, forged or stale signature";
    responses["400"] = own(
      webhook.signatureStatus === 400
        ? `\`invalid_signature\` (${signature}), an event for another endpoint or mode, or a malformed body; nothing is written`
        : "`invalid_json` or `invalid_input`: the body is not the payload described",
    );
    if (webhook.signatureStatus === 401) {
      responses["401"] = own(`\`invalid_signature\`: ${signature}; nothing is written`);
    }
    responses["413"] = own("`payload_too_large`: the body is over 1 MiB");
    responses["500"] = own(
      "`internal`: processing failed and was rolled back; the sender retries",
    );
    responses["503"] = own(
      "`not_configured` (the signing secret is not set) or `upstream_unavailable`; the sender retries",
    );
    responses.default = own(
      "Another failure, in the same body (e.g. 502 from the e-mail provider)",
    );
  } else {
    responses["400"] = responseRef("BadRequest");
    responses["401"] = responseRef("Unauthorized");
    responses["403"] = responseRef("Forbidden");
    if (entry.access === "deal-participant" || entry.access === "deal-participant-or-admin") {
      responses["404"] = responseRef("NotFound");
    }
    responses["413"] = responseRef("PayloadTooLarge");
    if (rateLimit) responses["429"] = responseRef("RateLimited");
    responses["500"] = responseRef("Internal");
    responses["503"] = responseRef("Unavailable");
    responses.default = responseRef("OtherFailure");
  }

  const schemes = webhook ? [webhook.scheme] : [
    ...SECURITY_BY_ACCESS[entry.access as Exclude<Access, "webhook">],
    ...(entry.scheduler ? ["secretKeyBearer", "secretKey", "schedulerToken"] : []),
  ];
  const localDev = entry.group === "utilities" && entry.access !== "public"
    ? " Locally, with `LOCAL_DEV=true`, the publishable key may call it too."
    : "";
  const scheduler = entry.scheduler
    ? " The schedule starts it too, with the service role or the scheduler token (never the publishable key)."
    : "";
  const operation: Operation = {
    operationId: name,
    summary: entry.summary,
    description: `Who may call: ${ACCESS_DESCRIPTIONS[entry.access]}${scheduler}${localDev}`,
    tags: [entry.group],
    security: [...new Set(schemes)].map((scheme) => ({ [scheme]: [] })),
    requestBody,
    responses,
    "x-access": entry.access,
  };
  if (entry.scheduler) operation["x-scheduler"] = true;
  if (rateLimit) {
    operation["x-rate-limit"] = {
      limit: rateLimit.limit,
      windowSeconds: rateLimit.windowSeconds,
    };
  }
  if (entry.beyondInterface) operation["x-beyond-interface"] = entry.beyondInterface;
  return operation;
}

/** Builds the document from the catalog and the functions' declarations. */
export async function buildOpenApi(): Promise<OpenApiDocument> {
  const names = contractSchemas();
  const registry = z.registry<{ id: string }>();
  for (const [schema, name] of names) registry.add(schema, { id: name });
  const inputs = convert(registry, "input");
  const outputs = convert(registry, "output");

  // The rate limits are declared with the handlers, not in the catalog.
  const definitions = await loadFunctions();
  const entries = FUNCTION_NAMES.map((name) => {
    const entry: FunctionEntry = FUNCTIONS[name];
    const nameOf = (schema: z.ZodType) => {
      const found = names.get(schema);
      if (!found) {
        throw new Error(`Cannot build the OpenAPI document: ${name}'s schema has no name`);
      }
      return found;
    };
    const webhook = entry.access === "webhook" ? WEBHOOKS[name] : undefined;
    if (entry.access === "webhook" && !webhook) {
      throw new Error(
        `Cannot build the OpenAPI document: describe webhook "${name}" in WEBHOOKS of local/generators/openapi.ts`,
      );
    }
    return {
      name,
      entry,
      webhook,
      input: entry.input ? nameOf(entry.input) : undefined,
      output: nameOf(entry.output),
      rateLimit: definitions.get(name)?.definition.rateLimit,
    };
  });

  // Requests are described as zod reads them, answers as it writes them;
  // a schema both reach is one component when both read alike, and else a
  // request's is `<Name>Request`.
  const requestRoots = entries.flatMap((e) => {
    const body = e.input ?? e.webhook?.body;
    return body && !(body in EXTRA_SCHEMAS) ? [body] : [];
  });
  const answerRoots = ["ErrorBody", ...entries.map((e) => e.output)];
  const asRequest = reachable(requestRoots, inputs);
  const asAnswer = reachable(answerRoots, outputs);
  const requestNames = new Map<string, string>();
  for (const name of asRequest) {
    const differs = asAnswer.has(name) &&
      JSON.stringify(inputs[name]) !== JSON.stringify(outputs[name]);
    if (differs) requestNames.set(name, `${name}Request`);
  }
  const schemas: Record<string, JsonSchema> = { ...EXTRA_SCHEMAS };
  for (const name of asAnswer) schemas[name] = outputs[name]!;
  for (const name of asRequest) {
    schemas[requestNames.get(name) ?? name] = renamed(inputs[name]!, requestNames);
  }
  const requestSchemaName = (name: string) => requestNames.get(name) ?? name;
  const problems = Object.entries(schemas).flatMap(([name, schema]) => {
    const why = unrepresentableIn(schema);
    return why ? [`${name}: ${why}`] : [];
  });
  if (problems.length > 0) {
    throw new Error(
      `Cannot describe these schemas of shared/ in JSON Schema:\n  ${
        problems.join("\n  ")
      }\nRequests and answers are JSON: use a representable schema (e.g. z.iso.datetime() for a date; a transform only in a request, piped into the check).`,
    );
  }

  const paths: Record<string, { post: Operation }> = {};
  for (const facts of entries) {
    const input = facts.input && requestSchemaName(facts.input);
    paths[`/functions/v1/${facts.name}`] = { post: operationOf({ ...facts, input }) };
  }

  return {
    openapi: "3.1.0",
    info: {
      title: "Marketplace backend functions",
      version: "1.0.0",
      description:
        "Every edge function of the marketplace backend: `POST /functions/v1/<name>` with a JSON object body. Failures are `{ error: { code, message, details? } }` (docs/functions.md#errors); every answer carries `X-Request-Id`. Generated by `deno task openapi` from the catalog (`shared/functions.ts`); do not edit.",
    },
    jsonSchemaDialect: DIALECT,
    servers: [
      { url: "http://127.0.0.1:54321", description: "The local stack (`deno task start`)" },
      {
        url: "https://{project_ref}.supabase.co",
        description: "A hosted Supabase project",
        variables: {
          project_ref: { default: "your-project-ref", description: "The project's reference id" },
        },
      },
    ],
    tags: FUNCTION_GROUPS.map((name) => ({ name, description: GROUP_DESCRIPTIONS[name] })),
    paths,
    components: {
      schemas: Object.fromEntries(
        Object.entries(schemas).sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0),
      ),
      responses: errorResponses(),
      headers: {
        XRequestId: {
          description: "The request's id: the log line of the request carries it",
          schema: { type: "string" },
        },
        RetryAfter: {
          description: "Seconds to wait before retrying",
          schema: { type: "integer", minimum: 1 },
        },
      },
      securitySchemes: SECURITY_SCHEMES,
    },
  };
}

/** `document` as the committed file reads: `deno fmt`'s JSON, with a trailing newline. */
export function renderOpenApi(document: OpenApiDocument): Promise<string> {
  return denoFmt(`${JSON.stringify(document, null, 2)}\n`, "json", root);
}

/**
 * What an OpenAPI 3.1 validator finds wrong with `document`: the schema
 * validation's errors, then any `$ref` that does not resolve. Empty: valid.
 */
export async function validateOpenApi(document: unknown): Promise<string[]> {
  const validator = new Validator();
  const result = await validator.validate(structuredClone(document) as Record<string, unknown>);
  if (!result.valid) {
    const errors = result.errors ?? "invalid";
    return typeof errors === "string"
      ? [errors]
      : errors.map((error) =>
        `${error.instancePath || "/"}: ${error.message ?? error.keyword} ${
          JSON.stringify(error.params)
        }`
      );
  }
  if (validator.version !== "3.1") return [`expected OpenAPI 3.1, found ${validator.version}`];
  try {
    validator.resolveRefs();
  } catch (error) {
    return [error instanceof Error ? error.message : String(error)];
  }
  return [];
}

/**
 * The problems of the committed document (`file`, by default this
 * repository's): stale (it differs from a fresh build) and whatever the
 * validator refuses in it.
 */
export async function checkOpenApi(file = `${root}${OPENAPI_PATH}`): Promise<string[]> {
  const fresh = await renderOpenApi(await buildOpenApi());
  let committed: string | null = null;
  try {
    committed = await Deno.readTextFile(file);
  } catch {
    committed = null;
  }
  const problems: string[] = [];
  if (committed !== fresh) {
    problems.push(
      `Stale: ${OPENAPI_PATH} differs from the catalog (a function, a schema or an example changed). Run \`deno task openapi\`.`,
    );
  }
  let parsed: unknown = null;
  try {
    parsed = JSON.parse(committed ?? fresh);
  } catch (error) {
    problems.push(`${OPENAPI_PATH} is not JSON: ${error instanceof Error ? error.message : error}`);
    return problems;
  }
  const invalid = await validateOpenApi(parsed);
  if (invalid.length > 0) {
    problems.push(
      `The OpenAPI 3.1 validator refuses ${OPENAPI_PATH}:\n  ${invalid.join("\n  ")}`,
    );
  }
  return problems;
}

if (import.meta.main) {
  if (Deno.args.includes("--check")) {
    // `--check [file]`: another copy of the document may be checked (tests).
    const file = Deno.args.find((arg) => !arg.startsWith("--"));
    const problems = await checkOpenApi(file);
    if (problems.length > 0) {
      console.error(problems.join("\n"));
      Deno.exit(1);
    }
    console.log(`OpenAPI: ${OPENAPI_PATH} matches the catalog and is valid OpenAPI 3.1.`);
  } else {
    const document = await buildOpenApi();
    const invalid = await validateOpenApi(document);
    if (invalid.length > 0) {
      console.error(`The OpenAPI 3.1 validator refuses the document:\n  ${invalid.join("\n  ")}`);
      Deno.exit(1);
    }
    await Deno.writeTextFile(`${root}${OPENAPI_PATH}`, await renderOpenApi(document));
    console.log(`Wrote ${OPENAPI_PATH} (${Object.keys(document.paths).length} functions).`);
  }
}
