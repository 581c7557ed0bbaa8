import assert from "node:assert/strict";
import type { z } from "zod";
import handler from "../../supabase/functions/test-payproc/handler.ts";
import type { Runtime } from "../../supabase/functions/_shared/platform/runtime.ts";
import type { TestPayprocOutput } from "../../shared/schemas.ts";
import {
  type BillingSetup,
  billingSetup,
  CONNECT_WEBHOOK_SECRET,
  payprocEnv,
  WEBHOOK_SECRET,
} from "../support/billing.ts";
import { sqlTest } from "../support/db.ts";
import { invoke, testRuntime } from "../support/runtime.ts";
import { createUser } from "../support/sql.ts";

type Report = z.output<typeof TestPayprocOutput>;

/** A key the double accepts, distinctive enough to search the answer for. */
const SECRET_KEY = "sk_test_secret_value_never_shown_4242";

/** A billing setup (database, double with our four plan prices) and an admin's token; closed after `fn`. */
async function withSetup(
  fn: (setup: BillingSetup, adminToken: string) => Promise<void>,
  env: Record<string, string> = {},
): Promise<void> {
  const setup = await billingSetup({ PAYPROC_SECRET_KEY: SECRET_KEY, ...env });
  try {
    const admin = await createUser(setup.db.pool, { admin: true });
    await fn(setup, await setup.keys.userToken(admin));
  } finally {
    await setup.close();
  }
}

/** Another runtime on the setup's database and double, with `env` on top; closed after `fn`. */
async function withRuntime(
  setup: BillingSetup,
  env: Record<string, string | undefined>,
  fn: (runtime: Runtime) => Promise<void>,
): Promise<void> {
  const runtime = await testRuntime(setup.db, {
    ...payprocEnv(setup.double),
    PAYPROC_SECRET_KEY: SECRET_KEY,
    ...env,
  });
  try {
    await fn(runtime);
  } finally {
    await runtime.close();
  }
}

/** A 127.0.0.1 port nothing listens on (bound, then released). */
function closedPort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}

function assertNoSecret(body: unknown, secrets: readonly string[] = []): void {
  const text = JSON.stringify(body);
  for (const secret of [SECRET_KEY, WEBHOOK_SECRET, CONNECT_WEBHOOK_SECRET, ...secrets]) {
    assert.ok(!text.includes(secret), `the answer quotes a secret: ${text}`);
  }
}

sqlTest(
  "test-payproc reports mode, platform account, secrets, Connect and every plan price",
  async () => {
    await withSetup(async ({ double, runtime, prices }, token) => {
      const platform = double.setPlatform({ country: "DE" });
      double.addAccount();

      const res = await invoke<Report>(handler, runtime, { token, body: {} });

      assert.equal(res.status, 200);
      const { latencyMs, ...rest } = res.body;
      assert.ok(latencyMs >= 0);
      assert.deepEqual(rest, {
        ok: true,
        mode: "test",
        account: { id: platform.id, country: "DE" },
        webhookSecretSet: true,
        connectWebhookSecretSet: true,
        connectEnabled: true,
        prices: [
          { key: "starter_monthly", priceId: prices.starter_monthly.id, found: true, active: true },
          { key: "starter_yearly", priceId: prices.starter_yearly.id, found: true, active: true },
          { key: "pro_monthly", priceId: prices.pro_monthly.id, found: true, active: true },
          { key: "pro_yearly", priceId: prices.pro_yearly.id, found: true, active: true },
        ],
      });
      assertNoSecret(res.body);

      assert.equal(double.requestsTo("GET", /^\/v1\/account$/).length, 1);
      const [list] = double.requestsTo("GET", "/v1/prices");
      assert.deepEqual(
        [...list!.query].filter(([k]) => k.startsWith("lookup_keys")).map(([, v]) => v),
        ["starter_monthly", "starter_yearly", "pro_monthly", "pro_yearly"],
      );
      assert.equal(list!.query.has("active"), false, "inactive prices are listed too");
      const [accounts] = double.requestsTo("GET", "/v1/accounts");
      assert.equal(accounts!.query.get("limit"), "1");
      assert.equal(double.requests.length, 3);
    });
  },
);

