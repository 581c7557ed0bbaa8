import assert from "node:assert/strict";
import { SEED_PATH } from "../../local/paths.ts";
import { createTestDatabase, sqlTest } from "../support/db.ts";
import { asRole } from "../support/sql.ts";

const db = await createTestDatabase();
const seed = await Deno.readTextFile(SEED_PATH);
const FREE = "00000000-0000-4000-8000-000000000002";
const PRO = "00000000-0000-4000-8000-000000000004";

sqlTest(
  "seed.sql applies to a migrated database, twice, with every plan and review state",
  async () => {
    await db.pool.query(seed);
    await db.pool.query(seed);
    const { rows: states } = await db.pool.query(
      "select review_status, count(*)::int as n from public.listings group by 1 order by 1",
    );
    assert.deepEqual(states, [
      { review_status: "approved", n: 12 },
      { review_status: "archived", n: 1 },
      { review_status: "draft", n: 1 },
      { review_status: "pending_review", n: 1 },
      { review_status: "rejected", n: 1 },
    ]);
    const { rows: plans } = await db.pool.query(
      `select u.email, public.current_plan(u.id) as plan from auth.users u
     where u.email like '%@example.com' order by u.email`,
    );
    assert.deepEqual(plans.map((r) => `${r.email}:${r.plan}`), [
      "admin@example.com:free",
      "free@example.com:free",
      "granted@example.com:starter",
      "pastdue@example.com:free",
      "pro@example.com:pro",
      "starter@example.com:starter",
    ]);
  },
);

sqlTest("seed.sql shows the blur policy at work: free sees less than pro", async () => {
  await db.pool.query(seed);
  const page = (userId: string) =>
    asRole(db.pool, { role: "authenticated", userId }, async (c) =>
      (await c.query(
        "select title, url, blurred_fields from public.listing_view_secure where review_status = 'approved' order by created_at desc limit 9",
      )).rows);
  const free = await page(FREE);
  const pro = await page(PRO);
  assert.equal(free.length, 9);
  assert.ok(free.every((r) => r.url === null && r.blurred_fields.includes("url")));
  assert.ok(pro.every((r) => r.url !== null && r.blurred_fields.length === 0));
});
