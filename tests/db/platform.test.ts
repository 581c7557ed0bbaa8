import assert from "node:assert/strict";
import pg from "pg";
import { postgresRoleUrl } from "../../local/db/postgres.ts";
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

sqlTest(
  "postgres is, as on hosted, no superuser: it logs in, bypasses RLS, may switch into the API roles",
  async () => {
    const { rows } = await db.pool.query(
      `select rolsuper, rolcanlogin, rolcreatedb, rolcreaterole, rolreplication, rolbypassrls
       from pg_roles where rolname = 'postgres'`,
    );
    assert.deepEqual(rows, [{
      rolsuper: false,
      rolcanlogin: true,
      rolcreatedb: true,
      rolcreaterole: true,
      rolreplication: true,
      rolbypassrls: true,
    }]);
    const { rows: members } = await db.pool.query<{ role: string; member: boolean }>(
      `select r as role, pg_has_role('postgres', r, 'member') as member
       from unnest(array['anon', 'authenticated', 'service_role', 'supabase_admin',
         'supabase_auth_admin', 'supabase_storage_admin', 'supabase_realtime_admin']) as r`,
    );
    assert.deepEqual(
      Object.fromEntries(members.map((m) => [m.role, m.member])),
      {
        anon: true,
        authenticated: true,
        service_role: true,
        supabase_admin: false,
        supabase_auth_admin: false,
        supabase_storage_admin: false,
        supabase_realtime_admin: false,
      },
    );
    const { rows: superusers } = await db.pool.query(
      "select rolname from pg_roles where rolsuper order by 1",
    );
    assert.deepEqual(superusers, [{ rolname: "supabase_admin" }]);
    const login = new pg.Client({ connectionString: postgresRoleUrl(db.url) });
    await login.connect();
    try {
      const { rows: who } = await login.query(
        "select current_user as name, current_setting('is_superuser') as superuser",
      );
      assert.deepEqual(who, [{ name: "postgres", superuser: "off" }]);
    } finally {
      await login.end();
    }
  },
);

sqlTest(
  "the platform's schemas and tables belong to the platform's roles, what the migrations made to postgres",
  async () => {
    const { rows: schemas } = await db.pool.query<{ nspname: string; owner: string }>(
      `select nspname, pg_get_userbyid(nspowner) as owner from pg_namespace
       where nspname in ('auth', 'storage', 'realtime', 'extensions', 'supabase_migrations')
       order by 1`,
    );
    assert.deepEqual(schemas, [
      { nspname: "auth", owner: "supabase_admin" },
      { nspname: "extensions", owner: "postgres" },
      { nspname: "realtime", owner: "supabase_admin" },
      { nspname: "storage", owner: "supabase_admin" },
      { nspname: "supabase_migrations", owner: "postgres" },
    ]);
    const { rows: tables } = await db.pool.query<{ name: string; owner: string }>(
      `select c.oid::regclass::text as name, pg_get_userbyid(c.relowner) as owner from pg_class c
       where c.oid in ('auth.users'::regclass, 'storage.buckets'::regclass,
         'storage.objects'::regclass, 'realtime.messages'::regclass)
       order by 1`,
    );
    assert.deepEqual(tables, [
      { name: "auth.users", owner: "supabase_auth_admin" },
      { name: "realtime.messages", owner: "supabase_realtime_admin" },
      { name: "storage.buckets", owner: "supabase_storage_admin" },
      { name: "storage.objects", owner: "supabase_storage_admin" },
    ]);
    const { rows: notPostgres } = await db.pool.query(
      `select c.relname, pg_get_userbyid(c.relowner) as owner from pg_class c
       join pg_namespace n on n.oid = c.relnamespace
       where n.nspname = 'public' and c.relkind in ('r', 'p', 'v', 'm', 'S')
         and c.relowner <> 'postgres'::regrole`,
    );
    assert.deepEqual(notPostgres, []);
    const { rows: database } = await db.pool.query(
      "select pg_get_userbyid(datdba) as owner from pg_database where datname = current_database()",
    );
    assert.deepEqual(database, [{ owner: "postgres" }]);
  },
);

sqlTest(
  "postgres uses the platform's tables as on hosted: all rows and triggers, no ownership",
  async () => {
    const { rows } = await db.pool.query(
      `select
         has_table_privilege('postgres', 'auth.users', 'SELECT, INSERT, UPDATE, DELETE') as auth_rows,
         has_table_privilege('postgres', 'auth.users', 'TRIGGER') as auth_trigger,
         has_table_privilege('postgres', 'auth.users', 'REFERENCES') as auth_references,
         has_table_privilege('postgres', 'storage.objects', 'SELECT WITH GRANT OPTION') as storage_grant,
         has_table_privilege('postgres', 'realtime.messages', 'INSERT') as realtime_insert,
         has_schema_privilege('postgres', 'storage', 'CREATE') as storage_create,
         has_schema_privilege('postgres', 'auth', 'CREATE') as auth_create,
         pg_has_role('postgres', 'supabase_storage_admin', 'usage') as storage_owner`,
    );
    assert.deepEqual(rows, [{
      auth_rows: true,
      auth_trigger: true,
      auth_references: true,
      storage_grant: true,
      realtime_insert: true,
      storage_create: false,
      auth_create: false,
      storage_owner: false,
    }]);
  },
);
