import assert from "node:assert/strict";
import { createGateway } from "../../local/gateway.ts";
import { defineFunction } from "../../supabase/functions/_shared/function.ts";
import { createTestDatabase, sqlTest } from "../support/db.ts";
import { testCredentials } from "../support/credentials.ts";
import { testRuntime } from "../support/runtime.ts";

const db = await createTestDatabase();
const keys = await testCredentials();
const runtime = await testRuntime(db);

/** Probes that report the path the function saw. */
const publicProbe = defineFunction({
  name: "security-headers",
  access: "public",
  handle: ({ request }) => ({ path: new URL(request.url).pathname }),
});
const webhookProbe = defineFunction({
  name: "payproc-webhook",
  access: "webhook",
  handle: ({ request, rawBody }) => ({ path: new URL(request.url).pathname, rawBody }),
});
const gateway = createGateway({
  functions: new Map([["security-headers", publicProbe], ["payproc-webhook", webhookProbe]]),
  runtime,
  verifyJwt: new Map([["security-headers", true], ["payproc-webhook", false]]),
  jwks: keys.jwks,
});

const post = (path: string, init: RequestInit = {}) =>
  gateway(new Request(`http://127.0.0.1${path}`, { method: "POST", ...init }));

sqlTest("gateway strips /functions/v1 and passes /<name>/... to the function", async () => {
  const res = await post("/functions/v1/security-headers/sub/path?x=1", {
    headers: { authorization: `Bearer ${keys.anonKey}` },
  });
  assert.deepEqual(await res.json(), { path: "/security-headers/sub/path" });
});

sqlTest(
  "gateway applies verify_jwt: a project JWT is required unless the function opts out",
  async () => {
    const noJwt = await post("/functions/v1/security-headers");
    assert.equal(noJwt.status, 401);
    assert.equal((await noJwt.json()).error.code, "unauthorized");
    const scheduler = await post("/functions/v1/security-headers", {
      headers: { authorization: `Bearer ${keys.schedulerToken}` },
    });
    assert.equal(scheduler.status, 401, "an opaque token is not a JWT");
    await scheduler.body?.cancel();
    const webhook = await post("/functions/v1/payproc-webhook", { body: '{"id":"evt_1"}' });
    assert.deepEqual(await webhook.json(), { path: "/payproc-webhook", rawBody: '{"id":"evt_1"}' });
  },
);

sqlTest(
  "gateway answers 404 function_not_found for an unknown name and serves the JWKS",
  async () => {
    const missing = await post("/functions/v1/nope", {
      headers: { authorization: `Bearer ${keys.anonKey}` },
    });
    assert.deepEqual([missing.status, (await missing.json()).error.code], [
      404,
      "function_not_found",
    ]);
    const jwks = await gateway(new Request("http://127.0.0.1/auth/v1/.well-known/jwks.json"));
    assert.deepEqual(await jwks.json(), keys.jwks);
    const other = await post("/rest/v1/listings");
    assert.equal(other.status, 404);
    await other.body?.cancel();
  },
);

sqlTest("gateway answers CORS preflight without a token", async () => {
  const res = await gateway(
    new Request("http://127.0.0.1/functions/v1/security-headers", { method: "OPTIONS" }),
  );
  assert.equal(res.status, 204);
  assert.equal(res.headers.get("access-control-allow-origin"), "*");
});
