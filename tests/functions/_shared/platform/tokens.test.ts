/**
 * Credentials as hosted Supabase hands them to functions: the legacy HS256
 * secret under a name a hosted project may set (`JWT_SECRET`), the CLI's
 * `oct` key in `SUPABASE_JWKS`, and the new API keys (`sb_publishable_…`,
 * `sb_secret_…`) from `SUPABASE_PUBLISHABLE_KEYS` / `SUPABASE_SECRET_KEYS`,
 * as a bearer token or in the `apikey` header — the latter through the real
 * supabase-js `functions.invoke` against the local gateway.
 */
import assert from "node:assert/strict";
import { base64url, SignJWT } from "jose";
import { createClient, FunctionsHttpError } from "@supabase/supabase-js";
import { createGateway } from "../../../../local/gateway.ts";
import { signProjectKey } from "../../../../local/keys.ts";
import { createFunction } from "../../../../supabase/functions/_shared/platform/function.ts";
import { TokenVerifier } from "../../../../supabase/functions/_shared/platform/tokens.ts";
import { Env } from "../../../../supabase/functions/_shared/platform/env.ts";
import type { Runtime } from "../../../../supabase/functions/_shared/platform/runtime.ts";
import { createTestDatabase, sqlTest } from "../../../support/db.ts";
import { TEST_ISSUER, TEST_JWT_SECRET, testCredentials } from "../../../support/credentials.ts";
import { invoke, testRuntime } from "../../../support/runtime.ts";
import { createUser } from "../../../support/sql.ts";

const db = await createTestDatabase();
const keys = await testCredentials();
const alice = await createUser(db.pool);

/** What a hosted project without the platform's secret variable looks like. */
const HOSTED = {
  SUPABASE_JWT_SECRET: undefined,
  SUPABASE_PUBLISHABLE_KEYS: JSON.stringify({
    default: "sb_publishable_pubDefault0123456789abcdef",
    mobile: "sb_publishable_pubMobile0123456789abcdefg",
  }),
  SUPABASE_SECRET_KEYS: JSON.stringify({ default: "sb_secret_secDefault0123456789abcdefgh" }),
};
const PUBLISHABLE = "sb_publishable_pubDefault0123456789abcdef";
const SECRET = "sb_secret_secDefault0123456789abcdefgh";

/** Probes that echo the caller they were given. */
const publicProbe = createFunction(
  { name: "security-headers", access: "public", group: "utilities" },
  { handle: ({ caller }) => ({ caller: caller.kind }) },
);
const systemProbe = createFunction(
  { name: "send-email", access: "system", group: "notifications" },
  { handle: ({ caller }) => ({ caller: caller.kind }) },
);
const userProbe = createFunction(
  { name: "check-subscription", access: "user", group: "billing" },
  { handle: ({ caller }) => ({ caller: caller.kind === "user" ? caller.id : caller.kind }) },
);

/** An HS256 user token like Supabase Auth signs with the legacy secret. */
function hsUserToken(secret: string): Promise<string> {
  return new SignJWT({ role: "authenticated", email: alice.email })
    .setProtectedHeader({ alg: "HS256", typ: "JWT" })
    .setSubject(alice.id)
    .setAudience("authenticated")
    .setIssuer(TEST_ISSUER)
    .setIssuedAt()
    .setExpirationTime("1h")
    .sign(new TextEncoder().encode(secret));
}

async function callerOf(
  runtime: Runtime,
  options: { token?: string; headers?: Record<string, string> },
  probe = userProbe,
): Promise<[number, unknown]> {
  const res = await invoke<{ caller?: string; error?: { code: string } }>(probe, runtime, {
    ...options,
    body: {},
  });
  return [res.status, res.status === 200 ? res.body.caller : res.body.error?.code];
}

