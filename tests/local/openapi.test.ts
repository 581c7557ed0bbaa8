/**
 * `docs/openapi.json` (`deno task openapi`, docs/functions.md#openapi): the
 * committed file is the fresh build, a real OpenAPI 3.1 validator accepts
 * it and refuses broken copies, and it describes every function of the
 * catalog as the factory serves it: one POST path, the credentials of its
 * access rule, its request and answer schemas, the error body and an example
 * its own zod schema accepts.
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import type { Access } from "../../shared/access.ts";
import { FUNCTION_NAMES, FUNCTIONS } from "../../shared/functions.ts";
import { AuthHookPayload } from "../../supabase/functions/_shared/email/auth_hook_payload.ts";
import { loadFunctions } from "../../local/functions.ts";
import {
  buildOpenApi,
  checkOpenApi,
  type OpenApiDocument,
  type Operation,
  renderOpenApi,
  type Response,
  validateOpenApi,
} from "../../local/generators/openapi.ts";
import { OPENAPI_EXAMPLES } from "../../local/generators/openapi_examples.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const committedText = await Deno.readTextFile(`${ROOT}docs/openapi.json`);
const committed = JSON.parse(committedText) as OpenApiDocument;
const built = await buildOpenApi();
const definitions = await loadFunctions();

/** The object a local `$ref` points at, or undefined when it points nowhere. */
function resolve(document: unknown, ref: string): unknown {
  assert.ok(ref.startsWith("#/"), `a local reference: ${ref}`);
  let at: unknown = document;
  for (const part of ref.slice(2).split("/")) {
    if (at === null || typeof at !== "object") return undefined;
    at = (at as Record<string, unknown>)[part.replaceAll("~1", "/").replaceAll("~0", "~")];
  }
  return at;
}

/** `value` itself, or what it refers to when it is a `$ref`. */
function deref<T>(document: unknown, value: T | { $ref: string }): T {
  if (value && typeof value === "object" && "$ref" in value) {
    const target = resolve(document, value.$ref);
    assert.ok(target, `${value.$ref} resolves`);
    return target as T;
  }
  return value as T;
}

const operation = (name: string): Operation => {
  const path = committed.paths[`/functions/v1/${name}`];
  assert.ok(path, `a path for ${name}`);
  return path.post;
};

Deno.test("docs/openapi.json is the fresh build of the catalog (deno task openapi)", async () => {
  assert.equal(committedText, await renderOpenApi(built));
  assert.ok(committedText.endsWith("}\n"), "a trailing newline");
});

