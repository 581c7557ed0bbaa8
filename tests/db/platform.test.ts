import assert from "node:assert/strict";
import { createTestDatabase, sqlTest } from "../support/db.ts";
import { asRole, createUser } from "../support/sql.ts";
import { sqlState } from "./core_fixtures.ts";

const db = await createTestDatabase();

sqlTest("every table in public has row level security enabled", async () => {
  const { rows } = await db.pool.query<{ relname: string }>(
    `select c.relname from pg_class c join pg_namespace n on n.oid = c.relnamespace
     where n.nspname = 'public' and c.relkind in ('r', 'p') and not c.relrowsecurity`,
  );
  assert.deepEqual(rows.map((r) => r.relname), []);
  const { rows: count } = await db.pool.query<{ n: number }>(
    `select count(*)::int as n from pg_class c join pg_namespace n on n.oid = c.relnamespace
     where n.nspname = 'public' and c.relkind in ('r', 'p')`,
  );
  assert.ok(count[0]!.n >= 2, "expected the platform tables in public");
});

sqlTest("handle_new_user() creates a profile for a new auth user", async () => {
  const user = await createUser(db.pool);
  const { rows } = await db.pool.query("select email from public.profiles where id = $1", [
    user.id,
  ]);
  assert.deepEqual(rows, [{ email: user.email }]);
});

sqlTest("has_role() is true only for granted roles", async () => {
  const admin = await createUser(db.pool, { admin: true });
  const user = await createUser(db.pool);
  const { rows } = await db.pool.query(
    "select public.has_role($1, 'admin') as a, public.has_role($2, 'admin') as b, public.has_role(null, 'admin') as c",
    [admin.id, user.id],
  );
  assert.deepEqual(rows[0], { a: true, b: false, c: false });
});

sqlTest(
  "profiles: a user reads only their own profile and cannot grant themselves admin",
  async () => {
    const alice = await createUser(db.pool);
    const bob = await createUser(db.pool);
    await asRole(db.pool, { role: "authenticated", userId: alice.id }, async (c) => {
      const { rows } = await c.query("select id from public.profiles");
      assert.deepEqual(rows, [{ id: alice.id }]);
      const updated = await c.query(
        "update public.profiles set full_name = 'x' where id = $1",
        [bob.id],
      );
      assert.equal(updated.rowCount, 0);
      await assert.rejects(
        c.query("insert into public.user_roles (user_id, role) values ($1, 'admin')", [alice.id]),
        /permission denied/,
      );
    });
    const { rows } = await db.pool.query("select public.has_role($1, 'admin') as a", [alice.id]);
    assert.equal(rows[0].a, false);
  },
);

sqlTest("anon reads no profile and is_admin() is false", async () => {
  await createUser(db.pool);
  await asRole(db.pool, { role: "anon" }, async (c) => {
    const { rows } = await c.query("select * from public.profiles");
    assert.equal(rows.length, 0);
    const admin = await c.query("select public.is_admin() as a");
    assert.equal(admin.rows[0].a, false);
  });
});

sqlTest("has_role() is not callable by clients; is_admin() answers for the caller", async () => {
  const admin = await createUser(db.pool, { admin: true });
  const user = await createUser(db.pool);
  for (
    const identity of [{ role: "authenticated" as const, userId: user.id }, {
      role: "anon" as const,
    }]
  ) {
    await asRole(db.pool, identity, async (c) => {
      await assert.rejects(
        c.query("select public.has_role($1, 'admin')", [admin.id]),
        sqlState("42501"),
        identity.role,
      );
    });
  }
  // An admin may not ask either: is_admin() is the client's question.
  await asRole(db.pool, { role: "authenticated", userId: admin.id }, async (c) => {
    const { rows } = await c.query("select public.is_admin() as a");
    assert.equal(rows[0].a, true);
    await assert.rejects(
      c.query("select public.has_role($1, 'admin')", [user.id]),
      sqlState("42501"),
    );
  });
  await asRole(db.pool, { role: "authenticated", userId: user.id }, async (c) => {
    const { rows } = await c.query("select public.is_admin() as a");
    assert.equal(rows[0].a, false);
  });
  await asRole(db.pool, { role: "service_role" }, async (c) => {
    const { rows } = await c.query(
      "select public.has_role($1, 'admin') as a, public.has_role($2, 'admin') as b",
      [admin.id, user.id],
    );
    assert.deepEqual(rows[0], { a: true, b: false });
  });
});

sqlTest("admins still read what the policies give them, and ask about any user", async () => {
  const admin = await createUser(db.pool, { admin: true });
  const alice = await createUser(db.pool);
  const bob = await createUser(db.pool);
  const { rows: listing } = await db.pool.query<{ id: string }>(
    `insert into public.listings (seller_id, title, category, asking_price)
     values ($1, 'Alice''s draft', 'saas', 10) returning id`,
    [alice.id],
  );
  await db.pool.query(
    `insert into public.subscriptions (user_id, subscription_level, subscription_status, source,
       current_period_start, current_period_end, billing_interval)
     values ($1, 'pro', 'active', 'payproc', now() - interval '1 day', now() + interval '29 days',
       'month')`,
    [alice.id],
  );
  const ask = `select
      (select count(*)::int from public.listings where id = $2) as listings,
      (select count(*)::int from public.listing_view_secure where id = $2) as view_rows,
      (select count(*)::int from public.subscriptions where user_id = $1) as subscriptions,
      public.current_plan($1) as plan,
      public.can_view_field($2, 'url', $1) as can_view,
      (select plan from public.listing_viewer($1)) as viewer_plan`;

  await asRole(db.pool, { role: "authenticated", userId: admin.id }, async (c) => {
    const { rows } = await c.query(ask, [alice.id, listing[0]!.id]);
    assert.deepEqual(rows[0], {
      listings: 1,
      view_rows: 1,
      subscriptions: 1,
      plan: "pro",
      can_view: true,
      viewer_plan: "pro",
    });
  });
  // Bob is no admin: he sees none of it and may not ask about Alice.
  await asRole(db.pool, { role: "authenticated", userId: bob.id }, async (c) => {
    const { rows } = await c.query(
      `select
        (select count(*)::int from public.listings where id = $1) as listings,
        (select count(*)::int from public.listing_view_secure where id = $1) as view_rows`,
      [listing[0]!.id],
    );
    assert.deepEqual(rows[0], { listings: 0, view_rows: 0 });
    for (
      const sql of ["select public.current_plan($1)", "select * from public.listing_viewer($1)"]
    ) {
      await c.query("savepoint s");
      await assert.rejects(
        c.query(sql, [alice.id]),
        sqlState("42501"),
        sql,
      );
      await c.query("rollback to savepoint s");
    }
  });
});
