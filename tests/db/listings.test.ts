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

// -----------------------------------------------------------------------------
// Content review: an approved listing whose content a seller edits is reviewed again
// -----------------------------------------------------------------------------

/** Each content column, and a value different from any createListing() writes. */
const CONTENT_EDITS: [string, unknown][] = [
  ["title", "A new title"],
  ["description", "A new description"],
  ["url", "https://elsewhere.example"],
  ["category", "tools"],
  ["asking_price", 1],
  ["currency", "EUR"],
  ["monthly_revenue", 999999],
  ["monthly_profit", -1],
  ["monthly_traffic", 1],
];

interface ReviewRow {
  review_status: ReviewStatus;
  submitted_at: Date | null;
  reviewed_at: Date | null;
  reviewed_by: string | null;
  rejection_reason: string | null;
}

async function reviewRow(id: string): Promise<ReviewRow> {
  const { rows } = await db.pool.query<ReviewRow>(
    `select review_status, submitted_at, reviewed_at, reviewed_by, rejection_reason
     from public.listings where id = $1`,
    [id],
  );
  return rows[0]!;
}

/** The listing's rows in listing_view_secure as `userId` (null: anon) sees them. */
async function viewAs(userId: string | null, id: string) {
  const identity = userId ? { role: "authenticated" as const, userId } : { role: "anon" as const };
  return await asRole(db.pool, identity, async (c) => {
    const { rows } = await c.query(
      "select title, review_status from public.listing_view_secure where id = $1",
      [id],
    );
    return rows;
  });
}

sqlTest(
  "listings: a seller's edit of an approved listing's content sends it back to review",
  async () => {
    const seller = await createUser(db.pool);
    for (const [column, value] of CONTENT_EDITS) {
      const listing = await createListing(db.pool, seller.id, "approved");
      const before = await reviewRow(listing.id);
      await asRole(db.pool, { role: "authenticated", userId: seller.id }, async (c) => {
        const { rows } = await c.query(
          `update public.listings set ${column} = $2 where id = $1 returning review_status`,
          [listing.id, value],
        );
        assert.equal(rows[0].review_status, "pending_review", column);
        await c.query("commit");
      });
      const after = await reviewRow(listing.id);
      assert.equal(after.review_status, "pending_review", column);
      assert.ok(after.submitted_at! > before.submitted_at!, `${column}: submitted_at moved`);
      assert.equal(after.rejection_reason, null);
      // The last review stays on record.
      assert.deepEqual(after.reviewed_at, before.reviewed_at, column);
      assert.equal(after.reviewed_by, before.reviewed_by, column);
    }

    // Writing a value it already has is no edit.
    const same = await createListing(db.pool, seller.id, "approved");
    await asRole(db.pool, { role: "authenticated", userId: seller.id }, async (c) => {
      const { rows } = await c.query(
        `update public.listings set title = title, asking_price = $2, url = $3 where id = $1
         returning review_status`,
        [same.id, same.asking_price, same.url],
      );
      assert.equal(rows[0].review_status, "approved");
    });
  },
);

sqlTest(
  "listings: an edited approved listing is hidden from others until an admin approves it again",
  async () => {
    const seller = await createUser(db.pool);
    const viewer = await createUser(db.pool);
    const admin = await createUser(db.pool, { admin: true });
    const listing = await createListing(db.pool, seller.id, "approved");
    assert.equal((await viewAs(viewer.id, listing.id)).length, 1);
    assert.equal((await viewAs(null, listing.id)).length, 1);
    const { rows: marker } = await db.pool.query<{ id: string }>(
      "select coalesce(max(id), 0) as id from realtime.messages",
    );

    await asRole(db.pool, { role: "authenticated", userId: seller.id }, async (c) => {
      await c.query("update public.listings set title = 'Bait and switch' where id = $1", [
        listing.id,
      ]);
      await c.query("commit");
    });
    assert.deepEqual(await viewAs(viewer.id, listing.id), []);
    assert.deepEqual(await viewAs(null, listing.id), []);
    assert.deepEqual(await viewAs(seller.id, listing.id), [
      { title: "Bait and switch", review_status: "pending_review" },
    ]);

    // The seller hears of it on their topic, as of any status change.
    const { rows: messages } = await db.pool.query(
      `select payload from realtime.messages where topic = $1 and id > $2 order by id`,
      [`user:${seller.id}`, marker[0]!.id],
    );
    assert.deepEqual(
      messages.map((m) => [m.payload.old_record.review_status, m.payload.record.review_status]),
      [["approved", "pending_review"]],
    );

    await asRole(db.pool, { role: "authenticated", userId: admin.id }, async (c) => {
      await c.query("update public.listings set review_status = 'approved' where id = $1", [
        listing.id,
      ]);
      await c.query("commit");
    });
    assert.deepEqual(await viewAs(viewer.id, listing.id), [
      { title: "Bait and switch", review_status: "approved" },
    ]);
    const after = await reviewRow(listing.id);
    assert.equal(after.reviewed_by, admin.id);
  },
);

