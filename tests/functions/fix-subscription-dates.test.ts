import assert from "node:assert/strict";
import handler from "../../supabase/functions/fix-subscription-dates/handler.ts";
import { billingSetup, payprocEnv, subscriptionOf } from "../support/billing.ts";
import { sqlTest } from "../support/db.ts";
import { invoke, testRuntime } from "../support/runtime.ts";
import { createUser } from "../support/sql.ts";

const { db, double, runtime, keys } = await billingSetup();
const admin = await createUser(db.pool, { admin: true });

interface Answer {
  dryRun: boolean;
  changed: boolean;
  written: boolean;
  before: { start: string | null; end: string | null };
  after: { start: string | null; end: string | null };
  error?: { code: string };
}

async function fix(body: Record<string, unknown>, rt = runtime) {
  return await invoke<Answer>(handler, rt, { token: await keys.userToken(admin), body });
}

/** A user whose row has the subscription with broken dates. */
async function broken() {
  const user = await createUser(db.pool);
  const customer = double.addCustomer({ email: user.email });
  const subscription = double.addSubscription({
    customer: customer.id,
    lookupKey: "starter_yearly",
  });
  await db.pool.query(
    `insert into public.subscriptions (user_id, subscription_level, payproc_customer_id,
       payproc_subscription_id, current_period_start, current_period_end)
     values ($1, 'starter', $2, $3, null, null)`,
    [user.id, customer.id, subscription.id],
  );
  const item = subscription.items.data[0]!;
  return {
    user,
    subscription,
    start: new Date(item.current_period_start * 1000).toISOString(),
    end: new Date(item.current_period_end * 1000).toISOString(),
  };
}

sqlTest(
  "fix-subscription-dates: dryRun reports and writes nothing; then the dates are set from the items",
  async () => {
    const { user, start, end } = await broken();
    const dry = await fix({ email: user.email.toUpperCase(), dryRun: true });
    assert.equal(dry.status, 200, JSON.stringify(dry.body));
    assert.equal(dry.body.changed, true);
    assert.equal(dry.body.written, false);
    assert.deepEqual(dry.body.after, { start, end });
    const untouched = await subscriptionOf(db.pool, user.id);
    assert.equal(untouched?.current_period_end, null);

    const res = await fix({ userId: user.id });
    assert.equal(res.body.written, true);
    assert.deepEqual(res.body.before, { start: null, end: null });
    const row = await subscriptionOf(db.pool, user.id);
    assert.equal(row?.current_period_start?.toISOString(), start);
    assert.equal(row?.current_period_end?.toISOString(), end);
    assert.ok(row!.updated_at > untouched!.updated_at);

    const again = await fix({ userId: user.id });
    assert.equal(again.body.changed, false);
  },
);

sqlTest(
  "fix-subscription-dates: 404 for an unknown user, a user without a processor subscription, or one the processor lost",
  async () => {
    assert.equal((await fix({ userId: crypto.randomUUID() })).status, 404);
    const free = await createUser(db.pool);
    const res = await fix({ userId: free.id });
    assert.equal(res.status, 404);
    assert.equal(res.body.error?.code, "not_found");
    const lost = await createUser(db.pool);
    await db.pool.query(
      "insert into public.subscriptions (user_id, payproc_subscription_id) values ($1, 'sub_lost')",
      [lost.id],
    );
    assert.equal((await fix({ userId: lost.id })).status, 404);
  },
);

sqlTest("fix-subscription-dates: input and access rules", async () => {
  const { user } = await broken();
  for (const body of [{}, { userId: user.id, email: user.email }, { userId: "nope" }]) {
    const res = await fix(body);
    assert.equal(res.status, 400, JSON.stringify(body));
    assert.equal(res.body.error?.code, "invalid_input");
  }
  const notAdmin = await invoke(handler, runtime, {
    token: await keys.userToken(user),
    body: { userId: user.id },
  });
  assert.equal(notAdmin.status, 403);
  assert.equal((await subscriptionOf(db.pool, user.id))?.current_period_end, null);
});

sqlTest("fix-subscription-dates: processor down → 503; no key → 503 not_configured", async () => {
  const { user } = await broken();
  double.failNext({ path: "/v1/subscriptions/", status: 500, times: 3 });
  const down = await fix({ userId: user.id });
  assert.equal(down.status, 503);
  assert.equal(down.body.error?.code, "upstream_unavailable");
  const { PAYPROC_SECRET_KEY: _, ...env } = payprocEnv(double);
  const none = await fix({ userId: user.id }, await testRuntime(db, env));
  assert.equal(none.status, 503);
  assert.equal(none.body.error?.code, "not_configured");
  assert.equal((await subscriptionOf(db.pool, user.id))?.current_period_end, null);
});
