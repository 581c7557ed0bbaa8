import assert from "node:assert/strict";
import { createTestDatabase, sqlTest } from "../support/db.ts";
import { asRole, createUser } from "../support/sql.ts";

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
