import assert from "node:assert/strict";
import handler from "../../supabase/functions/payproc-sync/handler.ts";
import { billingSetup, payprocEnv, subscriptionOf } from "../support/billing.ts";
import { sqlTest } from "../support/db.ts";
import { invoke, testRuntime } from "../support/runtime.ts";
import { assertOneRanOneSkipped } from "../support/jobs.ts";
import { createUser } from "../support/sql.ts";

interface JobAnswer {
  job: string;
  runId: string;
  dryRun: boolean;
  scanned: number;
  changed: number;
  failed: number;
  counts: Record<string, number>;
  failures: Array<{ item: string; code: string; message: string }>;
  error?: { code: string; message: string; details?: JobAnswer };
}

sqlTest(
  "payproc-sync: brings rows in line, links new subscriptions, ends vanished ones, expires grants",
  async () => {
    const setup = await billingSetup();
    const { db, double, runtime, keys } = setup;
    try {
      // A mirrored subscription that went past due at the processor.
      const drifted = await createUser(db.pool);
      const c1 = double.addCustomer({ email: drifted.email });
      const s1 = double.addSubscription({ customer: c1.id, lookupKey: "starter_monthly" });
      await db.pool.query(
        `insert into public.subscriptions (user_id, subscription_level, payproc_customer_id, payproc_subscription_id)
       values ($1, 'starter', $2, $3)`,
        [drifted.id, c1.id, s1.id],
      );
      double.updateSubscription(s1.id, { status: "past_due" });
      // A subscription never mirrored (webhook lost), its customer tagged with our user id.
      const missed = await createUser(db.pool);
      const c2 = double.addCustomer({ email: missed.email, metadata: { user_id: missed.id } });
      const s2 = double.addSubscription({ customer: c2.id, lookupKey: "pro_yearly" });
      // A subscription of a customer we cannot link.
      double.addSubscription({ customer: double.addCustomer().id, lookupKey: "pro_monthly" });
      // A mirrored active subscription that was canceled (not in the live listing).
      const ended = await createUser(db.pool);
      const c3 = double.addCustomer({ email: ended.email });
      const s3 = double.addSubscription({ customer: c3.id, lookupKey: "pro_monthly" });
      await db.pool.query(
        `insert into public.subscriptions (user_id, subscription_level, payproc_customer_id, payproc_subscription_id)
       values ($1, 'pro', $2, $3)`,
        [ended.id, c3.id, s3.id],
      );
      double.updateSubscription(s3.id, { status: "canceled" });
      // A grant past its end.
      const granted = await createUser(db.pool);
      await db.pool.query(
        `insert into public.subscriptions (user_id, subscription_level, source, current_period_start, current_period_end)
       values ($1, 'starter', 'grant', now() - interval '31 days', now() - interval '1 day')`,
        [granted.id],
      );

      const res = await invoke<JobAnswer>(handler, runtime, { token: keys.schedulerToken });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.job, "payproc-sync");
      assert.equal(res.body.scanned, 4);
      assert.equal(res.body.changed, 4);
      assert.equal(res.body.failed, 0);
      assert.equal(res.body.counts.unlinked, 1);
      assert.equal(res.body.counts.grants_expired, 1);

      assert.equal((await subscriptionOf(db.pool, drifted.id))?.subscription_status, "past_due");
      const linked = await subscriptionOf(db.pool, missed.id);
      assert.equal(linked?.payproc_subscription_id, s2.id);
      assert.equal(linked?.subscription_level, "pro");
      assert.equal((await subscriptionOf(db.pool, ended.id))?.subscription_status, "canceled");
      assert.equal((await subscriptionOf(db.pool, granted.id))?.subscription_level, "free");

      const run = await db.pool.query("select * from public.job_runs where id = $1", [
        res.body.runId,
      ]);
      assert.equal(run.rows[0].status, "succeeded");
      assert.equal(run.rows[0].changed, 4);

      // A second run finds nothing to change and leaves updated_at alone.
      const before = await subscriptionOf(db.pool, missed.id);
      const again = await invoke<JobAnswer>(handler, runtime, { token: keys.schedulerToken });
      assert.equal(again.status, 200);
      assert.equal(again.body.changed, 0);
      assert.deepEqual((await subscriptionOf(db.pool, missed.id))?.updated_at, before?.updated_at);
    } finally {
      await setup.close();
    }
  },
);

sqlTest(
  "payproc-sync: two concurrent starts — one runs, the other answers 200 skipped and does nothing",
  async () => {
    const setup = await billingSetup();
    const { db, double, runtime, keys } = setup;
    try {
      double.failNext({ method: "GET", path: "/v1/subscriptions", delayMs: 300 });
      const answers = await Promise.all([
        invoke<JobAnswer>(handler, runtime, { token: keys.schedulerToken }),
        invoke<JobAnswer>(handler, runtime, { token: keys.schedulerToken }),
      ]);
      assertOneRanOneSkipped(answers);
      assert.equal(double.requestsTo("GET", "/v1/subscriptions").length, 1);
      const runs = await db.pool.query(
        "select status from public.job_runs where job_name = 'payproc-sync'",
      );
      assert.deepEqual(runs.rows.map((r) => r.status), ["succeeded"]);
    } finally {
      await setup.close();
    }
  },
);

