import assert from "node:assert/strict";
import handler from "../../supabase/functions/customer-portal/handler.ts";
import { billingSetup, payprocEnv } from "../support/billing.ts";
import { sqlTest } from "../support/db.ts";
import { assertRateLimited } from "../support/rate_limits.ts";
import { invoke, testRuntime } from "../support/runtime.ts";
import { createUser } from "../support/sql.ts";

const { db, double, runtime, keys } = await billingSetup();

interface Answer {
  url?: string;
  error?: { code: string; message: string };
}

async function withCustomer() {
  const user = await createUser(db.pool);
  const customer = double.addCustomer({ email: user.email, metadata: { user_id: user.id } });
  await db.pool.query(
    "insert into public.subscriptions (user_id, payproc_customer_id) values ($1, $2)",
    [user.id, customer.id],
  );
  return { user, customer };
}

sqlTest(
  "customer-portal: a portal session for the user's customer, returning to SITE_URL",
  async () => {
    const { user, customer } = await withCustomer();
    const res = await invoke<Answer>(handler, runtime, { token: await keys.userToken(user) });
    assert.equal(res.status, 200);
    const session = double.all("billing_portal.session").find((s) => s.customer === customer.id);
    assert.equal(res.body.url, session?.url);
    assert.equal(session?.return_url, "http://localhost:5173");
    const request = double.requestsTo("POST", "/v1/billing_portal/sessions").at(-1);
    assert.ok(request?.headers.get("idempotency-key")?.startsWith(`portal:${user.id}:`));
  },
);

sqlTest("customer-portal: 404 when the user has no customer yet (nothing created)", async () => {
  const user = await createUser(db.pool);
  const before = double.createdCount("billing_portal.session");
  const res = await invoke<Answer>(handler, runtime, { token: await keys.userToken(user) });
  assert.equal(res.status, 404);
  assert.equal(res.body.error?.code, "not_found");
  assert.equal(double.createdCount("billing_portal.session"), before);
  assert.equal(double.createdCount("customer"), double.all("customer").length);
});

sqlTest("customer-portal: 404 when the stored customer was deleted at the processor", async () => {
  const { user, customer } = await withCustomer();
  double.deleteCustomer(customer.id);
  const res = await invoke<Answer>(handler, runtime, { token: await keys.userToken(user) });
  assert.equal(res.status, 404);
});

sqlTest(
  "customer-portal: signed-in users only; processor down → 503; no key → 503 not_configured",
  async () => {
    const anon = await invoke<Answer>(handler, runtime, { token: keys.anonKey });
    assert.equal(anon.status, 403);
    assert.equal((await invoke<Answer>(handler, runtime)).status, 401);
    const service = await invoke<Answer>(handler, runtime, { token: keys.serviceKey });
    assert.equal(service.status, 403);

    const { user } = await withCustomer();
    double.failNext({ path: "/v1/billing_portal/sessions", status: 503, times: 3 });
    const down = await invoke<Answer>(handler, runtime, { token: await keys.userToken(user) });
    assert.equal(down.status, 503);
    assert.equal(down.body.error?.code, "upstream_unavailable");

    const { PAYPROC_SECRET_KEY: _, ...env } = payprocEnv(double);
    const none = await invoke<Answer>(handler, await testRuntime(db, env), {
      token: await keys.userToken(user),
    });
    assert.equal(none.status, 503);
    assert.equal(none.body.error?.code, "not_configured");
  },
);

sqlTest(
  "customer-portal: at most 10 calls a minute per user; the 11th answers 429 before any processor request",
  async () => {
    const { user } = await withCustomer();
    const token = await keys.userToken(user);
    await assertRateLimited(
      { limit: 10, windowSeconds: 60 },
      () => invoke<Answer>(handler, runtime, { token }),
      () => double.requests.length,
    );
    const other = await withCustomer();
    const served = await invoke<Answer>(handler, runtime, {
      token: await keys.userToken(other.user),
    });
    assert.equal(served.status, 200);
  },
);