sqlTest("test-payproc reports the webhook secrets that are missing, as booleans", async () => {
  await withSetup(async (setup, token) => {
    await withRuntime(
      setup,
      { PAYPROC_WEBHOOK_SECRET: undefined, PAYPROC_CONNECT_WEBHOOK_SECRET: undefined },
      async (runtime) => {
        const res = await invoke<Report>(handler, runtime, { token });
        assert.equal(res.status, 200);
        assert.equal(res.body.ok, true, "the secrets are reported, not judged");
        assert.equal(res.body.webhookSecretSet, false);
        assert.equal(res.body.connectWebhookSecretSet, false);
      },
    );
  });
});

sqlTest("test-payproc is not ok when a plan price is missing or only inactive", async () => {
  await withSetup(async ({ double, runtime, prices }, token) => {
    double.store.remove("price", prices.starter_yearly.id);
    double.store.get("price", prices.pro_yearly.id)!.active = false;

    const res = await invoke<Report>(handler, runtime, { token });

    assert.equal(res.status, 200);
    assert.equal(res.body.ok, false);
    assert.equal(
      res.body.reason,
      `no price has lookup key starter_yearly; the price for pro_yearly (${prices.pro_yearly.id}) is inactive`,
    );
    assert.deepEqual(res.body.prices, [
      { key: "starter_monthly", priceId: prices.starter_monthly.id, found: true, active: true },
      { key: "starter_yearly", priceId: null, found: false, active: false },
      { key: "pro_monthly", priceId: prices.pro_monthly.id, found: true, active: true },
      { key: "pro_yearly", priceId: prices.pro_yearly.id, found: true, active: false },
    ]);
    assert.ok(res.body.account, "the account was still read");
  });
});

sqlTest("test-payproc tells the mode from the key's prefix", async () => {
  await withSetup(async (setup, token) => {
    const cases: Array<[string, Report["mode"]]> = [
      ["sk_live_secret_value_never_shown_4242", "live"],
      ["rk_live_secret_value_never_shown_4242", "live"],
      ["rk_test_secret_value_never_shown_4242", "test"],
      ["sk_secret_value_never_shown_4242", null],
    ];
    for (const [key, mode] of cases) {
      await withRuntime(setup, { PAYPROC_SECRET_KEY: key }, async (runtime) => {
        const res = await invoke<Report>(handler, runtime, { token });
        assert.equal(res.status, 200, key);
        assert.equal(res.body.mode, mode, key);
        assert.equal(res.body.ok, true, `the double accepts ${key}`);
        assertNoSecret(res.body, [key]);
      });
    }
  });
});

sqlTest("test-payproc without a key says so and asks the processor nothing", async () => {
  await withSetup(async (setup, token) => {
    await withRuntime(setup, { PAYPROC_SECRET_KEY: undefined }, async (runtime) => {
      const res = await invoke<Report>(handler, runtime, { token });
      assert.equal(res.status, 200);
      assert.deepEqual(res.body, {
        ok: false,
        reason: "PAYPROC_SECRET_KEY is not set",
        mode: null,
        account: null,
        webhookSecretSet: true,
        connectWebhookSecretSet: true,
        connectEnabled: null,
        prices: [],
        latencyMs: 0,
      });
      assert.equal(setup.double.requests.length, 0);
    });
  });
});

sqlTest(
  "test-payproc reports a key the processor refuses with its error type, never the key",
  async () => {
    await withSetup(async (setup, token) => {
      const key = "pk_test_publishable_pasted_by_mistake_4242";
      await withRuntime(setup, { PAYPROC_SECRET_KEY: key }, async (runtime) => {
        const res = await invoke<Report>(handler, runtime, { token });
        assert.equal(res.status, 200);
        assert.equal(res.body.ok, false);
        assert.equal(
          res.body.reason,
          "authentication failed: the processor refused the key (invalid_request_error, 401)",
        );
        assert.equal(res.body.mode, null);
        assert.equal(res.body.account, null);
        assert.equal(res.body.connectEnabled, null);
        assert.deepEqual(res.body.prices, []);
        assertNoSecret(res.body, [key, key.slice(-4)]);
        assert.equal(setup.double.requests.length, 3, "401s are not retried");
      });
    });
  },
);

