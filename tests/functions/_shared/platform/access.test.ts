import assert from "node:assert/strict";
import { exportJWK, generateKeyPair, SignJWT, UnsecuredJWT } from "jose";
import {
  createFunction,
  type EdgeFunction,
} from "../../../../supabase/functions/_shared/platform/function.ts";
import type { Access } from "../../../../shared/access.ts";
import type { FunctionGroup, FunctionName } from "../../../../shared/functions.ts";
import type { Runtime } from "../../../../supabase/functions/_shared/platform/runtime.ts";
import { DealIdInput } from "../../../../shared/schemas.ts";
import { createTestDatabase, sqlTest } from "../../../support/db.ts";
import { createUser } from "../../../support/sql.ts";
import {
  newSigningKey,
  TEST_ISSUER,
  TEST_JWT_SECRET,
  testCredentials,
} from "../../../support/credentials.ts";
import { invoke, testRuntime } from "../../../support/runtime.ts";
import { signUserToken } from "../../../../local/keys.ts";

const db = await createTestDatabase();
const keys = await testCredentials();
const runtime = await testRuntime(db);
const localDev = await testRuntime(db, { LOCAL_DEV: "true" });

/** One probe per access rule, each echoing the caller it was given. */
const echo = (name: FunctionName, access: Exclude<Access, "webhook">, group: FunctionGroup) =>
  createFunction({ name, access, group }, { handle: ({ caller }) => ({ caller: caller.kind }) });
const probes: Record<string, EdgeFunction> = {
  public: echo("get-price-id", "public", "billing"),
  user: echo("check-subscription", "user", "billing"),
  seller: echo("connect-onboarding-link", "seller", "connect"),
  admin: echo("release-deal-payout", "admin", "deals"),
  utility: echo("test-env", "admin", "utilities"),
  scheduled: echo("run-price-alerts", "scheduled", "schedulers"),
  system: echo("send-email", "system", "notifications"),
  "admin, started by the scheduler": createFunction(
    {
      name: "send-admin-listing-notification",
      access: "admin",
      group: "notifications",
      scheduler: true,
    },
    { handle: ({ caller }) => ({ caller: caller.kind }) },
  ),
};
const dealProbe = createFunction({
  name: "create-deal-payment",
  access: "deal-participant",
  group: "deals",
  input: DealIdInput,
}, {
  handle: ({ caller, input }) => ({ caller: caller.id, deal: input.dealId }),
});
const webhookProbe = createFunction({
  name: "payproc-webhook",
  access: "webhook",
  group: "billing",
}, {
  handle: ({ caller, rawBody }) => ({ caller: caller.kind, rawBody }),
});

const alice = await createUser(db.pool);
const bob = await createUser(db.pool);
const carol = await createUser(db.pool);
const admin = await createUser(db.pool, { admin: true });
const tokens = {
  none: undefined,
  anon: keys.anonKey,
  service: keys.serviceKey,
  scheduler: keys.schedulerToken,
  user: await keys.userToken(alice),
  admin: await keys.userToken(admin),
};
type Who = keyof typeof tokens;

async function statusOf(rule: string, who: Who, rt: Runtime = runtime): Promise<number> {
  const res = await invoke(probes[rule]!, rt, { token: tokens[who], body: {} });
  return res.status;
}

/**
 * Expected status per rule and caller (200 = allowed). 401 only for a missing
 * or invalid credential; a valid one without the right (the anon key
 * included) is 403.
 */
const matrix: Record<string, Record<Who, number>> = {
  public: { none: 401, anon: 200, service: 200, scheduler: 403, user: 200, admin: 200 },
  user: { none: 401, anon: 403, service: 403, scheduler: 403, user: 200, admin: 200 },
  // Neither alice nor the admin has a listing or a payout account (see the seller test below).
  seller: { none: 401, anon: 403, service: 403, scheduler: 403, user: 403, admin: 403 },
  admin: { none: 401, anon: 403, service: 403, scheduler: 403, user: 403, admin: 200 },
  utility: { none: 401, anon: 403, service: 403, scheduler: 403, user: 403, admin: 200 },
  scheduled: { none: 401, anon: 403, service: 200, scheduler: 200, user: 403, admin: 200 },
  system: { none: 401, anon: 403, service: 200, scheduler: 403, user: 403, admin: 200 },
  "admin, started by the scheduler": {
    none: 401,
    anon: 403,
    service: 200,
    scheduler: 200,
    user: 403,
    admin: 200,
  },
};

