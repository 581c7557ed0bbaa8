import assert from "node:assert/strict";
import handler from "../../supabase/functions/check-subscription/handler.ts";
import { billingSetup, payprocEnv, subscriptionOf } from "../support/billing.ts";
import { sqlTest } from "../support/db.ts";
import { invoke, testRuntime } from "../support/runtime.ts";
import { createUser, type TestUser } from "../support/sql.ts";

const { db, double, runtime, keys } = await billingSetup();

interface Answer {
  subscribed: boolean;
  subscription_level: string;
  subscription_status: string | null;
  subscription_end: string | null;
  error?: { code: string };
}

async function check(user: TestUser, rt = runtime) {
  return await invoke<Answer>(handler, rt, { token: await keys.userToken(user) });
}

sqlTest("check-subscription: a user with nothing at the processor is free", async () => {
  const user = await createUser(db.pool);
  const res = await check(user);
  assert.equal(res.status, 200);
  assert.deepEqual(res.body, {
    subscribed: false,
    subscription_level: "free",
    subscription_status: null,
    subscription_end: null,
  });
  assert.equal(await subscriptionOf(db.pool, user.id), null);
});

sqlTest("check-subscription: reconciles through the stored customer", async () => {
  const user = await createUser(db.pool);
  const customer = double.addCustomer({ email: "other-address@example.test" });
  await db.pool.query(
    "insert into public.subscriptions (user_id, payproc_customer_id) values ($1, $2)",
    [user.id, customer.id],
  );
  const subscription = double.addSubscription({ customer: customer.id, lookupKey: "pro_yearly" });
  const res = await check(user);
  const end = new Date(subscription.items.data[0]!.current_period_end * 1000).toISOString();
  assert.deepEqual(res.body, {
    subscribed: true,
    subscription_level: "pro",
    subscription_status: "active",
    subscription_end: end,
  });
});

sqlTest(
  "check-subscription: finds a customer carrying our user id, links it and mirrors its best subscription",
  async () => {
    const user = await createUser(db.pool);
    const customer = double.addCustomer({
      email: "elsewhere@example.test",
      metadata: { user_id: user.id },
    });
    double.addSubscription({
      customer: customer.id,
      lookupKey: "starter_monthly",
      status: "canceled",
    });
    double.addSubscription({
      customer: customer.id,
      lookupKey: "starter_monthly",
      status: "trialing",
    });
    const res = await check(user);
    assert.equal(res.body.subscribed, true);
    assert.equal(res.body.subscription_status, "trialing");
    assert.equal((await subscriptionOf(db.pool, user.id))?.payproc_customer_id, customer.id);
  },
);

sqlTest(
  "check-subscription: never takes over a customer found only by e-mail, confirmed or not",
  async () => {
    for (const confirmed of [false, true]) {
      const user = await createUser(db.pool, { confirmed });
      const customer = double.addCustomer({ email: user.email });
      double.addSubscription({ customer: customer.id, lookupKey: "pro_monthly" });
      const res = await check(user);
      assert.equal(res.body.subscribed, false, `confirmed: ${confirmed}`);
      assert.equal(await subscriptionOf(db.pool, user.id), null);
      assert.equal(double.get("customer", customer.id)?.metadata.user_id, undefined);
    }
  },
);

sqlTest(
  "check-subscription: never links a customer found by e-mail whose metadata names another user",
  async () => {
    const user = await createUser(db.pool);
    const owner = await createUser(db.pool);
    const customer = double.addCustomer({ email: user.email, metadata: { user_id: owner.id } });
    double.addSubscription({ customer: customer.id, lookupKey: "pro_monthly" });
    const res = await check(user);
    assert.equal(res.body.subscribed, false);
    assert.equal(await subscriptionOf(db.pool, user.id), null);
  },
);

sqlTest("check-subscription: a canceled subscription reports free with its status", async () => {
  const user = await createUser(db.pool);
  const customer = double.addCustomer({ email: user.email, metadata: { user_id: user.id } });
  const subscription = double.addSubscription({ customer: customer.id, lookupKey: "pro_monthly" });
  assert.equal((await check(user)).body.subscribed, true);
  double.updateSubscription(subscription.id, { status: "canceled" });
  const res = await check(user);
  assert.equal(res.body.subscribed, false);
  assert.equal(res.body.subscription_level, "free");
  assert.equal(res.body.subscription_status, "canceled");
});

sqlTest("check-subscription: an expired grant is turned back to free", async () => {
  const user = await createUser(db.pool);
  await db.pool.query(
    `insert into public.subscriptions (user_id, subscription_level, source, current_period_start, current_period_end)
     values ($1, 'starter', 'grant', now() - interval '10 days', now() - interval '1 day')`,
    [user.id],
  );
  const res = await check(user);
  assert.equal(res.body.subscribed, false);
  const row = await subscriptionOf(db.pool, user.id);
  assert.equal(row?.subscription_level, "free");
  assert.equal(row?.subscription_status, "canceled");
});

sqlTest(
  "check-subscription: signed-in only; processor down → 503; no key → 503 not_configured",
  async () => {
    assert.equal((await invoke(handler, runtime)).status, 401);
    assert.equal((await invoke(handler, runtime, { token: keys.anonKey })).status, 403);
    const user = await createUser(db.pool);
    double.failNext({ path: "/v1/customers/search", status: 500, times: 3 });
    const down = await check(user);
    assert.equal(down.status, 503);
    assert.equal(down.body.error?.code, "upstream_unavailable");
    const { PAYPROC_SECRET_KEY: _, ...env } = payprocEnv(double);
    const none = await check(user, await testRuntime(db, env));
    assert.equal(none.status, 503);
    assert.equal(none.body.error?.code, "not_configured");
  },
);

sqlTest(
  "check-subscription: at most 10 calls a minute per user, then 429 with Retry-After",
  async () => {
    const user = await createUser(db.pool);
    const other = await createUser(db.pool);
    const token = await keys.userToken(user);
    const statuses = await Promise.all(
      Array.from({ length: 12 }, async () => (await invoke(handler, runtime, { token })).status),
    );
    assert.deepEqual(statuses.filter((s) => s === 200).length, 10);
    assert.deepEqual(statuses.filter((s) => s === 429).length, 2);
    const refused = await invoke<{ error: { code: string } }>(handler, runtime, { token });
    assert.equal(refused.body.error.code, "rate_limited");
    assert.ok(Number(refused.headers.get("retry-after")) >= 1);
    assert.equal((await check(other)).status, 200);
  },
);

sqlTest(
  "check-subscription: a processor that does not answer gives 503 upstream_unavailable within the timeout",
  async () => {
    const fast = await testRuntime(db, { ...payprocEnv(double), PAYPROC_TIMEOUT_MS: "200" });
    try {
      const user = await createUser(db.pool);
      double.addCustomer({ metadata: { user_id: user.id } });
      double.failNext({ path: "/v1/customers/search", delayMs: Infinity, times: 2 });
      const started = performance.now();
      const res = await check(user, fast);
      assert.equal(res.status, 503);
      assert.equal(res.body.error?.code, "upstream_unavailable");
      assert.ok(performance.now() - started < 5_000, "two attempts of 200 ms, not a hang");
      assert.equal(await subscriptionOf(db.pool, user.id), null);
    } finally {
      await fast.close();
    }
  },
);
