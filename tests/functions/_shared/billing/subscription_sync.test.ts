import assert from "node:assert/strict";
import type Stripe from "stripe";
import { syncSubscription } from "../../../../supabase/functions/_shared/billing/subscription_sync.ts";
import { Context } from "../../../../supabase/functions/_shared/platform/context.ts";
import { billingSetup, subscriptionOf } from "../../../support/billing.ts";
import { sqlTest } from "../../../support/db.ts";
import { createUser, type TestUser } from "../../../support/sql.ts";

const { db, double, runtime } = await billingSetup();
const ctx = () => new Context(runtime, crypto.randomUUID(), runtime.log);

function current(id: string): Stripe.Subscription {
  return double.get("subscription", id) as unknown as Stripe.Subscription;
}

async function sync(
  subscription: Stripe.Subscription,
  options: { userId?: string; readAt?: Date; eventCreated?: number } = {},
) {
  return await syncSubscription(ctx(), subscription, { readAt: new Date(), ...options });
}

function customerFor(user: TestUser) {
  return double.addCustomer({ email: user.email, metadata: { user_id: user.id } });
}

sqlTest(
  "syncSubscription() writes a new row, then only changes, moving updated_at only then",
  async () => {
    const user = await createUser(db.pool);
    const customer = customerFor(user);
    const s = double.addSubscription({ customer: customer.id, lookupKey: "starter_monthly" });
    assert.deepEqual(await sync(current(s.id)), { result: "changed", userId: user.id });
    const first = await subscriptionOf(db.pool, user.id);
    assert.deepEqual(await sync(current(s.id)), { result: "unchanged", userId: user.id });
    assert.deepEqual((await subscriptionOf(db.pool, user.id))?.updated_at, first?.updated_at);
    double.updateSubscription(s.id, { lookupKey: "pro_monthly" });
    assert.equal((await sync(current(s.id))).result, "changed");
    assert.equal((await subscriptionOf(db.pool, user.id))?.subscription_level, "pro");
  },
);

sqlTest(
  "syncSubscription() refuses a read older than the stored one (a slow job after a webhook)",
  async () => {
    const user = await createUser(db.pool);
    const s = double.addSubscription({
      customer: customerFor(user).id,
      lookupKey: "starter_monthly",
    });
    const slowRead = current(s.id);
    const slowReadAt = new Date(Date.now() - 5_000);
    double.updateSubscription(s.id, { status: "past_due" });
    await sync(current(s.id));
    const result = await sync(slowRead, { readAt: slowReadAt });
    assert.equal(result.result, "stale");
    assert.equal((await subscriptionOf(db.pool, user.id))?.subscription_status, "past_due");
  },
);

sqlTest(
  "syncSubscription() keeps an active grant against a subscription that gives no access, yields to a paid one",
  async () => {
    const user = await createUser(db.pool);
    await db.pool.query(
      `insert into public.subscriptions (user_id, subscription_level, source, current_period_start, current_period_end)
     values ($1, 'starter', 'grant', now(), now() + interval '30 days')`,
      [user.id],
    );
    const customer = customerFor(user);
    const ended = double.addSubscription({
      customer: customer.id,
      lookupKey: "pro_monthly",
      status: "canceled",
    });
    assert.equal((await sync(current(ended.id))).result, "kept");
    assert.equal((await subscriptionOf(db.pool, user.id))?.source, "grant");
    const paid = double.addSubscription({ customer: customer.id, lookupKey: "pro_monthly" });
    assert.equal((await sync(current(paid.id))).result, "changed");
    const row = await subscriptionOf(db.pool, user.id);
    assert.equal(row?.source, "payproc");
    assert.equal(row?.payproc_subscription_id, paid.id);
  },
);

sqlTest(
  "syncSubscription() with two live subscriptions keeps the better one whatever the order",
  async () => {
    const user = await createUser(db.pool);
    const customer = customerFor(user);
    const starter = double.addSubscription({
      customer: customer.id,
      lookupKey: "starter_monthly",
      created: 1000,
    });
    const pro = double.addSubscription({
      customer: customer.id,
      lookupKey: "pro_monthly",
      created: 2000,
    });
    await sync(current(pro.id));
    assert.equal((await sync(current(starter.id))).result, "kept");
    assert.equal((await subscriptionOf(db.pool, user.id))?.payproc_subscription_id, pro.id);

    const other = await createUser(db.pool);
    const c2 = customerFor(other);
    const a = double.addSubscription({ customer: c2.id, lookupKey: "starter_monthly" });
    const b = double.addSubscription({ customer: c2.id, lookupKey: "pro_monthly" });
    await sync(current(a.id));
    assert.equal((await sync(current(b.id))).result, "changed");
    // The stored one ended at the processor, but its event is late: the live one still wins.
    double.updateSubscription(b.id, { status: "canceled" });
    const revived = await sync(current(a.id));
    assert.equal(revived.result, "changed");
    assert.equal((await subscriptionOf(db.pool, other.id))?.payproc_subscription_id, a.id);
  },
);

sqlTest(
  "syncSubscription() does not move a subscription or customer linked to another user",
  async () => {
    const owner = await createUser(db.pool);
    const intruder = await createUser(db.pool);
    const s = double.addSubscription({
      customer: customerFor(owner).id,
      lookupKey: "starter_monthly",
    });
    await sync(current(s.id));
    assert.equal((await sync(current(s.id), { userId: intruder.id })).result, "kept");
    assert.equal(await subscriptionOf(db.pool, intruder.id), null);
    const second = double.addSubscription({
      customer: (await subscriptionOf(db.pool, owner.id))!.payproc_customer_id!,
      lookupKey: "pro_monthly",
    });
    const result = await sync(current(second.id), { userId: intruder.id });
    assert.equal(result.result, "kept");
    assert.equal(await subscriptionOf(db.pool, intruder.id), null);
  },
);

sqlTest("syncSubscription() leaves a subscription nobody can be linked to unlinked", async () => {
  const s = double.addSubscription({
    customer: double.addCustomer().id,
    lookupKey: "starter_monthly",
  });
  assert.equal((await sync(current(s.id))).result, "unlinked");
  const foreign = double.addSubscription({
    customer: double.addCustomer({ metadata: { user_id: crypto.randomUUID() } }).id,
    lookupKey: "starter_monthly",
  });
  assert.equal((await sync(current(foreign.id))).result, "unlinked");
});

sqlTest(
  "syncSubscription() settles two first syncs of one new user's subscriptions racing each other",
  async () => {
    for (let round = 0; round < 5; round++) {
      const user = await createUser(db.pool);
      const customer = customerFor(user);
      const starter = double.addSubscription({
        customer: customer.id,
        lookupKey: "starter_monthly",
      });
      const pro = double.addSubscription({ customer: customer.id, lookupKey: "pro_monthly" });
      const results = await Promise.all([sync(current(starter.id)), sync(current(pro.id))]);
      assert.ok(results.some((r) => r.result === "changed"), JSON.stringify(results));
      assert.equal((await subscriptionOf(db.pool, user.id))?.payproc_subscription_id, pro.id);
    }
  },
);
