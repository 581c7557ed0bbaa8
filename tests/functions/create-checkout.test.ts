import assert from "node:assert/strict";
import handler from "../../supabase/functions/create-checkout/handler.ts";
import { billingSetup, countRows, payprocEnv, subscriptionOf } from "../support/billing.ts";
import { sqlTest } from "../support/db.ts";
import { assertRateLimited } from "../support/rate_limits.ts";
import { invoke, testRuntime } from "../support/runtime.ts";
import { createUser, type TestUser } from "../support/sql.ts";

const setup = await billingSetup({ ALLOWED_REDIRECT_ORIGINS: "https://app.example.test" });
const { db, double, runtime, keys, prices } = setup;

interface Answer {
  url?: string;
  error?: { code: string; message: string; details?: unknown };
}

async function checkout(user: TestUser, body: Record<string, unknown>, rt = runtime) {
  return await invoke<Answer>(handler, rt, { token: await keys.userToken(user), body });
}

function sessionsOf(customer: string) {
  return double.all("checkout.session").filter((s) => s.customer === customer);
}

/** The path of creating a checkout session (not of expiring one). */
const CREATE_SESSION = /^\/v1\/checkout\/sessions$/;

/** Sessions created at the processor so far (creation requests replayed by idempotency not counted). */
const sessionCount = () => double.createdCount("checkout.session");

/** The user's stored subscription checkout, or undefined. */
async function storedCheckoutOf(userId: string) {
  const { rows } = await db.pool.query(
    `select payproc_session_id, price_id, url, expires_at
     from public.subscription_checkouts where user_id = $1`,
    [userId],
  );
  return rows[0] as
    | { payproc_session_id: string; price_id: string; url: string; expires_at: Date }
    | undefined;
}

/** The session id of a hosted checkout url. */
const sessionIdOf = (url: string | undefined) => url?.split("/").at(-1) ?? "";

/** Lets a session run out at the processor, as its 24 hours passing would. */
function expireAtProcessor(sessionId: string) {
  const session = double.store.require("checkout.session", sessionId);
  session.status = "expired";
  session.url = null;
}

sqlTest(
  "create-checkout: a subscription session for our price, the user's new customer and default redirects",
  async () => {
    const user = await createUser(db.pool);
    const res = await checkout(user, { priceId: prices.starter_monthly.id });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.ok(res.body.url?.startsWith(`${double.url}/checkout/`));

    const row = await subscriptionOf(db.pool, user.id);
    assert.ok(row?.payproc_customer_id);
    assert.equal(row?.subscription_level, "free");
    const customer = double.get("customer", row!.payproc_customer_id!)!;
    assert.equal(customer.email, user.email);
    assert.equal(customer.metadata.user_id, user.id);

    const [session] = sessionsOf(customer.id);
    assert.equal(session?.mode, "subscription");
    assert.equal(session?.client_reference_id, user.id);
    assert.equal(
      session?.success_url,
      "http://localhost:5173/subscription/success?session_id={CHECKOUT_SESSION_ID}",
    );
    assert.equal(session?.cancel_url, "http://localhost:5173/pricing");
    const creates = double.requestsTo("POST", "/v1/checkout/sessions");
    assert.ok(creates.at(-1)?.headers.get("idempotency-key")?.startsWith(`checkout:${user.id}:`));
    const customerCreate = double.requestsTo("POST", "/v1/customers").at(-1);
    assert.equal(customerCreate?.headers.get("idempotency-key"), `customer:${user.id}`);
  },
);

sqlTest("create-checkout: a second checkout reuses the stored customer", async () => {
  const user = await createUser(db.pool);
  await checkout(user, { priceId: prices.starter_monthly.id });
  const customers = double.createdCount("customer");
  const res = await checkout(user, {
    priceId: prices.pro_monthly.id,
    successUrl: "https://app.example.test/done",
  });
  assert.equal(res.status, 200);
  assert.equal(double.createdCount("customer"), customers);
  const row = await subscriptionOf(db.pool, user.id);
  assert.equal(sessionsOf(row!.payproc_customer_id!).length, 2);
});