for (const [rule, expected] of Object.entries(matrix)) {
  sqlTest(`access "${rule}": allows and refuses each kind of caller`, async () => {
    const actual: Record<string, number> = {};
    for (const who of Object.keys(expected) as Who[]) actual[who] = await statusOf(rule, who);
    assert.deepEqual(actual, expected);
  });
}

sqlTest(
  "access: with LOCAL_DEV=true the anon key starts scheduled and utility functions, nothing more",
  async () => {
    assert.equal(await statusOf("scheduled", "anon"), 403);
    assert.equal(await statusOf("utility", "anon"), 403);
    assert.equal(await statusOf("scheduled", "anon", localDev), 200);
    assert.equal(await statusOf("utility", "anon", localDev), 200);
    assert.equal(await statusOf("admin", "anon", localDev), 403);
    assert.equal(await statusOf("user", "anon", localDev), 403);
    assert.equal(await statusOf("system", "anon", localDev), 403);
    // An admin function the schedule starts takes the scheduler's
    // credentials, never the anon key, and says which to use.
    const refused = await invoke(probes["admin, started by the scheduler"]!, localDev, {
      token: keys.anonKey,
      body: {},
    });
    assert.equal(refused.status, 403);
    assert.match(
      (refused.body as { error: { message: string } }).error.message,
      /service-role key or SCHEDULER_TOKEN/,
    );
    assert.equal(await statusOf("admin, started by the scheduler", "scheduler", localDev), 200);
  },
);

sqlTest("access: an anonymous sign-in is a session without an account", async () => {
  const token = await new SignJWT({ role: "authenticated", is_anonymous: true })
    .setProtectedHeader({ alg: "HS256" })
    .setSubject(carol.id)
    .setAudience("authenticated")
    .setIssuer(TEST_ISSUER)
    .setExpirationTime("1h")
    .sign(new TextEncoder().encode(TEST_JWT_SECRET));
  assert.equal((await invoke(probes.public!, runtime, { token, body: {} })).status, 200);
  for (const rule of ["user", "seller", "admin", "scheduled", "system"]) {
    const res = await invoke(probes[rule]!, runtime, { token, body: {} });
    assert.equal(res.status, 403, rule);
    assert.equal((res.body as { error: { code: string } }).error.code, "forbidden", rule);
  }
});

sqlTest("access: a token without exp, or from another issuer, is 401", async () => {
  const secret = new TextEncoder().encode(TEST_JWT_SECRET);
  const noExp = await new SignJWT({ role: "authenticated" })
    .setProtectedHeader({ alg: "HS256" })
    .setSubject(alice.id)
    .setAudience("authenticated")
    .setIssuer(TEST_ISSUER)
    .sign(secret);
  const noExpKey = await new SignJWT({ role: "service_role" })
    .setProtectedHeader({ alg: "HS256" })
    .sign(secret);
  const otherIssuer = await signUserToken(keys.signingKey, {
    sub: alice.id,
    email: alice.email,
    issuer: "https://other-project.supabase.co/auth/v1",
  });
  for (const [label, token] of Object.entries({ noExp, noExpKey, otherIssuer })) {
    const res = await invoke(probes.public!, runtime, { token, body: {} });
    assert.equal(res.status, 401, label);
  }
  const res = await invoke(probes.public!, runtime, { token: noExp, body: {} });
  assert.match((res.body as { error: { message: string } }).error.message, /no expiry/);
});

sqlTest("access: a refused caller gets the documented error body", async () => {
  const res = await invoke(probes.admin!, runtime, { token: tokens.user, body: {} });
  assert.deepEqual(res.body, {
    error: { code: "forbidden", message: "This function is for admins" },
  });
  const none = await invoke(probes.user!, runtime, { body: {} });
  assert.equal((none.body as { error: { code: string } }).error.code, "unauthorized");
});

sqlTest("access: HS256 user tokens (older projects) are verified with the JWT secret", async () => {
  const res = await invoke(probes.user!, runtime, {
    token: await keys.hsUserToken(alice),
    body: {},
  });
  assert.deepEqual([res.status, res.body], [200, { caller: "user" }]);
});

