import assert from "node:assert/strict";
import { createTestDatabase, sqlTest } from "../support/db.ts";
import { asRole, createUser } from "../support/sql.ts";
import { rejectsWith, setSubscription, sqlState } from "./core_fixtures.ts";

const db = await createTestDatabase();

async function planOf(userId: string | null): Promise<string> {
  const { rows } = await db.pool.query<{ plan: string }>(
    "select public.current_plan($1) as plan",
    [userId],
  );
  return rows[0]!.plan;
}

const DAY = 86_400_000;

sqlTest("current_plan() is unauth for a null user and free without a subscription", async () => {
  const user = await createUser(db.pool);
  assert.equal(await planOf(null), "unauth");
  assert.equal(await planOf(user.id), "free");
  assert.equal(await planOf(crypto.randomUUID()), "free");
});

sqlTest("current_plan() gives the level only while active or trialing", async () => {
  const expected: Record<string, "level" | "free"> = {
    active: "level",
    trialing: "level",
    past_due: "free",
    canceled: "free",
    unpaid: "free",
    incomplete: "free",
    incomplete_expired: "free",
    paused: "free",
  };
  for (const level of ["free", "starter", "pro"] as const) {
    for (const [status, outcome] of Object.entries(expected)) {
      const user = await createUser(db.pool);
      await setSubscription(db.pool, user.id, level, { status });
      assert.equal(
        await planOf(user.id),
        outcome === "level" ? level : "free",
        `${level} subscription with status ${status}`,
      );
    }
  }
});

sqlTest("current_plan() is free once the period has ended", async () => {
  const user = await createUser(db.pool);
  await setSubscription(db.pool, user.id, "pro", { periodEnd: new Date(Date.now() - 1000) });
  assert.equal(await planOf(user.id), "free");
  await setSubscription(db.pool, user.id, "pro", {
    status: "trialing",
    periodEnd: new Date(Date.now() - DAY),
  });
  assert.equal(await planOf(user.id), "free");
  await setSubscription(db.pool, user.id, "pro", { periodEnd: new Date(Date.now() + 60_000) });
  assert.equal(await planOf(user.id), "pro");
  await setSubscription(db.pool, user.id, "starter", { periodEnd: null });
  assert.equal(await planOf(user.id), "starter");
});

sqlTest("current_plan() honours grants until they lapse or are revoked", async () => {
  const open = await createUser(db.pool);
  await setSubscription(db.pool, open.id, "starter", { source: "grant", periodEnd: null });
  assert.equal(await planOf(open.id), "starter");

  const running = await createUser(db.pool);
  await setSubscription(db.pool, running.id, "pro", {
    source: "grant",
    periodEnd: new Date(Date.now() + DAY),
  });
  assert.equal(await planOf(running.id), "pro");

  const lapsed = await createUser(db.pool);
  await setSubscription(db.pool, lapsed.id, "pro", {
    source: "grant",
    periodEnd: new Date(Date.now() - DAY),
  });
  assert.equal(await planOf(lapsed.id), "free");

  const revoked = await createUser(db.pool);
  await setSubscription(db.pool, revoked.id, "starter", {
    source: "grant",
    status: "canceled",
    periodEnd: null,
  });
  assert.equal(await planOf(revoked.id), "free");
});

sqlTest(
  "current_plan() lets a client ask only about itself; admins and the service role ask about anyone",
  async () => {
    const alice = await createUser(db.pool);
    const bob = await createUser(db.pool);
    const admin = await createUser(db.pool, { admin: true });
    await setSubscription(db.pool, bob.id, "pro");

    await asRole(db.pool, { role: "authenticated", userId: alice.id }, async (c) => {
      const own = await c.query("select public.current_plan($1) as plan", [alice.id]);
      assert.equal(own.rows[0].plan, "free");
      const anonymous = await c.query("select public.current_plan(null) as plan");
      assert.equal(anonymous.rows[0].plan, "unauth");
      await assert.rejects(
        c.query("select public.current_plan($1)", [bob.id]),
        sqlState("42501"),
      );
    });
    await asRole(db.pool, { role: "anon" }, async (c) => {
      await assert.rejects(c.query("select public.current_plan($1)", [bob.id]), sqlState("42501"));
    });
    await asRole(db.pool, { role: "authenticated", userId: admin.id }, async (c) => {
      const { rows } = await c.query("select public.current_plan($1) as plan", [bob.id]);
      assert.equal(rows[0].plan, "pro");
    });
    await asRole(db.pool, { role: "service_role" }, async (c) => {
      const { rows } = await c.query("select public.current_plan($1) as plan", [bob.id]);
      assert.equal(rows[0].plan, "pro");
    });
  },
);