sqlTest("create-checkout: two concurrent checkouts create one customer", async () => {
  const user = await createUser(db.pool);
  const before = double.createdCount("customer");
  const answers = await Promise.all([
    checkout(user, { priceId: prices.starter_monthly.id }),
    checkout(user, { priceId: prices.starter_monthly.id }),
  ]);
  assert.deepEqual(answers.map((a) => a.status), [200, 200]);
  assert.equal(double.createdCount("customer"), before + 1);
  const row = await subscriptionOf(db.pool, user.id);
  assert.equal(double.all("customer").filter((c) => c.metadata.user_id === user.id).length, 1);
  assert.ok(row?.payproc_customer_id);
});

sqlTest(
  "create-checkout: never takes over a customer found only by e-mail; creates the user's own",
  async () => {
    const user = await createUser(db.pool, { confirmed: true });
    const unclaimed = double.addCustomer({ email: user.email });
    const res = await checkout(user, { priceId: prices.starter_monthly.id });
    assert.equal(res.status, 200);
    const row = await subscriptionOf(db.pool, user.id);
    assert.ok(row?.payproc_customer_id);
    assert.notEqual(row?.payproc_customer_id, unclaimed.id);
    assert.equal(double.get("customer", unclaimed.id)?.metadata.user_id, undefined);
    assert.equal(double.get("customer", row!.payproc_customer_id!)?.metadata.user_id, user.id);
  },
);

sqlTest(
  "create-checkout: a price that is not one of our plans answers 400 and writes nothing",
  async () => {
    const user = await createUser(db.pool);
    const foreign = double.addPrice({ unitAmount: 100, interval: "month" });
    const customers = double.createdCount("customer");
    for (const priceId of [foreign.id, "price_does_not_exist"]) {
      const res = await checkout(user, { priceId });
      assert.equal(res.status, 400);
      assert.equal(res.body.error?.code, "invalid_input");
      assert.match(res.body.error?.message ?? "", /not one of our plans/);
    }
    assert.equal(double.createdCount("customer"), customers);
    assert.equal(await subscriptionOf(db.pool, user.id), null);
  },
);

sqlTest(
  "create-checkout: redirects outside SITE_URL and ALLOWED_REDIRECT_ORIGINS answer 400 (no open redirect)",
  async () => {
    const user = await createUser(db.pool);
    const sessions = double.createdCount("checkout.session");
    for (
      const body of [
        { successUrl: "https://evil.example/phish" },
        { cancelUrl: "https://app.example.test.evil.example/x" },
        { successUrl: "javascript:alert(1)" },
        { successUrl: "http://localhost:5174/wrong-port" },
      ]
    ) {
      const res = await checkout(user, { priceId: prices.starter_monthly.id, ...body });
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.equal(res.body.error?.code, "invalid_input");
    }
    assert.equal(double.createdCount("checkout.session"), sessions);
    assert.equal(await subscriptionOf(db.pool, user.id), null);

    const ok = await checkout(user, {
      priceId: prices.starter_monthly.id,
      successUrl: "https://app.example.test/thanks",
      cancelUrl: "http://localhost:5173/back",
    });
    assert.equal(ok.status, 200);
  },
);

sqlTest("create-checkout: an active paid subscriber gets 409 pointing to the portal", async () => {
  const user = await createUser(db.pool);
  await checkout(user, { priceId: prices.starter_monthly.id });
  const customer = (await subscriptionOf(db.pool, user.id))!.payproc_customer_id!;
  const subscription = double.addSubscription({ customer, lookupKey: "starter_monthly" });
  const sessions = double.createdCount("checkout.session");

  // Not mirrored yet (webhook lag): found at the processor, mirrored, refused.
  const res = await checkout(user, { priceId: prices.pro_monthly.id });
  assert.equal(res.status, 409);
  assert.equal(res.body.error?.code, "conflict");
  assert.deepEqual(res.body.error?.details, { portal: "customer-portal" });
  assert.equal((await subscriptionOf(db.pool, user.id))?.payproc_subscription_id, subscription.id);

  // Mirrored: refused before any processor write.
  const again = await checkout(user, { priceId: prices.pro_monthly.id });
  assert.equal(again.status, 409);
  assert.equal(double.createdCount("checkout.session"), sessions);
});