sqlTest("access: expired, wrongly signed, unsigned and malformed tokens are 401", async () => {
  const expired = await keys.userToken(alice, -60);
  const otherKey = await newSigningKey();
  const foreign = await signUserToken(otherKey, { sub: alice.id, email: alice.email, issuer: "x" });
  const sameKidForeign = await signUserToken({
    ...otherKey,
    kid: keys.signingKey.kid,
    privateJwk: { ...otherKey.privateJwk, kid: keys.signingKey.kid },
  }, {
    sub: alice.id,
    email: alice.email,
    issuer: "x",
  });
  const wrongSecret = await new SignJWT({ role: "service_role" })
    .setProtectedHeader({ alg: "HS256" })
    .sign(new TextEncoder().encode("another-secret-that-is-also-32-characters-long"));
  const unsigned = new UnsecuredJWT({ role: "service_role" }).encode();
  const { privateKey, publicKey } = await generateKeyPair("RS256");
  void (await exportJWK(publicKey));
  const rsUnknown = await new SignJWT({
    role: "authenticated",
    sub: alice.id,
    aud: "authenticated",
  })
    .setProtectedHeader({ alg: "RS256", kid: "unknown" })
    .setExpirationTime("1h")
    .sign(privateKey);
  const noSub = await new SignJWT({ role: "authenticated", aud: "authenticated" })
    .setProtectedHeader({ alg: "HS256" })
    .setExpirationTime("1h")
    .sign(new TextEncoder().encode("test-jwt-secret-that-is-at-least-32-characters"));
  const cases: Record<string, string> = {
    expired,
    foreign,
    sameKidForeign,
    wrongSecret,
    unsigned,
    rsUnknown,
    noSub,
    garbage: "not-a-token",
    truncated: tokens.user.slice(0, -5),
  };
  for (const [label, token] of Object.entries(cases)) {
    const res = await invoke(probes.public!, runtime, { token, body: {} });
    assert.equal(res.status, 401, label);
    assert.equal((res.body as { error: { code: string } }).error.code, "unauthorized", label);
  }
  const expiredRes = await invoke(probes.user!, runtime, { token: expired, body: {} });
  assert.match((expiredRes.body as { error: { message: string } }).error.message, /expired/);
  const basic = await invoke(probes.public!, runtime, {
    headers: { authorization: "Basic abc" },
    body: {},
  });
  assert.equal(basic.status, 401);
});

sqlTest("access: opaque project keys and the scheduler token compare exactly", async () => {
  const opaque = await testRuntime(db, {
    SUPABASE_SERVICE_ROLE_KEY: "sb_secret_abcdefghijklmnopqrstuvwxyz",
    SUPABASE_ANON_KEY: "sb_publishable_abcdefghijklmnopqrstuvwxyz",
  });
  const service = await invoke(probes.system!, opaque, {
    token: "sb_secret_abcdefghijklmnopqrstuvwxyz",
    body: {},
  });
  assert.deepEqual([service.status, service.body], [200, { caller: "service" }]);
  const anon = await invoke(probes.public!, opaque, {
    token: "sb_publishable_abcdefghijklmnopqrstuvwxyz",
    body: {},
  });
  assert.deepEqual([anon.status, anon.body], [200, { caller: "anon" }]);
  const near = await invoke(probes.scheduled!, opaque, {
    token: keys.schedulerToken + "x",
    body: {},
  });
  assert.equal(near.status, 401);
});

/** A deal pending payment: alice buys bob's listing. */
async function aliceBuysFromBob(): Promise<{ id: string }> {
  const { rows: [listing] } = await db.pool.query(
    `insert into public.listings (seller_id, title, category, asking_price, currency)
     values ($1, 'Deal probe', 'saas', 1000, 'USD') returning id`,
    [bob.id],
  );
  const { rows: [deal] } = await db.pool.query(
    `insert into public.deals (listing_id, buyer_id, seller_id, amount, currency)
     values ($1, $2, $3, 1000, 'USD') returning id`,
    [listing.id, alice.id, bob.id],
  );
  return deal;
}