sqlTest(
  "subscriptions: one row per user, checked levels, statuses, sources and intervals",
  async () => {
    const user = await createUser(db.pool);
    await setSubscription(db.pool, user.id, "starter");
    await assert.rejects(
      db.pool.query(
        "insert into public.subscriptions (user_id, subscription_level) values ($1, 'pro')",
        [user.id],
      ),
      sqlState("23505"),
    );
    const other = await createUser(db.pool);
    for (
      const [column, value] of [
        ["subscription_level", "gold"],
        ["subscription_status", "expired"],
        ["source", "gift"],
        ["billing_interval", "week"],
      ]
    ) {
      await assert.rejects(
        db.pool.query(
          `insert into public.subscriptions (user_id, ${column}) values ($1, $2)`,
          [other.id, value],
        ),
        sqlState("23514"),
        `${column} = ${value}`,
      );
    }
    await assert.rejects(
      db.pool.query(
        `insert into public.subscriptions (user_id, source, payproc_subscription_id)
       values ($1, 'grant', 'sub_123')`,
        [other.id],
      ),
      sqlState("23514"),
    );
  },
);

sqlTest("subscriptions.updated_at moves on every change", async () => {
  const user = await createUser(db.pool);
  await setSubscription(db.pool, user.id, "starter");
  const read = async () =>
    (await db.pool.query<{ updated_at: Date }>(
      "select updated_at from public.subscriptions where user_id = $1",
      [user.id],
    )).rows[0]!.updated_at.getTime();
  const first = await read();
  await db.pool.query(
    "update public.subscriptions set cancel_at_period_end = true where user_id = $1",
    [user.id],
  );
  const second = await read();
  assert.ok(second > first, "updated_at moved on a change");
  // A sync that writes the same values still shows up.
  await db.pool.query(
    "update public.subscriptions set cancel_at_period_end = true where user_id = $1",
    [user.id],
  );
  assert.ok(await read() > second, "updated_at moved on a rewrite");
});

sqlTest("subscriptions RLS: a user reads only their own row and writes nothing", async () => {
  const alice = await createUser(db.pool);
  const bob = await createUser(db.pool);
  await setSubscription(db.pool, alice.id, "starter");
  await setSubscription(db.pool, bob.id, "pro");

  await asRole(db.pool, { role: "authenticated", userId: alice.id }, async (c) => {
    const { rows } = await c.query("select user_id, subscription_level from public.subscriptions");
    assert.deepEqual(rows, [{ user_id: alice.id, subscription_level: "starter" }]);
    await rejectsWith(
      c,
      "42501",
      "update public.subscriptions set subscription_level = 'pro' where user_id = $1",
      [alice.id],
    );
    await rejectsWith(c, "42501", "delete from public.subscriptions where user_id = $1", [bob.id]);
    await rejectsWith(
      c,
      "42501",
      "insert into public.subscriptions (user_id, subscription_level) values ($1, 'pro')",
      [alice.id],
    );
  });
  await asRole(db.pool, { role: "anon" }, async (c) => {
    await rejectsWith(c, "42501", "select * from public.subscriptions");
    await rejectsWith(
      c,
      "42501",
      "insert into public.subscriptions (user_id, subscription_level) values ($1, 'pro')",
      [bob.id],
    );
  });
  const admin = await createUser(db.pool, { admin: true });
  await asRole(db.pool, { role: "authenticated", userId: admin.id }, async (c) => {
    const { rows } = await c.query(
      "select count(*)::int as n from public.subscriptions where user_id = any($1)",
      [[alice.id, bob.id]],
    );
    assert.equal(rows[0].n, 2);
  });
  const { rows } = await db.pool.query(
    "select subscription_level from public.subscriptions where user_id = $1",
    [alice.id],
  );
  assert.equal(rows[0].subscription_level, "starter");
});
