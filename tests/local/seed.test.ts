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

sqlTest(
  "seed.sql shows a confidential listing: its revenue only for the buyer let in, and their conversation",
  async () => {
    await db.pool.query(seed);
    const SEO_TOOL = "10000000-0000-4000-8000-000000000008";
    const PAST_DUE = "00000000-0000-4000-8000-000000000006";
    const row = (userId: string) =>
      asRole(db.pool, { role: "authenticated", userId }, async (c) =>
        (await c.query(
          "select monthly_revenue, access_mode, confidential_fields_hidden from public.listing_view_secure where id = $1",
          [SEO_TOOL],
        )).rows[0]);
    // Both on the free plan, which shows revenue: only approved access shows it here.
    assert.deepEqual(await row(FREE), {
      monthly_revenue: "6200.00",
      access_mode: "nda",
      confidential_fields_hidden: [],
    });
    assert.deepEqual(await row(PAST_DUE), {
      monthly_revenue: null,
      access_mode: "nda",
      confidential_fields_hidden: ["monthly_revenue", "seller", "url"],
    });
    const messages = await asRole(
      db.pool,
      { role: "authenticated", userId: FREE },
      async (c) =>
        (await c.query(
          `select m.body from public.messages m join public.conversations c on c.id = m.conversation_id
       where c.listing_id = $1 order by m.created_at`,
          [SEO_TOOL],
        )).rows.map((r) => r.body),
    );
    assert.equal(messages.length, 2);
  },
);

sqlTest(
  "seed.sql holds a letter of intent: two versions, and a deal in due diligence",
  async () => {
    await db.pool.query(seed);
    await db.pool.query(seed);
    const { rows } = await db.pool.query(
      `select o.status, o.proposed_by, d.status as deal_status, d.terms->>'cash_at_close' as cash
     from public.offers o left join public.deals d on d.id = o.deal_id
     where o.listing_id = '10000000-0000-4000-8000-000000000002' order by o.created_at, o.id`,
    );
    assert.deepEqual(rows, [
      { status: "countered", proposed_by: "buyer", deal_status: null, cash: null },
      { status: "accepted", proposed_by: "seller", deal_status: "in_diligence", cash: "19000.00" },
    ]);
  },
);
