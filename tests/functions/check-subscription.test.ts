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
  "check-subscription: finds an unclaimed customer by e-mail, links it and tags it",
  async () => {
    const user = await createUser(db.pool);
    const customer = double.addCustomer({ email: user.email });
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
    assert.equal(double.get("customer", customer.id)?.metadata.user_id, user.id);
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
    assert.equal((await invoke(handler, runtime, { token: keys.anonKey })).status, 401);
    const user = await createUser(db.pool);
    double.failNext({ path: "/v1/customers", status: 500, times: 3 });
    const down = await check(user);
    assert.equal(down.status, 503);
    assert.equal(down.body.error?.code, "upstream_unavailable");
    const { PAYPROC_SECRET_KEY: _, ...env } = payprocEnv(double);
    const none = await check(user, await testRuntime(db, env));
    assert.equal(none.status, 503);
    assert.equal(none.body.error?.code, "not_configured");
  },
);