sqlTest("create-checkout: a canceled subscriber may check out again", async () => {
  const user = await createUser(db.pool);
  await checkout(user, { priceId: prices.starter_monthly.id });
  const customer = (await subscriptionOf(db.pool, user.id))!.payproc_customer_id!;
  double.addSubscription({ customer, lookupKey: "starter_monthly", status: "canceled" });
  const res = await checkout(user, { priceId: prices.starter_monthly.id });
  assert.equal(res.status, 200);
});

sqlTest("create-checkout: signed-in users only; invalid bodies answer 400", async () => {
  const anon = await invoke<Answer>(handler, runtime, {
    token: keys.anonKey,
    body: { priceId: prices.starter_monthly.id },
  });
  assert.equal(anon.status, 403);
  assert.equal((await invoke<Answer>(handler, runtime, { body: {} })).status, 401);
  const user = await createUser(db.pool);
  const bad = await checkout(user, { priceId: "" });
  assert.equal(bad.status, 400);
  assert.equal(bad.body.error?.code, "invalid_input");
});

sqlTest(
  "create-checkout: processor failures answer 503 upstream_unavailable; no key answers 503 not_configured",
  async () => {
    const user = await createUser(db.pool);
    await checkout(user, { priceId: prices.starter_monthly.id }); // prices cached, customer stored
    // Another price: the open session is not answered again, a new one is created.
    double.failNext({ method: "POST", path: CREATE_SESSION, status: 500, times: 3 });
    const res = await checkout(user, { priceId: prices.pro_monthly.id });
    assert.equal(res.status, 503);
    assert.equal(res.body.error?.code, "upstream_unavailable");

    const fast = await testRuntime(db, { ...payprocEnv(double), PAYPROC_TIMEOUT_MS: "200" });
    const slowUser = await createUser(db.pool);
    double.failNext({ path: "/v1/", delayMs: Infinity, times: 3 });
    const slow = await checkout(slowUser, { priceId: prices.starter_monthly.id }, fast);
    assert.equal(slow.status, 503);
    assert.equal(slow.body.error?.code, "upstream_unavailable");
    assert.equal(
      await countRows(db.pool, "public.subscriptions", "user_id = $1", [slowUser.id]),
      0,
    );

    const { PAYPROC_SECRET_KEY: _, ...env } = payprocEnv(double);
    const none = await checkout(
      user,
      { priceId: prices.starter_monthly.id },
      await testRuntime(db, env),
    );
    assert.equal(none.status, 503);
    assert.equal(none.body.error?.code, "not_configured");
  },
);

sqlTest(
  "create-checkout: at most 10 calls a minute per user; the 11th answers 429 before any processor request",
  async () => {
    const user = await createUser(db.pool);
    await assertRateLimited(
      { limit: 10, windowSeconds: 60 },
      () => checkout(user, { priceId: prices.starter_monthly.id }),
      () => double.requests.length,
    );
    const other = await createUser(db.pool);
    assert.equal((await checkout(other, { priceId: prices.starter_monthly.id })).status, 200);
  },
);