Deno.test("--check names a stale copy and the command that fixes it, and passes the fresh one", async () => {
  const dir = await Deno.makeTempDir({ prefix: "openapi-check-" });
  try {
    const stale = structuredClone(committed);
    stale.paths["/functions/v1/get-price-id"]!.post.summary = "An old summary";
    await Deno.writeTextFile(`${dir}/openapi.json`, JSON.stringify(stale, null, 2) + "\n");
    const run = (file: string) =>
      new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", `${ROOT}local/generators/openapi.ts`, "--check", file],
        cwd: ROOT,
        stdout: "piped",
        stderr: "piped",
      }).output();
    const refused = await run(`${dir}/openapi.json`);
    assert.equal(refused.code, 1);
    const said = new TextDecoder().decode(refused.stderr);
    assert.match(said, /docs\/openapi\.json/);
    assert.match(said, /deno task openapi/);
    const passed = await run(`${ROOT}docs/openapi.json`);
    assert.equal(passed.code, 0, new TextDecoder().decode(passed.stderr));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the OpenAPI 3.1 validator accepts the document and refuses broken copies", async () => {
  assert.deepEqual(await validateOpenApi(committed), []);

  const noVersion = structuredClone(committed) as unknown as { info: Record<string, unknown> };
  delete noVersion.info.version;
  const missing = await validateOpenApi(noVersion);
  assert.ok(missing.some((line) => line.includes("version")), missing.join("\n"));

  const badStatus = structuredClone(committed) as unknown as Record<string, unknown>;
  (badStatus.paths as Record<string, { post: { responses: unknown } }>)[
    "/functions/v1/get-price-id"
  ]!.post.responses = { "200": { content: {} } };
  assert.notDeepEqual(await validateOpenApi(badStatus), [], "a response needs a description");

  const dangling = structuredClone(committed);
  dangling.paths["/functions/v1/get-price-id"]!.post.responses["200"] = {
    $ref: "#/components/responses/Nowhere",
  };
  assert.notDeepEqual(await validateOpenApi(dangling), [], "a $ref must resolve");

  // checkOpenApi reports the validator's refusal of a file that is not stale.
  const dir = await Deno.makeTempDir({ prefix: "openapi-check-" });
  try {
    await Deno.writeTextFile(`${dir}/openapi.json`, JSON.stringify(noVersion));
    const problems = await checkOpenApi(`${dir}/openapi.json`);
    assert.ok(problems.some((p) => p.startsWith("Stale")));
    assert.ok(problems.some((p) => p.includes("validator refuses")), problems.join("\n"));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("every function has exactly one path: POST /functions/v1/<name>, tagged with its group", () => {
  const paths = Object.keys(committed.paths);
  assert.deepEqual(paths, FUNCTION_NAMES.map((name) => `/functions/v1/${name}`));
  for (const name of FUNCTION_NAMES) {
    const item = committed.paths[`/functions/v1/${name}`]!;
    assert.deepEqual(Object.keys(item), ["post"], name);
    const entry = FUNCTIONS[name];
    assert.equal(item.post.operationId, name);
    assert.equal(item.post.summary, entry.summary);
    assert.deepEqual(item.post.tags, [entry.group]);
    assert.equal(item.post["x-access"], entry.access);
    assert.equal(item.post["x-scheduler"], "scheduler" in entry ? true : undefined, name);
  }
  const tags = committed.tags.map((tag) => tag.name);
  for (const name of FUNCTION_NAMES) assert.ok(tags.includes(FUNCTIONS[name].group));
});

Deno.test("each operation's security is the credentials its access rule admits", () => {
  // From shared/access.ts and docs/functions.md#credentials.
  const service = ["secretKey", "secretKeyBearer"];
  const expected: Record<Access, string[]> = {
    public: ["publishableKey", "publishableKeyBearer", "userJwt", ...service],
    user: ["userJwt"],
    seller: ["userJwt"],
    "deal-participant": ["userJwt"],
    "deal-participant-or-admin": ["userJwt", "adminJwt"],
    admin: ["adminJwt"],
    scheduled: ["adminJwt", "schedulerToken", ...service],
    system: ["adminJwt", ...service],
    webhook: [],
  };
  const webhookSchemes: Record<string, string> = {
    "payproc-webhook": "payprocSignature",
    "auth-email-webhook": "authHookSignature",
  };
  const schemes = committed.components.securitySchemes;
  for (const name of FUNCTION_NAMES) {
    const entry = FUNCTIONS[name];
    const security = operation(name).security;
    for (const requirement of security) {
      assert.equal(Object.keys(requirement).length, 1, `${name}: one scheme per alternative`);
    }
    const got = security.map((requirement) => Object.keys(requirement)[0]!).sort();
    let want = entry.access === "webhook" ? [webhookSchemes[name]!] : expected[entry.access];
    if ("scheduler" in entry) want = [...want, "schedulerToken", ...service];
    assert.deepEqual(got, [...new Set(want)].sort(), name);
    for (const scheme of got) assert.ok(schemes[scheme], `${name}: scheme ${scheme} is defined`);
  }
  assert.deepEqual(schemes.publishableKey, {
    ...schemes.publishableKey,
    in: "header",
    name: "apikey",
  });
  assert.deepEqual(schemes.secretKey, { ...schemes.secretKey, in: "header", name: "apikey" });
  assert.equal(schemes.userJwt?.type, "http");
  assert.equal((schemes.payprocSignature as { name: string }).name, "Stripe-Signature");
  assert.equal((schemes.authHookSignature as { name: string }).name, "webhook-signature");
});

Deno.test("every example is in the document and parses with its function's schema", () => {
  for (const name of FUNCTION_NAMES) {
    const entry = FUNCTIONS[name];
    const example = OPENAPI_EXAMPLES[name];
    const media = operation(name).requestBody.content["application/json"]!;
    assert.deepEqual(media.example, example, name);
    if ("input" in entry) {
      const parsed = entry.input.safeParse(example);
      assert.ok(parsed.success, `${name}: ${JSON.stringify(parsed.error?.issues)}`);
    } else if (name === "auth-email-webhook") {
      const parsed = AuthHookPayload.safeParse(example);
      assert.ok(parsed.success, `${name}: ${JSON.stringify(parsed.error?.issues)}`);
    } else if (entry.access === "webhook") {
      const event = example as Record<string, unknown>;
      assert.equal(event.object, "event");
      assert.equal(typeof event.id, "string");
      assert.equal(typeof event.type, "string");
    } else {
      assert.deepEqual(example, {}, `${name} takes no body`);
    }
  }
});

Deno.test("every request and answer schema is a component; a body is required only where {} fails", () => {
  const schemas = committed.components.schemas;
  for (const name of FUNCTION_NAMES) {
    const entry = FUNCTIONS[name];
    const op = operation(name);
    const request = op.requestBody.content["application/json"]!.schema;
    if ("input" in entry) {
      assert.ok("$ref" in request, `${name}: its request is a component`);
      assert.ok(deref(committed, request), name);
      assert.equal(op.requestBody.required, !entry.input.safeParse({}).success, name);
    } else if (entry.access === "webhook") {
      assert.ok("$ref" in request && deref(committed, request), name);
      assert.equal(op.requestBody.required, true);
    } else {
      assert.equal(op.requestBody.required, false, `${name} takes no body`);
    }
    const ok = deref<Response>(committed, op.responses["200"]!);
    const answer = ok.content?.["application/json"]?.schema;
    assert.ok(answer && "$ref" in answer, `${name}: its answer is a component`);
    assert.ok(deref(committed, answer), name);
  }
  // Every $ref anywhere resolves.
  const refs: string[] = [];
  const walk = (value: unknown): void => {
    if (Array.isArray(value)) value.forEach(walk);
    else if (value && typeof value === "object") {
      const ref = (value as { $ref?: unknown }).$ref;
      if (typeof ref === "string") refs.push(ref);
      Object.values(value).forEach(walk);
    }
  };
  walk(committed);
  assert.ok(refs.length > 100);
  for (const ref of new Set(refs)) assert.ok(resolve(committed, ref) !== undefined, ref);
  // Named components, not standalone documents.
  for (const [name, schema] of Object.entries(schemas)) {
    assert.equal(schema.$schema, undefined, name);
    assert.equal(schema.$id, undefined, name);
  }
  // What JSON Schema cannot run is said, not dropped: the content type is
  // normalised before it is checked against the allowed types.
  const upload = schemas.CreateUploadUrlInput as {
    properties: { contentType: { type: string; "x-normalized": { enum: string[] } } };
  };
  assert.equal(upload.properties.contentType.type, "string");
  assert.ok(upload.properties.contentType["x-normalized"].enum.includes("application/pdf"));
});

Deno.test("error responses carry the error body; 404 and 429 follow the access rule and the limit", () => {
  for (const name of FUNCTION_NAMES) {
    const entry = FUNCTIONS[name];
    const op = operation(name);
    const statuses = Object.keys(op.responses);
    const errorBody = name === "auth-email-webhook" ? "AuthHookErrorBody" : "ErrorBody";
    for (const status of statuses.filter((s) => s !== "200")) {
      const response = deref<Response>(committed, op.responses[status]!);
      assert.deepEqual(
        response.content?.["application/json"]?.schema,
        { $ref: `#/components/schemas/${errorBody}` },
        `${name} ${status}`,
      );
    }
    for (const status of ["400", "413", "500", "503", "default"]) {
      assert.ok(statuses.includes(status), `${name} ${status}`);
    }
    const webhook = entry.access === "webhook";
    assert.equal(statuses.includes("403"), !webhook, `${name} 403`);
    assert.equal(statuses.includes("401"), name !== "payproc-webhook", `${name} 401`);
    const dealRule = entry.access === "deal-participant" ||
      entry.access === "deal-participant-or-admin";
    assert.equal(statuses.includes("404"), dealRule, `${name} 404`);
    const limit = definitions.get(name)?.definition.rateLimit;
    assert.equal(statuses.includes("429"), limit !== undefined, `${name} 429`);
    assert.deepEqual(
      op["x-rate-limit"],
      limit && { limit: limit.limit, windowSeconds: limit.windowSeconds },
    );
  }
  const rateLimited = committed.components.responses.RateLimited!;
  assert.ok(rateLimited.headers?.["Retry-After"]);
  const body = committed.components.schemas.ErrorBody as {
    properties: { error: { required: string[] } };
  };
  assert.deepEqual(body.properties.error.required, ["code", "message"]);
});

Deno.test("servers: the local stack and a hosted project", () => {
  assert.equal(committed.openapi, "3.1.0");
  assert.deepEqual(committed.servers.map((server) => server.url), [
    "http://127.0.0.1:54321",
    "https://{project_ref}.supabase.co",
  ]);
  assert.ok(committed.servers[1]!.variables?.project_ref?.default);
});
