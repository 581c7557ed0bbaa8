import assert from "node:assert/strict";
import handler from "../../supabase/functions/get-price-id/handler.ts";
import { createTestDatabase, sqlTest } from "../support/db.ts";
import { testCredentials } from "../support/credentials.ts";
import { PayprocDouble, TEST_SECRET_KEY } from "../support/payproc_double.ts";
import { invoke, testRuntime } from "../support/runtime.ts";

const db = await createTestDatabase();
const keys = await testCredentials();

/** A fresh double with our four plan prices (plus an unrelated one), and a runtime on it. */
async function setup(env: Record<string, string> = {}) {
  const double = new PayprocDouble();
  const prices = {
    starter_monthly: double.addPrice({
      lookupKey: "starter_monthly",
      unitAmount: 1900,
      interval: "month",
    }),
    starter_yearly: double.addPrice({
      lookupKey: "starter_yearly",
      unitAmount: 19000,
      interval: "year",
    }),
    pro_monthly: double.addPrice({ lookupKey: "pro_monthly", unitAmount: 4900, interval: "month" }),
  };
  double.addPrice({ lookupKey: "legacy_plan", unitAmount: 100, interval: "month" });
  const runtime = await testRuntime(db, {
    PAYPROC_SECRET_KEY: TEST_SECRET_KEY,
    PAYPROC_API_BASE: double.url,
    PAYPROC_TIMEOUT_MS: "500",
    ...env,
  });
  return { double, prices, runtime };
}

sqlTest("get-price-id maps a plan key to its price id through lookup keys", async () => {
  const { double, prices, runtime } = await setup();
  try {
    const res = await invoke(handler, runtime, {
      token: keys.anonKey,
      body: { plan: "starter_monthly" },
    });
    assert.deepEqual([res.status, res.body], [200, { priceId: prices.starter_monthly.id }]);
    const pro = await invoke(handler, runtime, {
      token: keys.anonKey,
      body: { plan: "pro_monthly" },
    });
    assert.deepEqual(pro.body, { priceId: prices.pro_monthly.id });
    const lookups = double.requestsTo("GET", "/v1/prices");
    assert.equal(lookups.length, 1, "one processor call serves every plan while cached");
    assert.deepEqual(
      [...lookups[0]!.query].filter(([k]) => k.startsWith("lookup_keys")).map(([, v]) => v).sort(),
      ["pro_monthly", "pro_yearly", "starter_monthly", "starter_yearly"],
    );
  } finally {
    await double.close();
  }
});

sqlTest("get-price-id refuses an unknown plan with 400 and never asks the processor", async () => {
  const { double, runtime } = await setup();
  try {
    for (const plan of ["legacy_plan", "enterprise_monthly", ""]) {
      const res = await invoke(handler, runtime, { token: keys.anonKey, body: { plan } });
      assert.equal(res.status, 400, plan);
      assert.equal((res.body as { error: { code: string } }).error.code, "invalid_input");
    }
    const missing = await invoke(handler, runtime, { token: keys.anonKey, body: {} });
    assert.equal(missing.status, 400);
    assert.equal(double.requests.length, 0);
  } finally {
    await double.close();
  }
});

sqlTest("get-price-id answers 400 for a known plan without an active price", async () => {
  const { double, runtime } = await setup();
  try {
    const res = await invoke(handler, runtime, {
      token: keys.anonKey,
      body: { plan: "pro_yearly" },
    });
    assert.equal(res.status, 400);
    assert.match((res.body as { error: { message: string } }).error.message, /no active price/);
  } finally {
    await double.close();
  }
});

sqlTest(
  "get-price-id answers 503 upstream_unavailable when the processor fails or hangs",
  async () => {
    const { double, runtime } = await setup();
    try {
      double.failNext({ path: "/v1/prices", status: 500, times: 5 });
      const down = await invoke(handler, runtime, {
        token: keys.anonKey,
        body: { plan: "pro_monthly" },
      });
      assert.equal(down.status, 503);
      assert.equal((down.body as { error: { code: string } }).error.code, "upstream_unavailable");
      double.failNext({ path: "/v1/prices", delayMs: 5_000, times: 5 });
      const started = performance.now();
      const slow = await invoke(handler, runtime, {
        token: keys.anonKey,
        body: { plan: "pro_monthly" },
      });
      assert.equal(slow.status, 503);
      assert.ok(performance.now() - started < 4_000, "the request must not hang");
    } finally {
      await double.close();
    }
  },
);

sqlTest("get-price-id answers 503 not_configured without PAYPROC_SECRET_KEY", async () => {
  const runtime = await testRuntime(db);
  const res = await invoke(handler, runtime, {
    token: keys.anonKey,
    body: { plan: "pro_monthly" },
  });
  assert.equal(res.status, 503);
  assert.deepEqual((res.body as { error: { details: unknown } }).error.details, {
    variable: "PAYPROC_SECRET_KEY",
  });
});

sqlTest("get-price-id needs a project key", async () => {
  const { double, runtime } = await setup();
  try {
    const res = await invoke(handler, runtime, { body: { plan: "pro_monthly" } });
    assert.equal(res.status, 401);
    assert.equal(double.requests.length, 0);
  } finally {
    await double.close();
  }
});
