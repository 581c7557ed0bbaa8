import assert from "node:assert/strict";
import { createTestDatabase, sqlTest } from "../support/db.ts";
import { asRole, createUser } from "../support/sql.ts";
import { createListing, rejectsWith } from "./core_fixtures.ts";

const db = await createTestDatabase();

const lister = await createUser(db.pool);
const drafter = await createUser(db.pool);
const onboarded = await createUser(db.pool);
const stranger = await createUser(db.pool);
const admin = await createUser(db.pool, { admin: true });
await createListing(db.pool, lister.id, "approved");
await createListing(db.pool, drafter.id, "draft");
await db.pool.query(
  "insert into public.connect_accounts (user_id, payproc_account_id) values ($1, $2)",
  [onboarded.id, `acct_${crypto.randomUUID().slice(0, 8)}`],
);

sqlTest(
  "is_seller() is true for a user with a listing or a payout account, false otherwise",
  async () => {
    const { rows } = await db.pool.query(
      `select public.is_seller($1) as lister, public.is_seller($2) as drafter,
            public.is_seller($3) as onboarded, public.is_seller($4) as stranger,
            public.is_seller($5) as admin, public.is_seller($6) as unknown,
            public.is_seller(null) as null_user`,
      [lister.id, drafter.id, onboarded.id, stranger.id, admin.id, crypto.randomUUID()],
    );
    assert.deepEqual(rows[0], {
      lister: true,
      drafter: true,
      onboarded: true,
      stranger: false,
      admin: false,
      unknown: false,
      null_user: false,
    });
  },
);

sqlTest("is_seller() follows the rows: a first listing makes a seller", async () => {
  const user = await createUser(db.pool);
  const ask = async () =>
    (await db.pool.query("select public.is_seller($1) as ok", [user.id])).rows[0].ok;
  assert.equal(await ask(), false);
  await createListing(db.pool, user.id, "pending_review");
  assert.equal(await ask(), true);
});

sqlTest(
  "is_seller() lets a client ask only about itself (admins about anyone); anon may not call it",
  async () => {
    await asRole(db.pool, { role: "authenticated", userId: onboarded.id }, async (c) => {
      const own = await c.query("select public.is_seller($1) as ok", [onboarded.id]);
      assert.equal(own.rows[0].ok, true);
      await rejectsWith(c, "42501", "select public.is_seller($1)", [lister.id]);
    });
    await asRole(db.pool, { role: "authenticated", userId: stranger.id }, async (c) => {
      const own = await c.query("select public.is_seller($1) as ok", [stranger.id]);
      assert.equal(own.rows[0].ok, false);
      await rejectsWith(c, "42501", "select public.is_seller($1)", [lister.id]);
    });
    await asRole(db.pool, { role: "authenticated", userId: admin.id }, async (c) => {
      const other = await c.query("select public.is_seller($1) as ok", [lister.id]);
      assert.equal(other.rows[0].ok, true);
    });
    await asRole(db.pool, { role: "anon" }, async (c) => {
      await rejectsWith(c, "42501", "select public.is_seller($1)", [lister.id]);
    });
    await asRole(db.pool, { role: "service_role" }, async (c) => {
      const { rows } = await c.query("select public.is_seller($1) as ok", [drafter.id]);
      assert.equal(rows[0].ok, true);
    });
  },
);

sqlTest("is_seller(): definer rights, empty search_path, documented", async () => {
  const { rows } = await db.pool.query(
    `select p.prosecdef as definer, p.provolatile as volatility, p.proconfig as config,
            obj_description(p.oid, 'pg_proc') is not null as commented
     from pg_proc p where p.oid = 'public.is_seller(uuid)'::regprocedure`,
  );
  assert.deepEqual(rows[0], {
    definer: true,
    volatility: "s",
    config: ['search_path=""'],
    commented: true,
  });
});
