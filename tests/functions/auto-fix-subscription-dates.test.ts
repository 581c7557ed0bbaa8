import assert from "node:assert/strict";
import handler from "../../supabase/functions/auto-fix-subscription-dates/handler.ts";
import { billingSetup, subscriptionOf } from "../support/billing.ts";
import { sqlTest } from "../support/db.ts";
import { invoke } from "../support/runtime.ts";
import { createUser } from "../support/sql.ts";
import { assertOneRanOneSkipped } from "../support/jobs.ts";

interface JobAnswer {
  dryRun: boolean;
  scanned: number;
  changed: number;
  counts: Record<string, number>;
  error?: { code: string; details?: { failures: Array<{ item: string; code: string }> } };
}

sqlTest(
  "auto-fix-subscription-dates: dryRun counts without writing; a run fixes every row; missing ones are counted",
  async () => {
    const setup = await billingSetup();
    const { db, double, runtime, keys } = setup;
    try {
      const users = [];
      for (
        const [lookupKey, start] of [["pro_monthly", null], [
          "starter_monthly",
          "2020-01-01",
        ]] as const
      ) {
        const user = await createUser(db.pool);
        const customer = double.addCustomer();
        const subscription = double.addSubscription({ customer: customer.id, lookupKey });
        await db.pool.query(
          `insert into public.subscriptions (user_id, payproc_customer_id, payproc_subscription_id,
           current_period_start, current_period_end)
         values ($1, $2, $3, $4::timestamptz, $4::timestamptz + interval '1 month')`,
          [user.id, customer.id, subscription.id, start],
        );
        users.push({ user, subscription });
      }
      const right = await createUser(db.pool);
      const c = double.addCustomer();
      const ok = double.addSubscription({ customer: c.id, lookupKey: "pro_yearly" });
      const item = ok.items.data[0]!;
      await db.pool.query(
        `insert into public.subscriptions (user_id, payproc_customer_id, payproc_subscription_id,
         current_period_start, current_period_end)
       values ($1, $2, $3, to_timestamp($4), to_timestamp($5))`,
        [right.id, c.id, ok.id, item.current_period_start, item.current_period_end],
      );
      const lost = await createUser(db.pool);
      await db.pool.query(
        "insert into public.subscriptions (user_id, payproc_subscription_id) values ($1, 'sub_lost')",
        [lost.id],
      );

      const dry = await invoke<JobAnswer>(handler, runtime, {
        token: keys.schedulerToken,
        body: { dryRun: true },
      });
      assert.equal(dry.status, 200, JSON.stringify(dry.body));
      assert.equal(dry.body.dryRun, true);
      assert.equal(dry.body.scanned, 4);
      assert.equal(dry.body.changed, 2);
      assert.equal(dry.body.counts.missing, 1);
      assert.equal((await subscriptionOf(db.pool, users[0]!.user.id))?.current_period_start, null);

      const res = await invoke<JobAnswer>(handler, runtime, { token: keys.schedulerToken });
      assert.equal(res.status, 200);
      assert.equal(res.body.changed, 2);
      for (const { user, subscription } of users) {
        const row = await subscriptionOf(db.pool, user.id);
        assert.equal(
          row?.current_period_end?.getTime(),
          subscription.items.data[0]!.current_period_end * 1000,
        );
      }
      const again = await invoke<JobAnswer>(handler, runtime, { token: keys.schedulerToken });
      assert.equal(again.body.changed, 0);
    } finally {
      await setup.close();
    }
  },
);

sqlTest(
  "auto-fix-subscription-dates: an overlapping start is skipped with 200; failing rows give 500 partial_failure",
  async () => {
    const setup = await billingSetup();
    const { db, double, runtime, keys } = setup;
    try {
      double.failNext({ method: "GET", path: "/v1/subscriptions", delayMs: 300 });
      const both = await Promise.all([
        invoke<JobAnswer>(handler, runtime, { token: keys.schedulerToken }),
        invoke<JobAnswer>(handler, runtime, { token: keys.schedulerToken }),
      ]);
      assertOneRanOneSkipped(both);

      const user = await createUser(db.pool);
      await db.pool.query(
        "insert into public.subscriptions (user_id, payproc_subscription_id) values ($1, 'sub_flaky')",
        [user.id],
      );
      double.failNext({
        method: "GET",
        path: "/v1/subscriptions/sub_flaky",
        status: 500,
        times: 3,
      });
      const res = await invoke<JobAnswer>(handler, runtime, { token: keys.schedulerToken });
      assert.equal(res.status, 500);
      assert.deepEqual(res.body.error?.details?.failures.map((f) => [f.item, f.code]), [[
        "sub_flaky",
        "upstream_unavailable",
      ]]);
    } finally {
      await setup.close();
    }
  },
);
