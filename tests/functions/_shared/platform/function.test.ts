import assert from "node:assert/strict";
import { z } from "zod";
import {
  createFunction,
  defineFunction,
} from "../../../../supabase/functions/_shared/platform/function.ts";
import { HttpError } from "../../../../supabase/functions/_shared/platform/errors.ts";
import { Runtime } from "../../../../supabase/functions/_shared/platform/runtime.ts";
import type { Access } from "../../../../shared/access.ts";
import { FUNCTIONS } from "../../../../shared/functions.ts";
import { createTestDatabase, sqlTest } from "../../../support/db.ts";
import { createUser } from "../../../support/sql.ts";
import { testCredentials } from "../../../support/credentials.ts";
import { invoke, testRuntime } from "../../../support/runtime.ts";

const db = await createTestDatabase();
const keys = await testCredentials();
const lines: Array<Record<string, unknown>> = [];
const base = await testRuntime(db);
const runtime = new Runtime(
  {
    ...Object.fromEntries(Object.entries(base.env.values).filter(([, v]) => typeof v === "string")),
    LOG_LEVEL: "info",
  },
  { logSink: (_level, line) => lines.push(JSON.parse(line)) },
);
await db.pool.query("create table public.factory_probe (note text)");

/** A function that writes a row, so tests can assert nothing was written on failure. */
const writer = createFunction({
  name: "send-email",
  access: "system",
  group: "notifications",
  input: z.object({ note: z.string().min(2) }),
}, {
  async handle({ input, ctx }) {
    await ctx.db.query("insert into public.factory_probe (note) values ($1)", [input.note]);
    return { written: input.note };
  },
});

const thrower = createFunction({
  name: "test-sponsored-activation",
  access: "admin",
  group: "utilities",
  input: z.object({ kind: z.enum(["http", "crash"]) }),
}, {
  handle({ input }) {
    if (input.kind === "http") throw new HttpError(409, "conflict", "Cannot do it twice");
    throw new Error("database password is hunter2");
  },
});

async function probeCount(): Promise<number> {
  const { rows } = await db.pool.query("select count(*)::int as n from public.factory_probe");
  return rows[0].n;
}

const admin = await createUser(db.pool, { admin: true });
const adminToken = await keys.userToken(admin);

sqlTest("defineFunction() answers OPTIONS preflight with CORS and security headers", async () => {
  const res = await invoke(writer, runtime, { method: "OPTIONS" });
  assert.equal(res.status, 204);
  assert.equal(res.headers.get("access-control-allow-origin"), "*");
  assert.match(res.headers.get("access-control-allow-headers") ?? "", /authorization/);
  assert.match(res.headers.get("access-control-allow-methods") ?? "", /POST/);
  assert.equal(res.headers.get("x-frame-options"), "DENY");
});

sqlTest("defineFunction() refuses GET with 405 method_not_allowed", async () => {
  const res = await invoke(writer, runtime, { method: "GET", token: keys.serviceKey });
  assert.equal(res.status, 405);
  assert.equal(res.headers.get("allow"), "POST, OPTIONS");
  assert.deepEqual(res.body, {
    error: { code: "method_not_allowed", message: "Cannot GET this function: use POST" },
  });
});

sqlTest("defineFunction() puts security headers and a request id on errors too", async () => {
  const res = await invoke(writer, runtime, {});
  assert.equal(res.status, 401);
  for (
    const name of [
      "content-security-policy",
      "strict-transport-security",
      "x-content-type-options",
      "referrer-policy",
      "permissions-policy",
    ]
  ) {
    assert.ok(res.headers.get(name), `missing ${name}`);
  }
  assert.match(res.headers.get("x-request-id") ?? "", /^[0-9a-f-]{36}$/);
  assert.equal(res.headers.get("x-error-code"), null);
});

sqlTest("defineFunction() echoes a caller's X-Request-Id", async () => {
  const res = await invoke(writer, runtime, { headers: { "x-request-id": "abc-123" } });
  assert.equal(res.headers.get("x-request-id"), "abc-123");
});

