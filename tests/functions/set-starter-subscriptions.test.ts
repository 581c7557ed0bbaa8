import assert from "node:assert/strict";
import handler from "../../supabase/functions/set-starter-subscriptions/handler.ts";
import { billingSetup, countRows, subscriptionOf } from "../support/billing.ts";
import { sqlTest } from "../support/db.ts";
import { invoke } from "../support/runtime.ts";
import { createUser } from "../support/sql.ts";

const { db, runtime, keys } = await billingSetup();
const admin = await createUser(db.pool, {
  admin: true,
  createdAt: new Date("2019-01-01T00:00:00Z"),
});

interface Answer {
  dryRun: boolean;
  matched: number;
  granted: number;
  userIds: string[];
  skipped: Array<{ userId: string; reason: string }>;
  error?: { code: string };
}

async function grant(body: Record<string, unknown>) {
  return await invoke<Answer>(handler, runtime, { token: await keys.userToken(admin), body });
}

sqlTest(
  "set-starter-subscriptions: grants Starter to free users, skips paying and granted ones, and is idempotent",
  async () => {
    const free = await createUser(db.pool);
    const lapsed = await createUser(db.pool);
    await db.pool.query(
      `insert into public.subscriptions (user_id, subscription_level, subscription_status, payproc_customer_id, payproc_subscription_id)
     values ($1, 'pro', 'canceled', 'cus_lapsed', 'sub_lapsed')`,
      [lapsed.id],
    );
    const paying = await createUser(db.pool);
    await db.pool.query(
      `insert into public.subscriptions (user_id, subscription_level, payproc_customer_id, payproc_subscription_id)
     values ($1, 'pro', 'cus_paying', 'sub_paying')`,
      [paying.id],
    );
    const ghost = crypto.randomUUID();
    const userIds = [free.id, lapsed.id, paying.id, ghost];

    const dry = await grant({ userIds, days: 30, dryRun: true });
    assert.equal(dry.status, 200, JSON.stringify(dry.body));
    assert.deepEqual(new Set(dry.body.userIds), new Set([free.id, lapsed.id]));
    assert.equal(await subscriptionOf(db.pool, free.id), null);
    assert.equal((await subscriptionOf(db.pool, lapsed.id))?.source, "payproc");

    const res = await grant({ userIds, days: 30 });
    assert.equal(res.body.granted, 2);
    assert.deepEqual(
      res.body.skipped.sort((a, b) => a.reason.localeCompare(b.reason)),
      [{ userId: ghost, reason: "no_such_user" }, {
        userId: paying.id,
        reason: "paid_subscription",
      }],
    );
    for (const id of [free.id, lapsed.id]) {
      const row = await subscriptionOf(db.pool, id);
      assert.equal(row?.source, "grant");
      assert.equal(row?.subscription_level, "starter");
      assert.equal(row?.subscription_status, "active");
      assert.equal(row?.payproc_subscription_id, null);
      const days = (row!.current_period_end!.getTime() - row!.current_period_start!.getTime()) /
        86_400_000;
      assert.equal(Math.round(days), 30);
      const plan = await db.pool.query("select public.current_plan($1) as plan", [id]);
      assert.equal(plan.rows[0].plan, "starter");
    }
    assert.equal((await subscriptionOf(db.pool, lapsed.id))?.payproc_customer_id, "cus_lapsed");
    assert.equal((await subscriptionOf(db.pool, paying.id))?.source, "payproc");

    const before = await subscriptionOf(db.pool, free.id);
    const again = await grant({ userIds, days: 30 });
    assert.equal(again.body.granted, 0);
    assert.ok(
      again.body.skipped.some((s) => s.userId === free.id && s.reason === "already_granted"),
    );
    assert.deepEqual(await subscriptionOf(db.pool, free.id), before);
  },
);

sqlTest("set-starter-subscriptions: a sign-up window selects the cohort", async () => {
  const inside = await createUser(db.pool, { createdAt: new Date("2024-03-10T12:00:00Z") });
  const outside = await createUser(db.pool, { createdAt: new Date("2024-04-10T12:00:00Z") });
  const res = await grant({
    createdAfter: "2024-03-01T00:00:00Z",
    createdBefore: "2024-04-01T00:00:00Z",
    days: 14,
  });
  assert.equal(res.status, 200);
  assert.deepEqual(res.body.userIds, [inside.id]);
  assert.equal(res.body.matched, 1);
  assert.equal(await subscriptionOf(db.pool, outside.id), null);
});

sqlTest(
  "set-starter-subscriptions: bad input answers 400 and non-admins 403, writing nothing",
  async () => {
    const user = await createUser(db.pool);
    const rows = await countRows(db.pool, "public.subscriptions");
    for (
      const body of [
        { days: 30 },
        { userIds: [user.id], createdAfter: "2024-01-01T00:00:00Z", days: 30 },
        { userIds: [user.id], days: 0 },
        { userIds: [], days: 30 },
        { createdAfter: "2024-02-01T00:00:00Z", createdBefore: "2024-01-01T00:00:00Z", days: 3 },
      ]
    ) {
      const res = await grant(body);
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.equal(res.body.error?.code, "invalid_input");
    }
    const denied = await invoke(handler, runtime, {
      token: await keys.userToken(user),
      body: { userIds: [user.id], days: 30 },
    });
    assert.equal(denied.status, 403);
    assert.equal(await countRows(db.pool, "public.subscriptions"), rows);
  },
);
