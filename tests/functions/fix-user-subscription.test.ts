import assert from "node:assert/strict";
import handler from "../../supabase/functions/fix-user-subscription/handler.ts";
import { billingSetup, payprocEnv, subscriptionOf } from "../support/billing.ts";
import { sqlTest } from "../support/db.ts";
import { invoke, testRuntime } from "../support/runtime.ts";
import { createUser } from "../support/sql.ts";

const { db, double, runtime, keys } = await billingSetup();
const admin = await createUser(db.pool, { admin: true });

interface Answer {
  userId: string;
  customerId: string | null;
  customerFoundBy: string | null;
  subscriptionId: string | null;
  actions: string[];
  changed: string[];
  before: Record<string, unknown> | null;
  after: Record<string, unknown> | null;
  error?: { code: string };
}

async function repair(body: Record<string, unknown>, rt = runtime) {
  return await invoke<Answer>(handler, rt, { token: await keys.userToken(admin), body });
}

sqlTest(
  "fix-user-subscription: links an unclaimed customer found by a confirmed e-mail, tags it and mirrors its subscription",
  async () => {
    const user = await createUser(db.pool, { confirmed: true });
    const customer = double.addCustomer({ email: user.email });
    const subscription = double.addSubscription({
      customer: customer.id,
      lookupKey: "pro_monthly",
    });
    const res = await repair({ email: user.email });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.userId, user.id);
    assert.equal(res.body.customerId, customer.id);
    assert.equal(res.body.customerFoundBy, "email");
    assert.equal(res.body.subscriptionId, subscription.id);
    assert.deepEqual(res.body.actions, [
      "linked_customer",
      "tagged_customer",
      "synced_subscription",
    ]);
    assert.equal(res.body.before, null);
    assert.equal(res.body.after?.subscription_level, "pro");
    assert.ok(res.body.changed.includes("payproc_subscription_id"));
    assert.equal(double.get("customer", customer.id)?.metadata.user_id, user.id);

    const again = await repair({ userId: user.id });
    assert.deepEqual(again.body.actions, ["sync_unchanged"]);
    assert.deepEqual(again.body.changed, []);
  },
);

sqlTest(
  "fix-user-subscription: an unconfirmed address never links the customer that carries it",
  async () => {
    const user = await createUser(db.pool);
    const customer = double.addCustomer({ email: user.email });
    double.addSubscription({ customer: customer.id, lookupKey: "pro_monthly" });
    const res = await repair({ userId: user.id });
    assert.equal(res.status, 200);
    assert.equal(res.body.customerId, null);
    assert.deepEqual(res.body.actions, []);
    assert.equal(await subscriptionOf(db.pool, user.id), null);
    assert.equal(double.get("customer", customer.id)?.metadata.user_id, undefined);
  },
);

sqlTest(
  "fix-user-subscription: a stored customer without our metadata is tagged; a vanished subscription ends",
  async () => {
    const user = await createUser(db.pool);
    const customer = double.addCustomer({ email: "elsewhere@example.test" });
    await db.pool.query(
      `insert into public.subscriptions (user_id, subscription_level, payproc_customer_id, payproc_subscription_id)
     values ($1, 'starter', $2, 'sub_vanished')`,
      [user.id, customer.id],
    );
    const res = await repair({ userId: user.id });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.actions, ["tagged_customer", "ended_missing_subscription"]);
    assert.equal((await subscriptionOf(db.pool, user.id))?.subscription_status, "canceled");
    assert.equal(double.get("customer", customer.id)?.metadata.user_id, user.id);
  },
);

sqlTest(
  "fix-user-subscription: never takes a customer whose metadata names another user",
  async () => {
    const user = await createUser(db.pool);
    const owner = await createUser(db.pool);
    const customer = double.addCustomer({ email: user.email, metadata: { user_id: owner.id } });
    double.addSubscription({ customer: customer.id, lookupKey: "pro_monthly" });
    const res = await repair({ userId: user.id });
    assert.equal(res.status, 200);
    assert.equal(res.body.customerId, null);
    assert.deepEqual(res.body.actions, []);
    assert.equal(await subscriptionOf(db.pool, user.id), null);
  },
);

sqlTest(
  "fix-user-subscription: 404 for an unknown user; 400 for bad input; 403 for non-admins",
  async () => {
    const unknown = await repair({ email: "nobody@example.test" });
    assert.equal(unknown.status, 404);
    assert.equal(unknown.body.error?.code, "not_found");
    assert.equal((await repair({})).status, 400);
    const user = await createUser(db.pool);
    const res = await invoke(handler, runtime, {
      token: await keys.userToken(user),
      body: { userId: user.id },
    });
    assert.equal(res.status, 403);
  },
);

sqlTest(
  "fix-user-subscription: processor down → 503, no key → 503 not_configured; nothing written",
  async () => {
    const user = await createUser(db.pool);
    double.addCustomer({ email: user.email });
    double.failNext({ path: "/v1/customers", status: 500, times: 3 });
    const down = await repair({ userId: user.id });
    assert.equal(down.status, 503);
    assert.equal(down.body.error?.code, "upstream_unavailable");
    const { PAYPROC_SECRET_KEY: _, ...env } = payprocEnv(double);
    const none = await repair({ userId: user.id }, await testRuntime(db, env));
    assert.equal(none.status, 503);
    assert.equal(none.body.error?.code, "not_configured");
    assert.equal(await subscriptionOf(db.pool, user.id), null);
  },
);
