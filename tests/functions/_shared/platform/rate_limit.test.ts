import assert from "node:assert/strict";
import { loadFunctions } from "../../../../local/functions.ts";
import type { Access } from "../../../../shared/access.ts";
import { FUNCTION_NAMES, FUNCTIONS } from "../../../../shared/functions.ts";
import customerPortal from "../../../../supabase/functions/customer-portal/handler.ts";
import { Env } from "../../../../supabase/functions/_shared/platform/env.ts";
import { Runtime } from "../../../../supabase/functions/_shared/platform/runtime.ts";
import { billingSetup, payprocEnv } from "../../../support/billing.ts";
import { sqlTest } from "../../../support/db.ts";
import { invoke, testRuntime } from "../../../support/runtime.ts";
import { createUser } from "../../../support/sql.ts";

const functions = await loadFunctions();

/** Access rules whose callers are users, each counted on their own. */
const USER_FACING: readonly Access[] = [
  "user",
  "seller",
  "deal-participant",
  "deal-participant-or-admin",
];

/** The functions that declare a limit, with it. */
function declaredLimits(): Map<string, { limit: number; windowSeconds: number }> {
  const limits = new Map<string, { limit: number; windowSeconds: number }>();
  for (const [name, fn] of functions) {
    if (fn.definition.rateLimit) limits.set(name, { ...fn.definition.rateLimit });
  }
  return limits;
}

Deno.test("every user-facing catalog function declares a per-user rate limit", () => {
  const userFacing = FUNCTION_NAMES.filter((name) =>
    USER_FACING.includes(FUNCTIONS[name].access as Access)
  );
  assert.ok(userFacing.length >= 12, "the catalog's user, seller and deal functions");
  for (const name of userFacing) {
    const fn = functions.get(name);
    assert.ok(fn, `${name} has a handler`);
    const limit = fn.definition.rateLimit;
    assert.ok(limit, `${name} declares a rateLimit`);
    assert.ok(Number.isInteger(limit.limit) && limit.limit >= 1, name);
    assert.ok(Number.isInteger(limit.windowSeconds) && limit.windowSeconds >= 1, name);
  }
});

Deno.test("the declared limits are part of the frozen definition", () => {
  const fn = functions.get("create-checkout")!;
  assert.deepEqual(fn.definition.rateLimit, { limit: 10, windowSeconds: 60 });
  assert.ok(Object.isFrozen(fn.definition));
  assert.ok(Object.isFrozen(fn.definition.rateLimit));
  assert.equal(functions.get("payproc-webhook")!.definition.rateLimit, undefined);
  assert.equal("rateLimit" in functions.get("get-price-id")!.definition, false);
});

Deno.test("RATE_LIMITS parses name=limit/windowSeconds pairs", () => {
  assert.deepEqual(
    new Env({ RATE_LIMITS: "create-checkout=20/60, payment-status = 120 / 60," }).values
      .RATE_LIMITS,
    [
      { name: "create-checkout", limit: 20, windowSeconds: 60 },
      { name: "payment-status", limit: 120, windowSeconds: 60 },
    ],
  );
  assert.deepEqual(new Env({}).values.RATE_LIMITS, []);
  assert.deepEqual(new Env({ RATE_LIMITS: "" }).values.RATE_LIMITS, []);
  assert.equal(new Env({}).has("RATE_LIMITS"), false);
  assert.equal(new Env({ RATE_LIMITS: "create-checkout=1/1" }).has("RATE_LIMITS"), true);
});

Deno.test("a malformed RATE_LIMITS fails the configuration, naming the variable", () => {
  for (
    const value of [
      "create-checkout",
      "create-checkout=20",
      "create-checkout=20/",
      "=20/60",
      "create-checkout=0/60",
      "create-checkout=20/0",
      "create-checkout=-1/60",
      "create-checkout=1.5/60",
      "create-checkout=20/60s",
      "create-checkout=2147483648/60",
      "Create_Checkout=20/60",
      "create-checkout=20/60;payment-status=1/1",
      "create-checkout=20/60,create-checkout=30/60",
    ]
  ) {
    assert.throws(() => new Env({ RATE_LIMITS: value }), /malformed "RATE_LIMITS"/, value);
    assert.throws(() => new Runtime({ RATE_LIMITS: value }), /"RATE_LIMITS"/, value);
  }
});

Deno.test("RATE_LIMITS naming a function outside the catalog fails every function when it is built", () => {
  const runtime = new Runtime({ RATE_LIMITS: "create-checkout=20/60,create-chekout=20/60" });
  for (const name of ["customer-portal", "create-checkout", "payproc-webhook"]) {
    assert.throws(
      () => functions.get(name)!.with(runtime),
      new RegExp(
        `Cannot define function "${name}": RATE_LIMITS names "create-chekout", which is not in the catalog`,
      ),
    );
  }
});