sqlTest(
  "defineFunction() answers 400 invalid_json for a malformed body and writes nothing",
  async () => {
    const res = await invoke(writer, runtime, { token: keys.serviceKey, rawBody: "{nope" });
    assert.equal(res.status, 400);
    assert.equal((res.body as { error: { code: string } }).error.code, "invalid_json");
    const array = await invoke(writer, runtime, { token: keys.serviceKey, rawBody: "[1]" });
    assert.equal(array.status, 400);
    assert.equal((array.body as { error: { code: string } }).error.code, "invalid_json");
    assert.equal(await probeCount(), 0);
  },
);

sqlTest("defineFunction() answers 400 invalid_input with zod issues in details", async () => {
  const res = await invoke(writer, runtime, { token: keys.serviceKey, body: { note: 5 } });
  assert.equal(res.status, 400);
  const error = (res.body as { error: { code: string; details: Array<{ path: string }> } }).error;
  assert.equal(error.code, "invalid_input");
  assert.equal(error.details[0]!.path, "note");
  assert.equal(await probeCount(), 0);
});

sqlTest("defineFunction() answers 413 for a body over 1 MiB, declared or streamed", async () => {
  const big = JSON.stringify({ note: "x".repeat(1024 * 1024) });
  const declared = await invoke(writer, runtime, {
    token: keys.serviceKey,
    rawBody: big,
    headers: { "content-length": String(big.length) },
  });
  assert.equal(declared.status, 413);
  assert.equal((declared.body as { error: { code: string } }).error.code, "payload_too_large");
  const chunk = new TextEncoder().encode("x".repeat(64 * 1024));
  let sent = 0;
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent++ > 20) controller.close();
      else controller.enqueue(chunk);
    },
  });
  const res = await writer.with(runtime)(
    new Request("http://127.0.0.1/send-email", {
      method: "POST",
      headers: { authorization: `Bearer ${keys.serviceKey}` },
      body: stream,
    }),
  );
  assert.equal(res.status, 413);
  await res.body?.cancel();
  assert.equal(await probeCount(), 0);
});

sqlTest("defineFunction() runs the handler and answers its JSON with 200", async () => {
  const res = await invoke(writer, runtime, { token: keys.serviceKey, body: { note: "hello" } });
  assert.equal(res.status, 200);
  assert.deepEqual(res.body, { written: "hello" });
  assert.equal(res.headers.get("content-type"), "application/json");
  assert.equal(await probeCount(), 1);
});

sqlTest(
  "defineFunction() passes an HttpError through and hides anything else as 500 internal",
  async () => {
    const conflict = await invoke(thrower, runtime, { token: adminToken, body: { kind: "http" } });
    assert.equal(conflict.status, 409);
    assert.deepEqual(conflict.body, { error: { code: "conflict", message: "Cannot do it twice" } });
    lines.length = 0;
    const crash = await invoke(thrower, runtime, { token: adminToken, body: { kind: "crash" } });
    assert.equal(crash.status, 500);
    const error = (crash.body as { error: { code: string; message: string } }).error;
    assert.equal(error.code, "internal");
    assert.doesNotMatch(JSON.stringify(crash.body), /hunter2/);
    const logged = lines.find((line) => line.msg === "request failed");
    assert.equal(logged?.request_id, crash.headers.get("x-request-id"));
  },
);

sqlTest("defineFunction() logs one JSON line per request with status and duration", async () => {
  lines.length = 0;
  await invoke(writer, runtime, { token: keys.serviceKey, body: { note: "log me" } });
  const requests = lines.filter((line) => line.msg === "request");
  assert.equal(requests.length, 1);
  const line = requests[0]!;
  assert.equal(line.function, "send-email");
  assert.equal(line.status, 200);
  assert.equal(line.caller, "service");
  assert.equal(typeof line.duration_ms, "number");
  assert.doesNotMatch(JSON.stringify(lines), new RegExp(keys.serviceKey.split(".")[2]!));
});

