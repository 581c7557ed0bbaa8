import assert from "node:assert/strict";
import { createTestDatabase, sqlTest } from "../support/db.ts";
import { asRole, createUser } from "../support/sql.ts";
import { createListing, rejectsWith, type ReviewStatus, sqlState } from "./core_fixtures.ts";

const db = await createTestDatabase();

const STATUSES: ReviewStatus[] = ["draft", "pending_review", "approved", "rejected", "archived"];

/** "from -> to": who may make the transition; missing: nobody. */
const TRANSITIONS: Record<string, "seller" | "admin"> = {
  "draft -> pending_review": "seller",
  "pending_review -> draft": "seller",
  "pending_review -> approved": "admin",
  "pending_review -> rejected": "admin",
  "rejected -> pending_review": "seller",
  "rejected -> draft": "seller",
  "approved -> archived": "seller",
  "approved -> rejected": "admin",
  "archived -> draft": "seller",
};

const SET_STATUS = "update public.listings set review_status = $2 where id = $1";

sqlTest(
  "listings: the review state machine allows exactly its transitions, each to its role",
  async () => {
    const seller = await createUser(db.pool);
    const admin = await createUser(db.pool, { admin: true });
    for (const from of STATUSES) {
      for (const to of STATUSES) {
        if (from === to) continue;
        const step = `${from} -> ${to}`;
        const who = TRANSITIONS[step];
        const listing = await createListing(db.pool, seller.id, from);

        await asRole(db.pool, { role: "authenticated", userId: seller.id }, async (c) => {
          if (who === "seller") {
            const result = await c.query(SET_STATUS, [listing.id, to]);
            assert.equal(result.rowCount, 1, `seller: ${step}`);
          } else {
            const code = who === "admin" ? "42501" : "PT409";
            await rejectsWith(c, code, SET_STATUS, [listing.id, to], `seller: ${step}`);
          }
        });
        await asRole(db.pool, { role: "authenticated", userId: admin.id }, async (c) => {
          if (who) {
            const result = await c.query(SET_STATUS, [listing.id, to]);
            assert.equal(result.rowCount, 1, `admin: ${step}`);
          } else {
            await rejectsWith(c, "PT409", SET_STATUS, [listing.id, to], `admin: ${step}`);
          }
        });
        if (!who) {
          // Not even the service connection leaves the state machine.
          await assert.rejects(db.pool.query(SET_STATUS, [listing.id, to]), sqlState("PT409"));
        }
      }
    }
  },
);

sqlTest("listings: a new listing starts as draft or pending_review", async () => {
  const seller = await createUser(db.pool);
  await asRole(db.pool, { role: "authenticated", userId: seller.id }, async (c) => {
    const { rows } = await c.query(
      `insert into public.listings (title, category, asking_price)
       values ('Mine', 'saas', 10) returning seller_id, review_status, submitted_at`,
    );
    assert.deepEqual(rows[0], { seller_id: seller.id, review_status: "draft", submitted_at: null });
    const submitted = await c.query(
      `insert into public.listings (title, category, asking_price, review_status)
       values ('Mine too', 'saas', 10, 'pending_review') returning submitted_at`,
    );
    assert.ok(submitted.rows[0].submitted_at instanceof Date);
    await rejectsWith(
      c,
      "PT409",
      `insert into public.listings (title, category, asking_price, review_status)
       values ('Approved by myself', 'saas', 10, 'approved')`,
    );
  });
  await assert.rejects(
    db.pool.query(
      `insert into public.listings (seller_id, title, category, asking_price, review_status)
       values ($1, 'x', 'saas', 10, 'archived')`,
      [seller.id],
    ),
    sqlState("PT409"),
  );
});

sqlTest(
  "listings: review stamps reviewed_at/by; resubmission stamps submitted_at and clears the reason",
  async () => {
    const seller = await createUser(db.pool);
    const admin = await createUser(db.pool, { admin: true });
    const listing = await createListing(db.pool, seller.id, "pending_review");
    await asRole(db.pool, { role: "authenticated", userId: admin.id }, async (c) => {
      const { rows } = await c.query(
        `update public.listings set review_status = 'rejected', rejection_reason = 'No revenue proof'
       where id = $1 returning reviewed_by, reviewed_at, rejection_reason`,
        [listing.id],
      );
      assert.equal(rows[0].reviewed_by, admin.id);
      assert.ok(rows[0].reviewed_at instanceof Date);
      assert.equal(rows[0].rejection_reason, "No revenue proof");
    });
    await db.pool.query(
      `update public.listings set review_status = 'rejected', rejection_reason = 'No revenue proof'
     where id = $1`,
      [listing.id],
    );
    await asRole(db.pool, { role: "authenticated", userId: seller.id }, async (c) => {
      await rejectsWith(
        c,
        "42501",
        "update public.listings set rejection_reason = 'All good' where id = $1",
        [listing.id],
      );
      const { rows } = await c.query(
        `update public.listings set review_status = 'pending_review' where id = $1
       returning rejection_reason, submitted_at`,
        [listing.id],
      );
      assert.equal(rows[0].rejection_reason, null);
      assert.ok(rows[0].submitted_at instanceof Date);
    });
  },
);