sqlTest(
  "create-checkout: 10 calls with 10 different successUrls make one session and answer its url",
  async () => {
    const user = await createUser(db.pool);
    const creates = double.requestsTo("POST", CREATE_SESSION).length;
    const urls: string[] = [];
    for (let i = 0; i < 10; i++) {
      const res = await checkout(user, {
        priceId: prices.starter_monthly.id,
        successUrl: `https://app.example.test/thanks/${i}`,
      });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      urls.push(res.body.url!);
    }
    assert.equal(double.requestsTo("POST", CREATE_SESSION).length, creates + 1);
    assert.equal(new Set(urls).size, 1);
    const id = sessionIdOf(urls[0]);
    // The first call's redirects apply for the session's lifetime.
    assert.equal(
      double.get("checkout.session", id)?.success_url,
      "https://app.example.test/thanks/0",
    );
    const stored = await storedCheckoutOf(user.id);
    assert.equal(stored?.payproc_session_id, id);
    assert.equal(stored?.price_id, prices.starter_monthly.id);
    assert.equal(stored?.url, urls[0]);
    assert.equal(
      stored?.expires_at.getTime(),
      double.get("checkout.session", id)!.expires_at * 1000,
    );
    const key = double.requestsTo("POST", CREATE_SESSION).at(-1)?.headers.get("idempotency-key");
    assert.match(
      key ?? "",
      new RegExp(`^checkout:${user.id}:${prices.starter_monthly.id}:[0-9a-f]{24}:first$`),
    );
  },
);

sqlTest("create-checkout: 10 concurrent first calls make one session", async () => {
  const user = await createUser(db.pool);
  const sessions = sessionCount();
  const answers = await Promise.all(
    Array.from({ length: 10 }, () => checkout(user, { priceId: prices.starter_monthly.id })),
  );
  assert.deepEqual(answers.map((a) => a.status), Array(10).fill(200));
  assert.equal(new Set(answers.map((a) => a.body.url)).size, 1);
  assert.equal(sessionCount(), sessions + 1);
  assert.equal((await storedCheckoutOf(user.id))?.url, answers[0]!.body.url);
});

sqlTest(
  "create-checkout: concurrent first calls with different redirects leave one open session; the others answer 409 changed_meanwhile",
  async () => {
    const user = await createUser(db.pool);
    const answers = await Promise.all(
      Array.from({ length: 5 }, (_, i) =>
        checkout(user, {
          priceId: prices.starter_monthly.id,
          successUrl: `https://app.example.test/race/${i}`,
        })),
    );
    const stored = await storedCheckoutOf(user.id);
    assert.ok(stored);
    for (const answer of answers) {
      if (answer.status === 200) {
        assert.equal(answer.body.url, stored.url);
      } else {
        assert.equal(answer.status, 409, JSON.stringify(answer.body));
        assert.equal(answer.body.error?.code, "conflict");
        assert.deepEqual(answer.body.error?.details, { reason: "changed_meanwhile" });
      }
    }
    assert.ok(answers.some((a) => a.status === 200));
    const customer = (await subscriptionOf(db.pool, user.id))!.payproc_customer_id!;
    const open = sessionsOf(customer).filter((s) => s.status === "open");
    assert.deepEqual(open.map((s) => s.id), [stored.payproc_session_id]);
  },
);

sqlTest(
  "create-checkout: once the session expired at the processor, the next call makes a new one",
  async () => {
    const user = await createUser(db.pool);
    const first = await checkout(user, { priceId: prices.starter_monthly.id });
    const firstId = sessionIdOf(first.body.url);
    expireAtProcessor(firstId);
    const sessions = sessionCount();

    const next = await checkout(user, { priceId: prices.starter_monthly.id });
    assert.equal(next.status, 200, JSON.stringify(next.body));
    assert.notEqual(next.body.url, first.body.url);
    assert.equal(sessionCount(), sessions + 1);
    const stored = await storedCheckoutOf(user.id);
    assert.equal(stored?.payproc_session_id, sessionIdOf(next.body.url));
    const key = double.requestsTo("POST", CREATE_SESSION).at(-1)?.headers.get("idempotency-key");
    assert.ok(key?.endsWith(`:${firstId}`), key ?? "");
  },
);