sqlTest("defineFunction() answers 503 not_configured naming a missing variable", async () => {
  const bare = new Runtime({
    LOG_LEVEL: "silent",
    SUPABASE_JWT_SECRET: "test-jwt-secret-that-is-at-least-32-characters",
  });
  const res = await invoke(writer, bare, { token: keys.serviceKey, body: { note: "zz" } });
  assert.equal(res.status, 503);
  assert.deepEqual(res.body, {
    error: {
      code: "not_configured",
      message: "Cannot serve this request: SUPABASE_DB_URL is not configured",
      details: { variable: "SUPABASE_DB_URL" },
    },
  });
});

sqlTest("defineFunction() keeps the declaration: the catalog entry with the handler", async () => {
  const fn = defineFunction({
    name: "get-price-id",
    access: "public",
    group: "billing",
    summary: "Maps a plan-interval key to a price id",
    input: () => import("../../../../shared/schemas.ts").then((schemas) => schemas.GetPriceIdInput),
    output: "GetPriceIdOutput",
    handle: () => ({ priceId: "price_1" }),
  });
  assert.equal(fn.definition.access, FUNCTIONS["get-price-id"].access);
  assert.equal(typeof fn.definition.input, "function");
  assert.equal(
    await (fn.definition.input as () => Promise<unknown>)(),
    FUNCTIONS["get-price-id"].input,
  );
  assert.equal(fn.definition.output, "GetPriceIdOutput");
  assert.equal(fn.definition.summary, FUNCTIONS["get-price-id"].summary);
  assert.ok(Object.isFrozen(fn.definition));
});

sqlTest("defineFunction() refuses, at cold start, a misdeclared function", () => {
  assert.throws(
    () =>
      defineFunction({
        name: "payment-status",
        access: "deal-participant",
        group: "deals",
        summary: "A deal function without a dealId to check",
        output: "PaymentStatusOutput",
        handle: () => ({}) as never,
      }),
    /needs an input with dealId/,
  );
  assert.throws(
    () =>
      createFunction({ name: "probe", access: "nobody" as Access, group: "utilities" }, {
        handle: () => ({}),
      }),
    /unknown access "nobody"/,
  );
  return Promise.resolve();
});

sqlTest("defineFunction() limits calls per caller: 429 rate_limited with Retry-After", async () => {
  const limited = createFunction({ name: "check-subscription", access: "user", group: "billing" }, {
    rateLimit: { limit: 2, windowSeconds: 60 },
    handle: ({ caller }) => ({ caller: caller.id }),
  });
  const alice = await createUser(db.pool);
  const bob = await createUser(db.pool);
  const aliceToken = await keys.userToken(alice);
  const statuses = [];
  for (let i = 0; i < 3; i++) {
    statuses.push((await invoke(limited, runtime, { token: aliceToken })).status);
  }
  assert.deepEqual(statuses, [200, 200, 429]);
  const refused = await invoke<{ error: { code: string; details: { retryAfter: number } } }>(
    limited,
    runtime,
    { token: aliceToken },
  );
  assert.equal(refused.body.error.code, "rate_limited");
  const retryAfter = Number(refused.headers.get("retry-after"));
  assert.ok(retryAfter >= 1 && retryAfter <= 60, String(retryAfter));
  assert.equal(refused.body.error.details.retryAfter, retryAfter);
  assert.match(refused.headers.get("access-control-expose-headers") ?? "", /Retry-After/);
  assert.equal((await invoke(limited, runtime, { token: await keys.userToken(bob) })).status, 200);
});

sqlTest("Runtime() fails at construction on a malformed variable, naming it", () => {
  assert.throws(() => new Runtime({ SUPABASE_URL: "not a url" }), /"SUPABASE_URL"/);
  return Promise.resolve();
});

const sqlRaiser = createFunction({
  name: "cleanup-duplicates",
  access: "admin",
  group: "schedulers",
  input: z.object({ errcode: z.enum(["PT409", "42501", "22012"]) }),
}, {
  async handle({ input, ctx }) {
    await ctx.db.query(
      `do $$ begin raise exception 'Cannot move listing: "approved" to "draft"' using errcode = '${input.errcode}'; end $$`,
    );
    return {};
  },
});