sqlTest(
  "auth: the legacy JWT secret under JWT_SECRET verifies HS256 tokens; SUPABASE_JWT_SECRET decides when both are set",
  async () => {
    const token = await hsUserToken(TEST_JWT_SECRET);
    const hosted = await testRuntime(db, { ...HOSTED, JWT_SECRET: TEST_JWT_SECRET });
    assert.deepEqual(await callerOf(hosted, { token }), [200, alice.id]);
    assert.deepEqual(await callerOf(hosted, { token: keys.serviceKey }, systemProbe), [
      200,
      "service",
    ]);
    // Without any secret, HS256 is refused (asymmetric-key projects need nothing).
    const none = await testRuntime(db, { SUPABASE_JWT_SECRET: undefined });
    assert.deepEqual(await callerOf(none, { token }), [401, "unauthorized"]);
    assert.deepEqual(await callerOf(none, { token: await keys.userToken(alice) }), [200, alice.id]);
    // The reserved name alone still works (the local stack sets it).
    const local = await testRuntime(db, { SUPABASE_JWT_SECRET: TEST_JWT_SECRET });
    assert.deepEqual(await callerOf(local, { token }), [200, alice.id]);
    // Both: the platform's name is the project's secret; a stale JWT_SECRET is not accepted.
    const stale = "a-stale-secret-from-before-a-rotation-000000";
    const both = await testRuntime(db, { SUPABASE_JWT_SECRET: TEST_JWT_SECRET, JWT_SECRET: stale });
    assert.deepEqual(await callerOf(both, { token }), [200, alice.id]);
    assert.deepEqual(await callerOf(both, { token: await hsUserToken(stale) }), [
      401,
      "unauthorized",
    ]);
    // A short secret is malformed configuration, named without its value.
    assert.throws(() => new Env({ JWT_SECRET: "short" }), /malformed "JWT_SECRET"/);
  },
);

sqlTest(
  "auth: the Supabase CLI's edge runtime passes the secret as an oct key in SUPABASE_JWKS, which verifies HS256",
  async () => {
    // As apps/cli-go/pkg/config/config.go ResolveJWKS builds it: {"kty":"oct","k":<base64url>}.
    const jwks = JSON.stringify({
      keys: [keys.signingKey.publicJwk, {
        kty: "oct",
        k: base64url.encode(TEST_JWT_SECRET),
      }],
    });
    const cli = await testRuntime(db, { SUPABASE_JWT_SECRET: undefined, SUPABASE_JWKS: jwks });
    assert.deepEqual(await callerOf(cli, { token: await hsUserToken(TEST_JWT_SECRET) }), [
      200,
      alice.id,
    ]);
    assert.deepEqual(await callerOf(cli, { token: keys.anonKey }, publicProbe), [200, "anon"]);
    assert.deepEqual(await callerOf(cli, { token: await keys.userToken(alice) }), [200, alice.id]);
    const forged = await signProjectKey(
      "service_role",
      "another-secret-that-is-32-characters-long",
    );
    assert.deepEqual(await callerOf(cli, { token: forged }, systemProbe), [401, "unauthorized"]);
    // A configured secret takes precedence over the JWKS's oct key.
    const configured = await testRuntime(db, {
      SUPABASE_JWT_SECRET: undefined,
      JWT_SECRET: "another-secret-that-is-32-characters-long",
      SUPABASE_JWKS: jwks,
    });
    assert.deepEqual(await callerOf(configured, { token: keys.anonKey }, publicProbe), [
      401,
      "unauthorized",
    ]);
    assert.deepEqual(await callerOf(configured, { token: forged }, systemProbe), [200, "service"]);
    // An oct key that is not base64url fails at cold start, naming the variable.
    const malformed = JSON.stringify({ keys: [{ kty: "oct", k: "not base64url!" }] });
    assert.throws(
      () => new TokenVerifier(new Env({ SUPABASE_JWKS: malformed })),
      /malformed "SUPABASE_JWKS"/,
    );
  },
);

