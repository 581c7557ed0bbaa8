import assert from "node:assert/strict";
import { createGateway } from "../../local/gateway.ts";
import { localOrigins } from "../../local/start.ts";
import { createFunction } from "../../supabase/functions/_shared/platform/function.ts";
import type { Runtime } from "../../supabase/functions/_shared/platform/runtime.ts";
import { createTestDatabase, sqlTest } from "../support/db.ts";
import { testCredentials } from "../support/credentials.ts";
import { testRuntime } from "../support/runtime.ts";

const db = await createTestDatabase();
const keys = await testCredentials();
const runtime = await testRuntime(db);

/** Probes that report the path the function saw. */
const publicProbe = createFunction(
  { name: "security-headers", access: "public", group: "utilities" },
  { handle: ({ request }) => ({ path: new URL(request.url).pathname }) },
);
const webhookProbe = createFunction(
  { name: "payproc-webhook", access: "webhook", group: "billing" },
  { handle: ({ request, rawBody }) => ({ path: new URL(request.url).pathname, rawBody }) },
);
const gatewayOn = (runtime: Runtime) =>
  createGateway({
    functions: new Map([["security-headers", publicProbe], ["payproc-webhook", webhookProbe]]),
    runtime,
    verifyJwt: new Map([["security-headers", true], ["payproc-webhook", false]]),
    jwks: keys.jwks,
  });
const gateway = gatewayOn(runtime);

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

/** Every header but the body's own, lower-cased and sorted, for comparing answers. */
function headerSet(res: Response, ignore: string[] = []): Array<[string, string]> {
  const skip = new Set(["content-length", ...ignore]);
  return [...res.headers].filter(([name]) => !skip.has(name)).sort(([a], [b]) =>
    a.localeCompare(b)
  );
}

sqlTest(
  "gateway's own 404, 401 and 405 carry the security, CORS and X-Request-Id headers a function's answer does",
  async () => {
    const allowList = await testRuntime(db, { ALLOWED_ORIGINS: "https://app.example" });
    for (
      const [label, rt, origin] of [
        ["any origin", runtime, "https://elsewhere.example"],
        ["allow-listed origin", allowList, "https://app.example"],
      ] as const
    ) {
      const gw = gatewayOn(rt);
      const call = (path: string, init: RequestInit = {}, token?: string) =>
        gw(
          new Request(`http://127.0.0.1${path}`, {
            method: "POST",
            ...init,
            headers: {
              origin,
              "x-request-id": "req-gateway-test",
              ...(token ? { authorization: `Bearer ${token}` } : {}),
            },
          }),
        );
      const fromFunction = await call("/functions/v1/security-headers", {}, keys.anonKey);
      assert.equal(fromFunction.status, 200, label);
      await fromFunction.body?.cancel();
      const expected = headerSet(fromFunction);
      assert.ok(expected.some(([name]) => name === "content-security-policy"), label);
      assert.ok(expected.some(([name]) => name === "access-control-expose-headers"), label);
      assert.deepEqual(expected.find(([name]) => name === "x-request-id"), [
        "x-request-id",
        "req-gateway-test",
      ]);

      const answers: Array<[string, Response, number, string]> = [
        [
          "unknown function",
          await call("/functions/v1/nope", {}, keys.anonKey),
          404,
          "function_not_found",
        ],
        ["other path", await call("/rest/v1/listings"), 404, "not_found"],
        ["verify_jwt", await call("/functions/v1/security-headers"), 401, "unauthorized"],
        ["JWKS POST", await call("/auth/v1/.well-known/jwks.json"), 405, "method_not_allowed"],
      ];
      for (const [what, res, status, code] of answers) {
        assert.equal(res.status, status, `${label}: ${what}`);
        assert.equal((await res.json()).error.code, code, `${label}: ${what}`);
        assert.deepEqual(headerSet(res, ["allow"]), expected, `${label}: ${what}`);
      }
      assert.equal(answers[3]![1].headers.get("allow"), "GET, HEAD, OPTIONS");
    }
  },
);

sqlTest("gateway gives its own answers a new X-Request-Id when the caller sends none", async () => {
  const first = await post("/functions/v1/nope");
  const second = await post("/functions/v1/nope");
  await first.body?.cancel();
  await second.body?.cancel();
  const ids = [first.headers.get("x-request-id"), second.headers.get("x-request-id")];
  for (const id of ids) assert.match(id ?? "", /^[0-9a-f-]{36}$/);
  assert.notEqual(ids[0], ids[1]);
});