Deno.test("RATE_LIMITS naming a function that declares no limit fails that function when it is built", () => {
  const unlimited = [...functions].filter(([, fn]) => !fn.definition.rateLimit);
  assert.ok(unlimited.some(([name]) => name === "payproc-webhook"));
  assert.ok(unlimited.some(([name]) => name === "get-price-id"));
  for (const [name, fn] of unlimited) {
    const runtime = new Runtime({ RATE_LIMITS: `${name}=5/60` });
    assert.throws(
      () => fn.with(runtime),
      new RegExp(`Cannot define function "${name}": RATE_LIMITS sets a limit for it`),
      name,
    );
    // Only the function it names fails.
    assert.doesNotThrow(() => customerPortal.with(runtime), name);
  }
  for (const [name, fn] of functions) {
    if (!fn.definition.rateLimit) continue;
    assert.doesNotThrow(() => fn.with(new Runtime({ RATE_LIMITS: `${name}=5/60` })), name);
  }
});

sqlTest("a RATE_LIMITS override changes the limit a function enforces", async () => {
  const setup = await billingSetup({ RATE_LIMITS: "customer-portal=2/60" });
  const { db, double, keys } = setup;
  try {
    const withCustomer = async () => {
      const user = await createUser(db.pool);
      const customer = double.addCustomer({ email: user.email, metadata: { user_id: user.id } });
      await db.pool.query(
        "insert into public.subscriptions (user_id, payproc_customer_id) values ($1, $2)",
        [user.id, customer.id],
      );
      return await keys.userToken(user);
    };
    const token = await withCustomer();
    const statuses = [];
    for (let i = 0; i < 3; i++) {
      statuses.push((await invoke(customerPortal, setup.runtime, { token })).status);
    }
    assert.deepEqual(statuses, [200, 200, 429]);
    const refused = await invoke<{
      error: {
        code: string;
        details: { limit: number; windowSeconds: number; retryAfter: number };
      };
    }>(customerPortal, setup.runtime, { token });
    assert.equal(refused.status, 429);
    assert.equal(refused.body.error.code, "rate_limited");
    const retryAfter = Number(refused.headers.get("retry-after"));
    assert.ok(retryAfter >= 1 && retryAfter <= 60, String(retryAfter));
    assert.deepEqual(refused.body.error.details, { limit: 2, windowSeconds: 60, retryAfter });

    // The declared limit (10 a minute) still applies on a runtime without the override.
    const plain = await testRuntime(db, payprocEnv(double));
    try {
      const other = await withCustomer();
      for (let i = 0; i < 3; i++) {
        assert.equal((await invoke(customerPortal, plain, { token: other })).status, 200);
      }
    } finally {
      await plain.close();
    }
  } finally {
    await setup.close();
  }
});

/** The rows of the Markdown table under `## Rate limits` in docs/functions.md. */
async function documentedRateLimitRows(): Promise<string[][]> {
  const page = await Deno.readTextFile(new URL("../../../../docs/functions.md", import.meta.url));
  const lines = page.split("\n");
  const heading = lines.findIndex((line) => line.trim() === "## Rate limits");
  assert.ok(heading >= 0, 'docs/functions.md has a "## Rate limits" section');
  const start = lines.findIndex((line, i) => i > heading && line.startsWith("|"));
  assert.ok(start > heading, "the section has a table");
  assert.ok(
    !lines.slice(heading + 1, start).some((line) => line.startsWith("#")),
    "the table is in the section",
  );
  const rows: string[][] = [];
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith("|")) break;
    rows.push(line.split("|").slice(1, -1).map((cell) => cell.trim()));
  }
  return rows;
}

Deno.test("the documented rate-limit table lists exactly the declared limits", async () => {
  const rows = await documentedRateLimitRows();
  const documented = new Map<string, { limit: number; windowSeconds: number }>();
  for (const [fn, calls, window, why] of rows) {
    const name = /^`([a-z0-9-]+)`$/.exec(fn ?? "")?.[1];
    if (!name) continue; // Limits kept elsewhere (the hourly analysis allowance).
    assert.match(calls ?? "", /^\d+$/, `${name}: calls`);
    const seconds = /^(\d+) s$/.exec(window ?? "")?.[1];
    assert.ok(seconds, `${name}: the window is "<seconds> s", not "${window}"`);
    assert.match(why ?? "", /^(processor|AI|storage)\b/, `${name}: why`);
    assert.ok(!documented.has(name), `${name} is listed once`);
    documented.set(name, { limit: Number(calls), windowSeconds: Number(seconds) });
  }
  const declared = declaredLimits();
  assert.deepEqual(
    [...documented].sort(([a], [b]) => a.localeCompare(b)),
    [...declared].sort(([a], [b]) => a.localeCompare(b)),
  );
  assert.ok(
    rows.some(([fn, calls]) =>
      fn?.startsWith("`analyze-project`") && calls?.includes("ANALYZE_RATE_PER_HOUR")
    ),
    "the hourly analysis allowance has its row",
  );
});