sqlTest(
  "auth: sb_publishable_ keys are the anon caller and sb_secret_ keys the service caller, as bearer or apikey",
  async () => {
    const hosted = await testRuntime(db, HOSTED);
    // As a bearer token (curl, older supabase-js, the Storage API).
    assert.deepEqual(await callerOf(hosted, { token: PUBLISHABLE }, publicProbe), [200, "anon"]);
    assert.deepEqual(await callerOf(hosted, { token: SECRET }, systemProbe), [200, "service"]);
    // In the apikey header without Authorization (supabase-js with no session).
    assert.deepEqual(await callerOf(hosted, { headers: { apikey: PUBLISHABLE } }, publicProbe), [
      200,
      "anon",
    ]);
    assert.deepEqual(await callerOf(hosted, { headers: { apikey: SECRET } }, systemProbe), [
      200,
      "service",
    ]);
    // Every named key of the map is a key of the project.
    assert.deepEqual(
      await callerOf(hosted, {
        headers: { apikey: "sb_publishable_pubMobile0123456789abcdefg" },
      }, publicProbe),
      [200, "anon"],
    );
    // The anon caller is not the service caller: 403, not 401.
    assert.deepEqual(await callerOf(hosted, { headers: { apikey: PUBLISHABLE } }, systemProbe), [
      403,
      "forbidden",
    ]);
    // A signed-in user sends both headers: the user's token decides.
    const userToken = await keys.userToken(alice);
    assert.deepEqual(
      await callerOf(hosted, { token: userToken, headers: { apikey: PUBLISHABLE } }),
      [200, alice.id],
    );
    // Opaque keys in SUPABASE_ANON_KEY / SUPABASE_SERVICE_ROLE_KEY count too.
    const legacyNames = await testRuntime(db, {
      SUPABASE_ANON_KEY: "sb_publishable_inLegacyVariable0123456789",
      SUPABASE_SERVICE_ROLE_KEY: "sb_secret_inLegacyVariable0123456789ab",
    });
    assert.deepEqual(
      await callerOf(legacyNames, {
        headers: { apikey: "sb_secret_inLegacyVariable0123456789ab" },
      }, systemProbe),
      [200, "service"],
    );
  },
);

Deno.test("auth: a SCHEDULER_TOKEN shaped like a JWT is still the scheduler's token", async () => {
  // Any text of 32 characters or more is a valid SCHEDULER_TOKEN; only the
  // project's API keys of JWT shape are left to signature verification.
  const token = "scheduler.token-for-tests.0123456789abcdef";
  const verifier = new TokenVerifier(new Env({ SCHEDULER_TOKEN: token }));
  assert.deepEqual(await verifier.verify(`Bearer ${token}`), { kind: "scheduler" });
  await assert.rejects(verifier.verify(null, token), /not an API key of this project/);
});

sqlTest("auth: a wrong or misplaced key is 401", async () => {
  const hosted = await testRuntime(db, HOSTED);
  const wrong = "sb_secret_secDefault0123456789abcdefgX";
  const refused: Array<[string, { token?: string; headers?: Record<string, string> }]> = [
    ["wrong secret key as bearer", { token: wrong }],
    ["wrong secret key as apikey", { headers: { apikey: wrong } }],
    ["empty apikey", { headers: { apikey: "" } }],
    // The scheduler token and user tokens belong in Authorization, never in apikey.
    ["scheduler token as apikey", { headers: { apikey: keys.schedulerToken } }],
    ["user token as apikey", { headers: { apikey: await keys.userToken(alice) } }],
    // A malformed Authorization is not overlooked for a valid apikey.
    ["Basic auth with a valid apikey", {
      headers: { authorization: "Basic abc", apikey: SECRET },
    }],
    ["wrong bearer with a valid apikey", { token: wrong, headers: { apikey: SECRET } }],
    ["nothing", {}],
  ];
  for (const [label, options] of refused) {
    assert.deepEqual(await callerOf(hosted, options, systemProbe), [401, "unauthorized"], label);
  }
  // A map entry that is a JWT (the CLI's local legacy keys) is checked by signature only.
  const jwtInMap = await testRuntime(db, {
    SUPABASE_SECRET_KEYS: JSON.stringify({ default: keys.serviceKey }),
  });
  assert.deepEqual(await callerOf(jwtInMap, { token: keys.serviceKey }, systemProbe), [
    200,
    "service",
  ]);
  assert.deepEqual(
    await callerOf(jwtInMap, { headers: { apikey: keys.serviceKey } }, systemProbe),
    [401, "unauthorized"],
  );
  for (const bad of ["not json", "[]", "{}", '{"default":""}', '{"default":5}']) {
    assert.throws(
      () => new Env({ SUPABASE_SECRET_KEYS: bad }),
      /malformed "SUPABASE_SECRET_KEYS"/,
      bad,
    );
  }
});

