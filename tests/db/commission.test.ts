import assert from "node:assert/strict";
import { createTestDatabase, sqlTest } from "../support/db.ts";
import { asRole, createUser, type TestUser } from "../support/sql.ts";
import { rejectsWith, setSubscription, sqlState } from "./core_fixtures.ts";

const db = await createTestDatabase();

const sellers: Record<"free" | "starter" | "pro", TestUser> = {
  free: await createUser(db.pool),
  starter: await createUser(db.pool),
  pro: await createUser(db.pool),
};
await setSubscription(db.pool, sellers.starter.id, "starter");
await setSubscription(db.pool, sellers.pro.id, "pro");

async function commission(amount: string | null, sellerId: string | null): Promise<string> {
  const { rows } = await db.pool.query<{ fee: string }>(
    "select public.calculate_commission($1, $2) as fee",
    [amount, sellerId],
  );
  return rows[0]!.fee;
}

sqlTest("commission_tiers is seeded with a rate per seller plan", async () => {
  const { rows } = await db.pool.query(
    "select plan, rate from public.commission_tiers order by rate",
  );
  assert.deepEqual(rows, [
    { plan: "pro", rate: "0.0500" },
    { plan: "starter", rate: "0.0700" },
    { plan: "free", rate: "0.1000" },
  ]);
});

sqlTest("calculate_commission() applies the rate of the seller's tier", async () => {
  assert.equal(await commission("1000.00", sellers.free.id), "100.00");
  assert.equal(await commission("1000.00", sellers.starter.id), "70.00");
  assert.equal(await commission("1000.00", sellers.pro.id), "50.00");
  // A seller without a subscription row, or unknown, is on free.
  assert.equal(await commission("1000.00", crypto.randomUUID()), "100.00");
});

sqlTest("calculate_commission() rounds half a cent up", async () => {
  // 10 % of 0.25 = 0.025; 7 % of 0.50 = 0.035; 5 % of 0.10 = 0.005; 5 % of 0.30 = 0.015
  assert.equal(await commission("0.25", sellers.free.id), "0.03");
  assert.equal(await commission("0.50", sellers.starter.id), "0.04");
  assert.equal(await commission("0.10", sellers.pro.id), "0.01");
  assert.equal(await commission("0.30", sellers.pro.id), "0.02");
  // Just under half a cent goes down: 5 % of 0.09 = 0.0045; 7 % of 1.07 = 0.0749
  assert.equal(await commission("0.09", sellers.pro.id), "0.00");
  assert.equal(await commission("1.07", sellers.starter.id), "0.07");
  // 7 % of 12345.65 = 864.1955
  assert.equal(await commission("12345.65", sellers.starter.id), "864.20");
});

sqlTest("calculate_commission() of zero is zero", async () => {
  for (const seller of Object.values(sellers)) {
    assert.equal(await commission("0", seller.id), "0.00");
  }
});

sqlTest("calculate_commission() refuses null and negative amounts and a null seller", async () => {
  await assert.rejects(commission(null, sellers.free.id), (error: unknown) => {
    sqlState("22004")(error);
    assert.match((error as Error).message, /Cannot calculate commission: amount is null/);
    return true;
  });
  await assert.rejects(commission("-0.01", sellers.free.id), (error: unknown) => {
    sqlState("22023")(error);
    assert.match((error as Error).message, /amount "-0.01" is negative/);
    return true;
  });
  await assert.rejects(commission("10", null), sqlState("22004"));
});

sqlTest("calculate_commission() falls back to free when the seller's plan has lapsed", async () => {
  const lapsed = await createUser(db.pool);
  await setSubscription(db.pool, lapsed.id, "pro", { periodEnd: new Date(Date.now() - 1000) });
  assert.equal(await commission("100", lapsed.id), "10.00");
});

sqlTest("commission_tiers: admins edit rates and calculate_commission() follows", async () => {
  const admin = await createUser(db.pool, { admin: true });
  await asRole(db.pool, { role: "authenticated", userId: admin.id }, async (c) => {
    const updated = await c.query(
      "update public.commission_tiers set rate = 0.04 where plan = 'pro'",
    );
    assert.equal(updated.rowCount, 1);
    const { rows } = await c.query("select public.calculate_commission(100, $1) as fee", [
      sellers.pro.id,
    ]);
    assert.equal(rows[0].fee, "4.00");
    await rejectsWith(
      c,
      "23514",
      "update public.commission_tiers set rate = 1.5 where plan = 'pro'",
    );
    await rejectsWith(c, "42501", "delete from public.commission_tiers");
  });
});

sqlTest(
  "commission_tiers RLS and calculate_commission() access: users read rates and their own fee only",
  async () => {
    const { id: sellerId } = sellers.starter;
    await asRole(db.pool, { role: "authenticated", userId: sellerId }, async (c) => {
      const tiers = await c.query("select count(*)::int as n from public.commission_tiers");
      assert.equal(tiers.rows[0].n, 3);
      const updated = await c.query(
        "update public.commission_tiers set rate = 0 where plan = 'starter'",
      );
      assert.equal(updated.rowCount, 0);
      const own = await c.query("select public.calculate_commission(100, $1) as fee", [sellerId]);
      assert.equal(own.rows[0].fee, "7.00");
      await rejectsWith(c, "42501", "select public.calculate_commission(100, $1)", [
        sellers.pro.id,
      ]);
      await rejectsWith(
        c,
        "42501",
        "insert into public.commission_tiers (plan, rate) values ('free', 0)",
      );
    });
    await asRole(db.pool, { role: "anon" }, async (c) => {
      const tiers = await c.query("select count(*)::int as n from public.commission_tiers");
      assert.equal(tiers.rows[0].n, 3);
      await rejectsWith(c, "42501", "update public.commission_tiers set rate = 0");
      await rejectsWith(c, "42501", "select public.calculate_commission(100, $1)", [sellerId]);
    });
    await asRole(db.pool, { role: "service_role" }, async (c) => {
      const { rows } = await c.query("select public.calculate_commission(100, $1) as fee", [
        sellers.pro.id,
      ]);
      assert.equal(rows[0].fee, "5.00");
    });
    const { rows } = await db.pool.query(
      "select rate from public.commission_tiers where plan = 'starter'",
    );
    assert.equal(rows[0].rate, "0.0700");
  },
);