sqlTest(
  "listings: a seller archiving an approved listing archives it, with or without an edit",
  async () => {
    const seller = await createUser(db.pool);
    const plain = await createListing(db.pool, seller.id, "approved");
    const edited = await createListing(db.pool, seller.id, "approved");
    await asRole(db.pool, { role: "authenticated", userId: seller.id }, async (c) => {
      const archived = await c.query(
        "update public.listings set review_status = 'archived' where id = $1 returning review_status",
        [plain.id],
      );
      assert.equal(archived.rows[0].review_status, "archived");
      const both = await c.query(
        `update public.listings set review_status = 'archived', title = 'Sold', asking_price = 5
         where id = $1 returning review_status, title`,
        [edited.id],
      );
      assert.deepEqual(both.rows[0], { review_status: "archived", title: "Sold" });
      // A content edit does not open a way to the admins' transitions.
      const live = await createListing(db.pool, seller.id, "approved");
      await rejectsWith(
        c,
        "42501",
        "update public.listings set review_status = 'rejected', title = 'x' where id = $1",
        [live.id],
      );
    });
  },
);

sqlTest(
  "listings: admins and the service connection edit an approved listing and it stays approved",
  async () => {
    const seller = await createUser(db.pool);
    const admin = await createUser(db.pool, { admin: true });
    const listing = await createListing(db.pool, seller.id, "approved");
    const before = await reviewRow(listing.id);
    await asRole(db.pool, { role: "authenticated", userId: admin.id }, async (c) => {
      const { rows } = await c.query(
        `update public.listings set title = 'Typo fixed', monthly_revenue = 1 where id = $1
         returning review_status`,
        [listing.id],
      );
      assert.equal(rows[0].review_status, "approved");
      await c.query("commit");
    });
    await db.pool.query("update public.listings set url = 'https://fixed.example' where id = $1", [
      listing.id,
    ]);
    await asRole(db.pool, { role: "service_role" }, async (c) => {
      await c.query("update public.listings set description = 'Fixed too' where id = $1", [
        listing.id,
      ]);
      await c.query("commit");
    });
    const after = await reviewRow(listing.id);
    assert.equal(after.review_status, "approved");
    assert.deepEqual(after.submitted_at, before.submitted_at);

    // Nor can they send it back to review by asking: it is no transition of theirs.
    await asRole(db.pool, { role: "authenticated", userId: admin.id }, async (c) => {
      await rejectsWith(
        c,
        "PT409",
        "update public.listings set review_status = 'pending_review', title = 'x' where id = $1",
        [listing.id],
      );
    });
  },
);

sqlTest(
  "listings: edits of listings that are not approved keep their status",
  async () => {
    const seller = await createUser(db.pool);
    for (const status of ["draft", "pending_review", "rejected", "archived"] as const) {
      const listing = await createListing(db.pool, seller.id, status);
      const before = await reviewRow(listing.id);
      await asRole(db.pool, { role: "authenticated", userId: seller.id }, async (c) => {
        const { rows } = await c.query(
          `update public.listings set title = 'Edited', monthly_revenue = 5 where id = $1
           returning review_status, submitted_at`,
          [listing.id],
        );
        assert.equal(rows[0].review_status, status);
        assert.deepEqual(rows[0].submitted_at, before.submitted_at, status);
      });
    }
  },
);

sqlTest(
  "listings: a seller may say pending_review with a content edit, never without one",
  async () => {
    const seller = await createUser(db.pool);
    const listing = await createListing(db.pool, seller.id, "approved");
    await asRole(db.pool, { role: "authenticated", userId: seller.id }, async (c) => {
      await rejectsWith(
        c,
        "PT409",
        "update public.listings set review_status = 'pending_review' where id = $1",
        [listing.id],
      );
      const { rows } = await c.query(
        `update public.listings set review_status = 'pending_review', title = 'Edited'
         where id = $1 returning review_status, submitted_at`,
        [listing.id],
      );
      assert.equal(rows[0].review_status, "pending_review");
      assert.ok(rows[0].submitted_at instanceof Date);
    });
  },
);