sqlTest("gateway's JWKS answers GET and HEAD, 405 with Allow for other methods", async () => {
  const jwks = (method: string) =>
    gateway(new Request("http://127.0.0.1/auth/v1/.well-known/jwks.json", { method }));
  const get = await jwks("GET");
  assert.deepEqual(await get.json(), keys.jwks);
  assert.equal(get.headers.get("cache-control"), "max-age=600");
  assert.ok(get.headers.get("content-security-policy"));
  const head = await jwks("HEAD");
  assert.equal(head.status, 200);
  assert.equal(await head.text(), "");
  const preflight = await jwks("OPTIONS");
  assert.equal(preflight.status, 204);
  assert.equal(preflight.headers.get("access-control-allow-methods"), "GET, HEAD, OPTIONS");
  for (const method of ["PUT", "DELETE", "PATCH"]) {
    const res = await jwks(method);
    assert.equal(res.status, 405, method);
    assert.equal(res.headers.get("allow"), "GET, HEAD, OPTIONS");
    assert.equal((await res.json()).error.code, "method_not_allowed");
  }
});

sqlTest(
  "gateway with the local stack's origins: a page elsewhere is refused before anything runs",
  async () => {
    const local = gatewayOn(
      await testRuntime(db, { ALLOWED_ORIGINS: localOrigins("https://app.example.com").join(",") }),
    );
    const call = (origin: string, method = "POST", host = "127.0.0.1:54321") =>
      local(
        new Request(`http://${host}/functions/v1/payproc-webhook`, {
          method,
          headers: { origin },
          body: method === "POST" ? '{"id":"evt_1"}' : undefined,
        }),
      );
    for (
      const origin of [
        "https://evil.example",
        "http://localhost.evil.example",
        "http://127.0.0.1.nip.io:54321",
        "https://app.example.com:8443",
        "http://localhost:5173x",
        "null",
      ]
    ) {
      for (const method of ["OPTIONS", "POST"]) {
        const res = await call(origin, method);
        assert.equal(res.status, 403, `${method} from ${origin}`);
        assert.equal(res.headers.get("access-control-allow-origin"), null);
        assert.ok(res.headers.has("content-security-policy"), "an answer's headers all the same");
        assert.equal((await res.json()).error.code, "origin_not_allowed");
      }
    }
    for (
      const origin of [
        "http://localhost:5173",
        "http://localhost",
        "https://127.0.0.1:3000",
        "http://[::1]:8080",
        "https://app.example.com",
      ]
    ) {
      const res = await call(origin);
      assert.equal(res.status, 200, origin);
      assert.equal(res.headers.get("access-control-allow-origin"), origin);
      assert.deepEqual(await res.json(), { path: "/payproc-webhook", rawBody: '{"id":"evt_1"}' });
    }
    const serverToServer = await local(
      new Request("http://127.0.0.1/functions/v1/payproc-webhook", { method: "POST", body: "{}" }),
    );
    assert.equal(serverToServer.status, 200, "a request without Origin is not a page's");
    await serverToServer.body?.cancel();
  },
);

sqlTest("gateway answers a loopback Host only, on every path", async () => {
  for (const host of ["evil.example", "127.0.0.1.nip.io", "10.0.0.1", "localhost.evil.example"]) {
    for (
      const path of [
        "/functions/v1/payproc-webhook",
        "/auth/v1/.well-known/jwks.json",
        "/storage/v1/object/public/x",
        "/nope",
      ]
    ) {
      const res = await gateway(new Request(`http://${host}:54321${path}`, { method: "POST" }));
      assert.equal(res.status, 403, `${host}${path}`);
      const body = await res.json();
      assert.equal(body.error.code, "forbidden");
      assert.match(body.error.message, /answers on 127\.0\.0\.1 and localhost only/);
    }
  }
  for (const host of ["localhost", "127.0.0.2", "app.localhost", "[::1]"]) {
    const res = await gateway(new Request(`http://${host}:54321/auth/v1/.well-known/jwks.json`));
    assert.equal(res.status, 200, host);
    await res.body?.cancel();
  }
});
