import assert from "node:assert/strict";
import handler from "../../supabase/functions/create-checkout/handler.ts";
import { billingSetup, countRows, payprocEnv, subscriptionOf } from "../support/billing.ts";
import { sqlTest } from "../support/db.ts";
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
    double.failNext({ method: "POST", path: "/v1/checkout/sessions", status: 500, times: 3 });
    const res = await checkout(user, { priceId: prices.starter_monthly.id });
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