sqlTest(
  "listings: a seller writes only their own columns, never counters, stamps or the owner",
  async () => {
    const seller = await createUser(db.pool);
    const other = await createUser(db.pool);
    const listing = await createListing(db.pool, seller.id, "draft");
    const forbidden: [string, unknown][] = [
      ["views_count", 1000],
      ["reviewed_by", seller.id],
      ["reviewed_at", new Date()],
      ["submitted_at", new Date()],
      ["seller_id", other.id],
      ["created_at", new Date()],
    ];
    await asRole(db.pool, { role: "authenticated", userId: seller.id }, async (c) => {
      for (const [column, value] of forbidden) {
        await rejectsWith(
          c,
          "42501",
          `update public.listings set ${column} = $2 where id = $1`,
          [listing.id, value],
          column,
        );
      }
      const { rows } = await c.query(
        `update public.listings set title = 'Renamed', asking_price = 99.5, monthly_profit = -20
       where id = $1 returning title, asking_price, monthly_profit`,
        [listing.id],
      );
      assert.deepEqual(rows[0], {
        title: "Renamed",
        asking_price: "99.50",
        monthly_profit: "-20.00",
      });
    });
  },
);

sqlTest("listings: checks reject bad prices, currencies, urls, titles and statuses", async () => {
  const seller = await createUser(db.pool);
  const cases: [string, unknown][] = [
    ["currency", "usd"],
    ["currency", "DOLLAR"],
    ["url", "javascript:alert(1)"],
    ["monthly_revenue", -1],
    ["monthly_traffic", -1],
    ["asking_price", -5],
    ["title", ""],
  ];
  for (const [column, value] of cases) {
    const columns = ["seller_id", "title", "category", "asking_price"];
    const values: unknown[] = [seller.id, "x", "saas", 10];
    const at = columns.indexOf(column);
    if (at >= 0) values[at] = value;
    else {
      columns.push(column);
      values.push(value);
    }
    await assert.rejects(
      db.pool.query(
        `insert into public.listings (${columns.join(", ")})
         values (${values.map((_, i) => `$${i + 1}`).join(", ")})`,
        values,
      ),
      sqlState("23514"),
      `${column} = ${String(value)}`,
    );
  }
  // An unknown status is refused by the state machine before the check.
  await assert.rejects(
    db.pool.query(
      `insert into public.listings (seller_id, title, category, asking_price, review_status)
       values ($1, 'x', 'saas', 10, 'published')`,
      [seller.id],
    ),
    sqlState("PT409"),
  );
});

sqlTest(
  "listings RLS: a seller reads and changes only their own rows; admins all; anon nothing",
  async () => {
    const alice = await createUser(db.pool);
    const bob = await createUser(db.pool);
    const admin = await createUser(db.pool, { admin: true });
    const aliceDraft = await createListing(db.pool, alice.id, "draft");
    const aliceLive = await createListing(db.pool, alice.id, "approved");
    const bobLive = await createListing(db.pool, bob.id, "approved");
    const bobDraft = await createListing(db.pool, bob.id, "draft");
    const ids = [aliceDraft.id, aliceLive.id, bobLive.id, bobDraft.id];

    await asRole(db.pool, { role: "authenticated", userId: alice.id }, async (c) => {
      const { rows } = await c.query("select id from public.listings where id = any($1)", [ids]);
      assert.deepEqual(rows.map((r) => r.id).sort(), [aliceDraft.id, aliceLive.id].sort());
      const updated = await c.query(
        "update public.listings set title = 'Hijacked' where id = any($1)",
        [[bobLive.id, bobDraft.id]],
      );
      assert.equal(updated.rowCount, 0);
      const deleted = await c.query("delete from public.listings where id = any($1)", [
        [bobLive.id, bobDraft.id],
      ]);
      assert.equal(deleted.rowCount, 0);
      await rejectsWith(
        c,
        "42501",
        `insert into public.listings (seller_id, title, category, asking_price)
       values ($1, 'In Bob''s name', 'saas', 1)`,
        [bob.id],
      );
      // Published listings stay; unpublished ones may go.
      const live = await c.query("delete from public.listings where id = $1", [aliceLive.id]);
      assert.equal(live.rowCount, 0);
      const draft = await c.query("delete from public.listings where id = $1", [aliceDraft.id]);
      assert.equal(draft.rowCount, 1);
    });

    await asRole(db.pool, { role: "authenticated", userId: admin.id }, async (c) => {
      const { rows } = await c.query(
        "select count(*)::int as n from public.listings where id = any($1)",
        [ids],
      );
      assert.equal(rows[0].n, 4);
    });

    await asRole(db.pool, { role: "anon" }, async (c) => {
      await rejectsWith(c, "42501", "select id from public.listings");
      await rejectsWith(
        c,
        "42501",
        `insert into public.listings (seller_id, title, category, asking_price)
       values ($1, 'anon', 'saas', 1)`,
        [bob.id],
      );
      await rejectsWith(c, "42501", "update public.listings set title = 'anon'");
      await rejectsWith(c, "42501", "delete from public.listings");
    });

    const { rows } = await db.pool.query("select title from public.listings where id = $1", [
      bobLive.id,
    ]);
    assert.equal(rows[0].title, bobLive.title);
  },
);