sqlTest(
  "create-checkout: another price expires the open session at the processor first, then stores the new one",
  async () => {
    const user = await createUser(db.pool);
    const first = await checkout(user, { priceId: prices.starter_monthly.id });
    const firstId = sessionIdOf(first.body.url);
    const before = double.requests.length;

    const pro = await checkout(user, { priceId: prices.pro_monthly.id });
    assert.equal(pro.status, 200, JSON.stringify(pro.body));
    assert.notEqual(pro.body.url, first.body.url);
    assert.equal(double.get("checkout.session", firstId)?.status, "expired");
    const made = double.requests.slice(before);
    const expired = made.findIndex((r) =>
      r.method === "POST" && r.path === `/v1/checkout/sessions/${firstId}/expire`
    );
    const created = made.findIndex((r) => r.method === "POST" && CREATE_SESSION.test(r.path));
    assert.ok(expired >= 0 && expired < created, "expired before the new one was created");
    const stored = await storedCheckoutOf(user.id);
    assert.equal(stored?.payproc_session_id, sessionIdOf(pro.body.url));
    assert.equal(stored?.price_id, prices.pro_monthly.id);
    assert.equal(double.get("checkout.session", stored!.payproc_session_id)?.status, "open");
  },
);

sqlTest(
  "create-checkout: a session with 10 minutes or less left is replaced, not answered",
  async () => {
    const user = await createUser(db.pool);
    const first = await checkout(user, { priceId: prices.starter_monthly.id });
    await db.pool.query(
      `update public.subscription_checkouts set expires_at = now() + interval '9 minutes'
       where user_id = $1`,
      [user.id],
    );
    const next = await checkout(user, { priceId: prices.starter_monthly.id });
    assert.equal(next.status, 200);
    assert.notEqual(next.body.url, first.body.url);
    assert.equal(double.get("checkout.session", sessionIdOf(first.body.url))?.status, "expired");
    assert.equal((await storedCheckoutOf(user.id))?.url, next.body.url);
  },
);

sqlTest(
  "create-checkout: a completed stored session answers 409 to a paying user, a new session to one who no longer pays",
  async () => {
    const paying = await createUser(db.pool);
    const first = await checkout(paying, { priceId: prices.starter_monthly.id });
    double.completeCheckout(sessionIdOf(first.body.url));
    const sessions = sessionCount();
    const res = await checkout(paying, { priceId: prices.starter_monthly.id });
    assert.equal(res.status, 409);
    assert.deepEqual(res.body.error?.details, { portal: "customer-portal" });
    assert.equal(sessionCount(), sessions);

    const lapsed = await createUser(db.pool);
    const earlier = await checkout(lapsed, { priceId: prices.starter_monthly.id });
    const { subscription } = double.completeCheckout(sessionIdOf(earlier.body.url));
    double.updateSubscription(subscription!.id, { status: "canceled" });
    const again = await checkout(lapsed, { priceId: prices.starter_monthly.id });
    assert.equal(again.status, 200, JSON.stringify(again.body));
    assert.notEqual(again.body.url, earlier.body.url);
    assert.equal((await storedCheckoutOf(lapsed.id))?.url, again.body.url);
  },
);

sqlTest(
  "create-checkout: a session completed while it was being expired answers 409 pointing to the portal",
  async () => {
    const user = await createUser(db.pool);
    const first = await checkout(user, { priceId: prices.starter_monthly.id });
    const firstId = sessionIdOf(first.body.url);
    const hold = double.holdNext({
      method: "POST",
      path: `/v1/checkout/sessions/${firstId}/expire`,
    });
    const sessions = sessionCount();

    const pending = checkout(user, { priceId: prices.pro_monthly.id });
    await hold.reached;
    double.completeCheckout(firstId); // the user paid in the other tab meanwhile
    hold.release();
    const res = await pending;
    assert.equal(res.status, 409, JSON.stringify(res.body));
    assert.deepEqual(res.body.error?.details, { portal: "customer-portal" });
    assert.equal(sessionCount(), sessions);
    assert.equal((await storedCheckoutOf(user.id))?.payproc_session_id, firstId);
  },
);
