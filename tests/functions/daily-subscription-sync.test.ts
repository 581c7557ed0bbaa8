import assert from "node:assert/strict";
import handler from "../../supabase/functions/daily-subscription-sync/handler.ts";
import { billingSetup, subscriptionOf } from "../support/billing.ts";
import { sqlTest } from "../support/db.ts";
import { invoke } from "../support/runtime.ts";
import { createUser } from "../support/sql.ts";
import { assertOneRanOneSkipped } from "../support/jobs.ts";

interface JobAnswer {
  scanned: number;
  changed: number;
  failed: number;
  counts: Record<string, number>;
  error?: { code: string; details?: { failures: Array<{ item: string; code: string }> } };
}

sqlTest(
  "daily-subscription-sync: every subscription, ended ones included, and vanished ones end",
  async () => {
    const setup = await billingSetup();
    const { db, double, runtime, keys } = setup;
    try {
      const user = await createUser(db.pool);
      const customer = double.addCustomer({ email: user.email, metadata: { user_id: user.id } });
      const canceled = double.addSubscription({
        customer: customer.id,
        lookupKey: "pro_monthly",
        status: "canceled",
      });
      const gone = await createUser(db.pool);
      await db.pool.query(
        `insert into public.subscriptions (user_id, subscription_level, payproc_subscription_id)
       values ($1, 'starter', 'sub_not_at_the_processor')`,
        [gone.id],
      );
      const res = await invoke<JobAnswer>(handler, runtime, { token: keys.schedulerToken });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.scanned, 2);
      assert.equal(res.body.changed, 2);
      assert.equal(res.body.counts.gone, 1);
      const row = await subscriptionOf(db.pool, user.id);
      assert.equal(row?.payproc_subscription_id, canceled.id);
      assert.equal(row?.subscription_status, "canceled");
      assert.equal((await subscriptionOf(db.pool, gone.id))?.subscription_status, "canceled");

      const again = await invoke<JobAnswer>(handler, runtime, { token: keys.schedulerToken });
      assert.equal(again.body.changed, 0);
    } finally {
      await setup.close();
    }
  },
);

sqlTest(
  "daily-subscription-sync: an overlapping start is skipped with 200; a failing item gives 500 partial_failure",
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
        `insert into public.subscriptions (user_id, subscription_level, payproc_subscription_id)
       values ($1, 'starter', 'sub_flaky')`,
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
      assert.equal(res.body.error?.code, "partial_failure");
      assert.deepEqual(res.body.error?.details?.failures.map((f) => f.item), ["sub_flaky"]);
      assert.equal((await subscriptionOf(db.pool, user.id))?.subscription_status, "active");
    } finally {
      await setup.close();
    }
  },
);