sqlTest(
  "auth: supabase-js functions.invoke with sb_ keys reaches the function as anon and service through the gateway",
  async () => {
    const runtime = await testRuntime(db, HOSTED);
    const seen: Array<{ authorization: boolean; apikey: boolean }> = [];
    const headersProbe = createFunction(
      { name: "get-price-id", access: "public", group: "billing" },
      {
        handle: ({ caller, request }) => {
          seen.push({
            authorization: request.headers.has("authorization"),
            apikey: request.headers.has("apikey"),
          });
          return { caller: caller.kind };
        },
      },
    );
    const gateway = createGateway({
      functions: new Map([
        ["get-price-id", headersProbe],
        ["send-email", systemProbe],
        ["check-subscription", userProbe],
      ]),
      runtime,
      // As config.toml: off where an API key may call, on where only users do.
      verifyJwt: new Map([["get-price-id", false], ["send-email", false], [
        "check-subscription",
        true,
      ]]),
      jwks: keys.jwks,
    });
    const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, gateway);
    try {
      const url = `http://127.0.0.1:${server.addr.port}`;
      const client = (key: string) => createClient(url, key, { auth: { persistSession: false } });

      const anon = await client(PUBLISHABLE).functions.invoke("get-price-id", { body: {} });
      assert.equal(anon.error, null, String(anon.error));
      assert.deepEqual(anon.data, { caller: "anon" });
      // supabase-js sends the key in apikey only, never as a bearer token.
      assert.deepEqual(seen, [{ authorization: false, apikey: true }]);

      const service = await client(SECRET).functions.invoke("send-email", { body: {} });
      assert.equal(service.error, null, String(service.error));
      assert.deepEqual(service.data, { caller: "service" });

      const wrong = await client("sb_secret_secDefault0123456789abcdefgX").functions.invoke(
        "send-email",
        { body: {} },
      );
      assert.ok(wrong.error instanceof FunctionsHttpError);
      assert.equal(wrong.error.context.status, 401);
      assert.equal((await wrong.error.context.json()).error.code, "unauthorized");

      // Where verify_jwt is on, the platform's check refuses an API key before the
      // function runs (https://supabase.com/docs/guides/functions/auth-headers)...
      const gated = await client(PUBLISHABLE).functions.invoke("check-subscription", { body: {} });
      assert.ok(gated.error instanceof FunctionsHttpError);
      assert.equal(gated.error.context.status, 401);
      await gated.error.context.body?.cancel();
      // ...and a signed-in user passes it with the publishable key alongside.
      const signedIn = createClient(url, PUBLISHABLE, {
        auth: { persistSession: false },
        global: { headers: { Authorization: `Bearer ${await keys.userToken(alice)}` } },
      });
      const user = await signedIn.functions.invoke("check-subscription", { body: {} });
      assert.equal(user.error, null, String(user.error));
      assert.deepEqual(user.data, { caller: alice.id });
    } finally {
      await server.shutdown();
    }
  },
);