sqlTest("payproc-sync: a stale unfinished run is taken over", async () => {
  const setup = await billingSetup();
  const { db, runtime, keys } = setup;
  try {
    const { rows } = await db.pool.query(
      `insert into public.job_runs (job_name, started_at, stale_after)
       values ('payproc-sync', now() - interval '1 hour', interval '15 minutes') returning id`,
    );
    const res = await invoke<JobAnswer>(handler, runtime, { token: keys.schedulerToken });
    assert.equal(res.status, 200);
    const old = await db.pool.query(
      "select status, error_code from public.job_runs where id = $1",
      [rows[0].id],
    );
    assert.equal(old.rows[0].status, "abandoned");
    assert.equal(old.rows[0].error_code, "stale_taken_over");
  } finally {
    await setup.close();
  }
});

sqlTest(
  "payproc-sync: a failed item does not stop the run; the answer is 500 partial_failure listing it",
  async () => {
    const setup = await billingSetup();
    const { db, double, runtime, keys } = setup;
    try {
      const broken = await createUser(db.pool);
      const c1 = double.addCustomer({ email: broken.email });
      const s1 = double.addSubscription({ customer: c1.id, lookupKey: "pro_monthly" });
      await db.pool.query(
        `insert into public.subscriptions (user_id, subscription_level, payproc_customer_id, payproc_subscription_id)
       values ($1, 'pro', $2, $3)`,
        [broken.id, c1.id, s1.id],
      );
      double.updateSubscription(s1.id, { status: "canceled" });
      const fine = await createUser(db.pool);
      const c2 = double.addCustomer({ email: fine.email, metadata: { user_id: fine.id } });
      double.addSubscription({ customer: c2.id, lookupKey: "starter_yearly" });

      double.failNext({ method: "GET", path: `/v1/subscriptions/${s1.id}`, status: 500, times: 3 });
      const res = await invoke<JobAnswer>(handler, runtime, { token: keys.schedulerToken });
      assert.equal(res.status, 500);
      assert.equal(res.body.error?.code, "partial_failure");
      const details = res.body.error!.details!;
      assert.equal(details.failed, 1);
      assert.deepEqual(details.failures.map((f) => [f.item, f.code]), [[
        s1.id,
        "upstream_unavailable",
      ]]);
      assert.equal(details.changed, 1);
      assert.equal((await subscriptionOf(db.pool, fine.id))?.subscription_level, "starter");
      const run = await db.pool.query(
        "select status, failed, failures from public.job_runs where id = $1",
        [details.runId],
      );
      assert.equal(run.rows[0].status, "partial");
      assert.equal(run.rows[0].failures[0].item, s1.id);
    } finally {
      await setup.close();
    }
  },
);

sqlTest(
  "payproc-sync: processor down → 503 and the run is recorded failed (the guard is released)",
  async () => {
    const setup = await billingSetup();
    const { db, double, runtime, keys } = setup;
    try {
      double.failNext({ method: "GET", path: "/v1/subscriptions", status: 500, times: 3 });
      const res = await invoke<JobAnswer>(handler, runtime, { token: keys.schedulerToken });
      assert.equal(res.status, 503);
      assert.equal(res.body.error?.code, "upstream_unavailable");
      const runs = await db.pool.query("select status, error_code from public.job_runs");
      assert.deepEqual(runs.rows, [{ status: "failed", error_code: "upstream_unavailable" }]);
      assert.equal((await invoke(handler, runtime, { token: keys.schedulerToken })).status, 200);

      const { PAYPROC_SECRET_KEY: _, ...env } = payprocEnv(double);
      const unconfigured = await testRuntime(db, env);
      const none = await invoke<JobAnswer>(handler, unconfigured, {
        token: keys.schedulerToken,
      });
      await unconfigured.close();
      assert.equal(none.status, 503);
      assert.equal(none.body.error?.code, "not_configured");
    } finally {
      await setup.close();
    }
  },
);

sqlTest(
  "payproc-sync: scheduler token, service role and admins may start it; users and anon may not",
  async () => {
    const setup = await billingSetup();
    const { db, runtime, keys } = setup;
    try {
      const user = await createUser(db.pool);
      const admin = await createUser(db.pool, { admin: true });
      assert.equal(
        (await invoke(handler, runtime, { token: await keys.userToken(user) })).status,
        403,
      );
      assert.equal((await invoke(handler, runtime, { token: keys.anonKey })).status, 403);
      assert.equal((await invoke(handler, runtime)).status, 401);
      assert.equal((await invoke(handler, runtime, { token: keys.serviceKey })).status, 200);
      assert.equal(
        (await invoke(handler, runtime, { token: await keys.userToken(admin) })).status,
        200,
      );
      assert.equal(
        (await db.pool.query("select count(*)::int as n from public.job_runs")).rows[0].n,
        2,
      );
    } finally {
      await setup.close();
    }
  },
);