sqlTest(
  'access "deal-participant": buyer and seller pass; others 403; unknown deal 404',
  async () => {
    const deal = await aliceBuysFromBob();
    const as = async (user: { id: string; email: string }, dealId: unknown) =>
      await invoke(dealProbe, runtime, { token: await keys.userToken(user), body: { dealId } });
    assert.equal((await as(alice, deal.id)).status, 200);
    assert.deepEqual((await as(bob, deal.id)).body, { caller: bob.id, deal: deal.id });
    assert.equal((await as(carol, deal.id)).status, 403);
    const missing = await as(alice, crypto.randomUUID());
    assert.deepEqual([missing.status, (missing.body as { error: { code: string } }).error.code], [
      404,
      "not_found",
    ]);
    const bad = await as(alice, "nope");
    assert.deepEqual([bad.status, (bad.body as { error: { code: string } }).error.code], [
      400,
      "invalid_input",
    ]);
    const anon = await invoke(dealProbe, runtime, {
      token: keys.anonKey,
      body: { dealId: deal.id },
    });
    assert.equal(anon.status, 403);
  },
);

sqlTest(
  'access "deal-participant-or-admin": buyer, seller and admins pass; others 403; unknown deal 404',
  async () => {
    const reader = createFunction({
      name: "payment-status",
      access: "deal-participant-or-admin",
      group: "deals",
      input: DealIdInput,
    }, {
      handle: ({ caller, input }) => ({ caller: caller.id, deal: input.dealId }),
    });
    const deal = await aliceBuysFromBob();
    const as = async (token: string, dealId: string) =>
      await invoke(reader, runtime, { token, body: { dealId } });
    assert.equal((await as(tokens.user, deal.id)).status, 200);
    assert.equal((await as(await keys.userToken(bob), deal.id)).status, 200);
    assert.deepEqual((await as(tokens.admin, deal.id)).body, { caller: admin.id, deal: deal.id });
    const other = await as(await keys.userToken(carol), deal.id);
    assert.equal(other.status, 403);
    assert.match((other.body as { error: { message: string } }).error.message, /admins/);
    assert.equal((await as(tokens.admin, crypto.randomUUID())).status, 404);
    assert.equal((await as(keys.serviceKey, deal.id)).status, 403);
    // The plain deal-participant rule still refuses an admin.
    assert.equal(
      (await invoke(dealProbe, runtime, { token: tokens.admin, body: { dealId: deal.id } })).status,
      403,
    );
  },
);

sqlTest(
  'access "seller": a user with a listing or a payout account passes; others 403 with details.next',
  async () => {
    const lister = await createUser(db.pool);
    const onboarded = await createUser(db.pool);
    const newcomer = await createUser(db.pool);
    await db.pool.query(
      `insert into public.listings (seller_id, title, category, asking_price, currency)
       values ($1, 'Seller probe', 'saas', 1000, 'USD')`,
      [lister.id],
    );
    await db.pool.query(
      "insert into public.connect_accounts (user_id, payproc_account_id) values ($1, $2)",
      [onboarded.id, `acct_probe_${onboarded.id.slice(0, 8)}`],
    );
    const as = async (user: { id: string; email: string }) =>
      await invoke(probes.seller!, runtime, { token: await keys.userToken(user), body: {} });
    assert.deepEqual((await as(lister)).body, { caller: "user" });
    assert.deepEqual((await as(onboarded)).body, { caller: "user" });
    const refused = await as(newcomer);
    assert.equal(refused.status, 403);
    const error = (refused.body as {
      error: { code: string; message: string; details: { next: string } };
    }).error;
    assert.equal(error.code, "forbidden");
    assert.deepEqual(error.details, { next: "connect-onboarding-link" });
    assert.match(error.message, /connect-onboarding-link/);
    // Only the seller rule asks: the same user passes a user function.
    const user = await invoke(probes.user!, runtime, {
      token: await keys.userToken(newcomer),
      body: {},
    });
    assert.equal(user.status, 200);
  },
);

sqlTest('access "webhook": needs no token and hands the raw body to the handler', async () => {
  const res = await invoke(webhookProbe, runtime, { rawBody: '{"id":"evt_1"}' });
  assert.deepEqual([res.status, res.body], [200, { caller: "none", rawBody: '{"id":"evt_1"}' }]);
});