sqlTest(
  "defineFunction() maps state-machine refusals to 409, privilege refusals to 403, other SQL errors to 500",
  async () => {
    const conflict = await invoke(sqlRaiser, runtime, {
      token: adminToken,
      body: { errcode: "PT409" },
    });
    assert.deepEqual([conflict.status, conflict.body], [409, {
      error: { code: "conflict", message: 'Cannot move listing: "approved" to "draft"' },
    }]);
    const denied = await invoke(sqlRaiser, runtime, {
      token: adminToken,
      body: { errcode: "42501" },
    });
    assert.equal(denied.status, 403);
    const other = await invoke(sqlRaiser, runtime, {
      token: adminToken,
      body: { errcode: "22012" },
    });
    assert.equal(other.status, 500);
    assert.doesNotMatch(JSON.stringify(other.body), /listing/);
  },
);

Deno.test("createFunction: errorBody shapes every failure of a function with its own contract", async () => {
  const hook = createFunction({ name: "test-payproc", access: "webhook", group: "utilities" }, {
    errorBody: (error) => ({ error: { http_code: error.status, ...error.toBody().error } }),
    handle() {
      throw new HttpError(401, "invalid_signature", "Bad signature");
    },
  });
  const failed = await hook.with(runtime)(
    new Request("http://127.0.0.1/test-payproc", { method: "POST", body: "{}" }),
  );
  assert.equal(failed.status, 401);
  assert.deepEqual(await failed.json(), {
    error: { http_code: 401, code: "invalid_signature", message: "Bad signature" },
  });
  const wrongMethod = await hook.with(runtime)(new Request("http://127.0.0.1/test-payproc"));
  assert.equal(wrongMethod.status, 405);
  assert.equal((await wrongMethod.json()).error.http_code, 405);
  assert.equal(wrongMethod.headers.get("allow"), "POST, OPTIONS");
});

sqlTest(
  "a declared input schema loads on the first call that passes access, once; a failed load is tried again",
  async () => {
    let loads = 0;
    const fn = defineFunction({
      name: "send-email",
      access: "system",
      group: "notifications",
      summary: "A probe whose schema fails to load once",
      input: () => {
        loads++;
        return loads === 1
          ? Promise.reject(new Error("module not reachable"))
          : Promise.resolve(z.object({ note: z.string() }));
      },
      output: "SendEmailOutput",
      handle: ({ input }) => ({ note: input.note }) as never,
    });
    // Refused before the body is looked at: nothing is loaded.
    assert.equal(
      (await invoke(fn, runtime, { token: keys.anonKey, body: { note: "x" } })).status,
      403,
    );
    assert.equal(loads, 0);
    const failed = await invoke(fn, runtime, { token: keys.serviceKey, body: { note: "x" } })
      .catch((error: Error) => error);
    assert.ok(
      failed instanceof Error || failed.status === 500,
      "the failed load fails the request",
    );
    for (const note of ["a", "b"]) {
      const res = await fn.with(runtime)(
        new Request("http://127.0.0.1/send-email", {
          method: "POST",
          headers: { authorization: `Bearer ${keys.serviceKey}` },
          body: JSON.stringify({ note }),
        }),
      );
      assert.deepEqual([res.status, await res.json()], [200, { note }]);
    }
    assert.equal(loads, 2, "loaded again after the failure, then kept");
  },
);

Deno.test("Runtime.load() keeps what it made and forgets a failure", async () => {
  const runtime = new Runtime({ LOG_LEVEL: "silent" });
  let made = 0;
  const create = () => {
    made++;
    return made === 1 ? Promise.reject(new Error("down")) : Promise.resolve({ client: made });
  };
  await assert.rejects(runtime.load("probe", create), /down/);
  assert.deepEqual(await runtime.load("probe", create), { client: 2 });
  assert.deepEqual(await runtime.load("probe", create), { client: 2 });
  assert.equal(made, 2);
});