sqlTest(
  "test-payproc reports an unreachable processor (connection refused) as ok: false",
  async () => {
    await withSetup(async (setup, token) => {
      const base = `http://127.0.0.1:${closedPort()}`;
      await withRuntime(setup, { PAYPROC_API_BASE: base }, async (runtime) => {
        const res = await invoke<Report>(handler, runtime, { token });
        assert.equal(res.status, 200);
        assert.equal(res.body.ok, false);
        assert.equal(
          res.body.reason,
          "processor unreachable: the connection failed (StripeConnectionError)",
        );
        assert.equal(res.body.mode, "test");
        assert.equal(res.body.account, null);
        assert.equal(res.body.connectEnabled, null);
        assert.deepEqual(res.body.prices, []);
        assertNoSecret(res.body);
      });
    });
  },
);

sqlTest("test-payproc reports a processor that does not answer in time", async () => {
  await withSetup(async (setup, token) => {
    setup.double.failNext({ path: "/v1/", delayMs: Infinity, times: 100 });
    await withRuntime(setup, { PAYPROC_TIMEOUT_MS: "200" }, async (runtime) => {
      const res = await invoke<Report>(handler, runtime, { token });
      assert.equal(res.status, 200);
      assert.equal(res.body.ok, false);
      assert.equal(
        res.body.reason,
        "processor unreachable: no answer within 200 ms (StripeConnectionError)",
      );
      assert.equal(res.body.account, null);
      assert.equal(res.body.connectEnabled, null);
    });
  });
});

sqlTest("test-payproc reports a failing price list and still reads the account", async () => {
  await withSetup(async ({ double, runtime }, token) => {
    double.failNext({ path: "/v1/prices", status: 500, times: 2 });

    const res = await invoke<Report>(handler, runtime, { token });

    assert.equal(res.status, 200);
    assert.equal(res.body.ok, false);
    assert.equal(res.body.reason, "processor unavailable: api_error (500)");
    assert.deepEqual(res.body.prices, []);
    assert.ok(res.body.account);
    assert.equal(double.requestsTo("GET", "/v1/prices").length, 2, "one retry");
  });
});

sqlTest(
  "test-payproc cannot prove Connect from an empty list: null, also without Connect",
  async () => {
    await withSetup(async ({ double, runtime }, token) => {
      const onButEmpty = await invoke<Report>(handler, runtime, { token });
      assert.equal(onButEmpty.body.connectEnabled, null);
      assert.equal(onButEmpty.body.ok, true, "Connect is reported, not judged");

      double.setPlatform({ connect: false });
      const off = await invoke<Report>(handler, runtime, { token });
      assert.equal(off.status, 200);
      assert.equal(off.body.connectEnabled, null);
      assert.equal(off.body.ok, true);
    });
  },
);

sqlTest("test-payproc reports Connect as not enabled when the processor refuses it", async () => {
  await withSetup(async ({ double, runtime }, token) => {
    double.addAccount();
    double.failNext({
      path: "/v1/accounts",
      status: 403,
      body: {
        error: {
          type: "invalid_request_error",
          message: "Only Stripe Connect platforms can work with other accounts.",
        },
      },
    });

    const res = await invoke<Report>(handler, runtime, { token });

    assert.equal(res.status, 200);
    assert.equal(res.body.connectEnabled, false);
    assert.equal(res.body.ok, true);
    assert.equal(res.body.reason, undefined);
  });
});

sqlTest(
  "test-payproc is refused to plain users and the anon key, with no processor call",
  async () => {
    await withSetup(async (setup) => {
      const user = await createUser(setup.db.pool);
      const plain = await invoke<{ error: { code: string } }>(handler, setup.runtime, {
        token: await setup.keys.userToken(user),
      });
      assert.deepEqual([plain.status, plain.body.error.code], [403, "forbidden"]);
      const anon = await invoke<{ error: { code: string } }>(handler, setup.runtime, {
        token: setup.keys.anonKey,
      });
      assert.deepEqual([anon.status, anon.body.error.code], [403, "forbidden"]);
      const none = await invoke<{ error: { code: string } }>(handler, setup.runtime);
      assert.deepEqual([none.status, none.body.error.code], [401, "unauthorized"]);
      assert.equal(setup.double.requests.length, 0);
    });
  },
);

sqlTest("test-payproc takes the anon key with LOCAL_DEV=true", async () => {
  await withSetup(async (setup) => {
    await withRuntime(setup, { LOCAL_DEV: "true" }, async (runtime) => {
      const res = await invoke<Report>(handler, runtime, { token: setup.keys.anonKey });
      assert.equal(res.status, 200);
      assert.equal(res.body.ok, true);
    });
  });
});
