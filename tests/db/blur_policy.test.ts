import assert from "node:assert/strict";
import type pg from "pg";
import { createTestDatabase, sqlTest } from "../support/db.ts";
import { asRole, createUser, type SqlIdentity, type TestUser } from "../support/sql.ts";
import {
  createListing,
  type ListingSecrets,
  rejectsWith,
  setSubscription,
  type TestListing,
} from "./core_fixtures.ts";

const db = await createTestDatabase();

type Plan = "unauth" | "free" | "starter" | "pro";
const PLANS: Plan[] = ["unauth", "free", "starter", "pro"];

/** Blur-able field keys and the view column each one hides. */
const FIELD_COLUMNS: Record<string, keyof ListingSecrets> = {
  asking_price: "asking_price",
  description: "description",
  monthly_profit: "monthly_profit",
  monthly_revenue: "monthly_revenue",
  monthly_traffic: "monthly_traffic",
  seller: "seller_id",
  url: "url",
};
const FIELDS = Object.keys(FIELD_COLUMNS);

/** The seeded defaults: hidden field keys per plan. */
const DEFAULT_HIDDEN: Record<Plan, string[]> = {
  unauth: ["description", "monthly_profit", "monthly_revenue", "monthly_traffic", "seller", "url"],
  free: ["monthly_profit", "monthly_traffic", "seller", "url"],
  starter: ["seller", "url"],
  pro: [],
};

/** For each plan, a field it cannot see and one it can (pro sees all by default). */
const SAMPLES: Record<Plan, { blurred: string; open: string }> = {
  unauth: { blurred: "url", open: "asking_price" },
  free: { blurred: "monthly_profit", open: "monthly_revenue" },
  starter: { blurred: "url", open: "monthly_profit" },
  pro: { blurred: "monthly_traffic", open: "url" }, // blurred only once the test sets the flag
};

const seller = await createUser(db.pool);
const admin = await createUser(db.pool, { admin: true });
const viewers: Record<Exclude<Plan, "unauth">, TestUser> = {
  free: await createUser(db.pool),
  starter: await createUser(db.pool),
  pro: await createUser(db.pool),
};
await setSubscription(db.pool, viewers.starter.id, "starter");
await setSubscription(db.pool, viewers.pro.id, "pro");
const approved = await createListing(db.pool, seller.id, "approved");
const hiddenListings = {
  draft: await createListing(db.pool, seller.id, "draft"),
  pending_review: await createListing(db.pool, seller.id, "pending_review"),
  rejected: await createListing(db.pool, seller.id, "rejected"),
  archived: await createListing(db.pool, seller.id, "archived"),
};

function identity(plan: Plan): SqlIdentity {
  return plan === "unauth" ? { role: "anon" } : { role: "authenticated", userId: viewers[plan].id };
}

/** can_view_field() as the viewer themself, with p_user left to its default. */
async function canView(who: SqlIdentity, listingId: string, field: string): Promise<boolean> {
  return await asRole(db.pool, who, async (c) => {
    const { rows } = await c.query<{ ok: boolean }>(
      "select public.can_view_field($1, $2) as ok",
      [listingId, field],
    );
    return rows[0]!.ok;
  });
}

/** can_view_field() asked by the service connection about p_user. */
async function canViewFor(userId: string | null, listingId: string, field: string) {
  const { rows } = await db.pool.query<{ ok: boolean }>(
    "select public.can_view_field($1, $2, $3) as ok",
    [listingId, field, userId],
  );
  return rows[0]!.ok;
}

type ViewRow = Record<string, unknown> & { blurred_fields: string[]; is_owner: boolean };

async function viewRows(who: SqlIdentity, ids: string[]): Promise<ViewRow[]> {
  return await asRole(db.pool, who, async (c: pg.PoolClient) => {
    const { rows } = await c.query<ViewRow>(
      "select * from public.listing_view_secure where id = any($1) order by id",
      [ids],
    );
    return rows;
  });
}

/** Runs `fn` with the pro plan hiding monthly_traffic, then restores the default. */
async function withProHidingTraffic(fn: () => Promise<void>): Promise<void> {
  await db.pool.query(
    "update public.blurred_fields set pro = true where field_key = 'monthly_traffic'",
  );
  try {
    await fn();
  } finally {
    await db.pool.query(
      "update public.blurred_fields set pro = false where field_key = 'monthly_traffic'",
    );
  }
}

/** Asserts that no true value of a hidden field appears anywhere in the row. */
function assertNoLeak(row: ViewRow, listing: TestListing, hidden: string[]) {
  const text = JSON.stringify(row);
  for (const field of hidden) {
    const secret = String(listing[FIELD_COLUMNS[field]!]);
    assert.ok(!text.includes(secret), `hidden ${field} ("${secret}") leaked: ${text}`);
  }
}

sqlTest("blurred_fields is seeded with the default flags", async () => {
  const { rows } = await db.pool.query<
    { field_key: string; unauth: boolean; free: boolean; starter: boolean; pro: boolean }
  >("select field_key, unauth, free, starter, pro from public.blurred_fields order by field_key");
  assert.deepEqual(rows.map((r) => r.field_key), FIELDS.toSorted());
  for (const plan of PLANS) {
    assert.deepEqual(
      rows.filter((r) => r[plan]).map((r) => r.field_key),
      DEFAULT_HIDDEN[plan],
      plan,
    );
  }
});

sqlTest(
  "can_view_field() follows the viewer's plan: a blurred and an open field per plan",
  async () => {
    for (const plan of PLANS) {
      const { blurred, open } = SAMPLES[plan];
      const check = async () => {
        assert.equal(
          await canView(identity(plan), approved.id, blurred),
          false,
          `${plan}: ${blurred}`,
        );
        assert.equal(await canView(identity(plan), approved.id, open), true, `${plan}: ${open}`);
        const userId = plan === "unauth" ? null : viewers[plan].id;
        assert.equal(await canViewFor(userId, approved.id, blurred), false, `${plan} (service)`);
        assert.equal(await canViewFor(userId, approved.id, open), true, `${plan} (service)`);
      };
      if (plan === "pro") await withProHidingTraffic(check);
      else await check();
    }
  },
);

sqlTest("can_view_field() shows the owner and admins everything", async () => {
  for (const field of FIELDS) {
    for (const listing of [approved, ...Object.values(hiddenListings)]) {
      assert.equal(
        await canView({ role: "authenticated", userId: seller.id }, listing.id, field),
        true,
      );
      assert.equal(
        await canView({ role: "authenticated", userId: admin.id }, listing.id, field),
        true,
      );
      assert.equal(await canViewFor(seller.id, listing.id, field), true);
      assert.equal(await canViewFor(admin.id, listing.id, field), true);
    }
  }
});

sqlTest(
  "can_view_field() is false for an unknown field, an unknown listing and unpublished listings",
  async () => {
    const everyone: SqlIdentity[] = [
      identity("unauth"),
      identity("free"),
      identity("pro"),
      { role: "authenticated", userId: seller.id },
      { role: "authenticated", userId: admin.id },
    ];
    for (const who of everyone) {
      assert.equal(await canView(who, approved.id, "no_such_field"), false);
      assert.equal(await canView(who, approved.id, "title"), false);
      assert.equal(await canView(who, crypto.randomUUID(), "asking_price"), false);
    }
    assert.equal(await canViewFor(null, approved.id, "no_such_field"), false);
    assert.equal(await canViewFor(admin.id, crypto.randomUUID(), "url"), false);
    const nulls = await db.pool.query(
      "select public.can_view_field(null, 'url', $1) as a, public.can_view_field($2, null, $1) as b",
      [admin.id, approved.id],
    );
    assert.deepEqual(nulls.rows[0], { a: false, b: false });
    for (const listing of Object.values(hiddenListings)) {
      for (const plan of PLANS) {
        assert.equal(await canView(identity(plan), listing.id, "asking_price"), false);
      }
    }
  },
);

sqlTest(
  "can_view_field() with a null user answers for a visitor who is not signed in",
  async () => {
    for (const field of FIELDS) {
      const expected = !DEFAULT_HIDDEN.unauth.includes(field);
      assert.equal(await canViewFor(null, approved.id, field), expected, field);
      // A signed-in user may ask what a visitor sees.
      await asRole(db.pool, identity("free"), async (c) => {
        const { rows } = await c.query("select public.can_view_field($1, $2, null) as ok", [
          approved.id,
          field,
        ]);
        assert.equal(rows[0].ok, expected, field);
      });
    }
  },
);

sqlTest("can_view_field() lets a client ask only about itself", async () => {
  await asRole(db.pool, identity("free"), async (c) => {
    await rejectsWith(c, "42501", "select public.can_view_field($1, 'url', $2)", [
      approved.id,
      viewers.pro.id,
    ]);
    const own = await c.query("select public.can_view_field($1, 'url', $2) as ok", [
      approved.id,
      viewers.free.id,
    ]);
    assert.equal(own.rows[0].ok, false);
  });
  await asRole(db.pool, identity("unauth"), async (c) => {
    await rejectsWith(c, "42501", "select public.can_view_field($1, 'url', $2)", [
      approved.id,
      viewers.pro.id,
    ]);
  });
  await asRole(db.pool, { role: "authenticated", userId: admin.id }, async (c) => {
    const { rows } = await c.query("select public.can_view_field($1, 'url', $2) as ok", [
      approved.id,
      viewers.pro.id,
    ]);
    assert.equal(rows[0].ok, true);
  });
});

sqlTest(
  "listing_view_secure: each plan sees NULL for hidden fields, the values of open ones, and never a hidden value",
  async () => {
    for (const plan of PLANS) {
      const check = async () => {
        const [row] = await viewRows(identity(plan), [approved.id]);
        assert.ok(row, `${plan} sees the approved listing`);
        const { rows } = await db.pool.query<{ hidden: string[] }>(
          `select coalesce(array_agg(field_key order by field_key) filter (where ${plan}), '{}') as hidden
         from public.blurred_fields`,
        );
        const hidden = rows[0]!.hidden;
        assert.deepEqual(row.blurred_fields, hidden, plan);
        assert.equal(row.is_owner, false);
        for (const field of FIELDS) {
          const column = FIELD_COLUMNS[field]!;
          const expected = hidden.includes(field) ? null : approved[column];
          assert.equal(row[column], expected, `${plan}: ${field}`);
          // The view and can_view_field() agree on every field.
          const userId = plan === "unauth" ? null : viewers[plan].id;
          assert.equal(
            await canViewFor(userId, approved.id, field),
            !hidden.includes(field),
            `${plan}: can_view_field(${field})`,
          );
        }
        assert.equal(row.title, approved.title);
        assertNoLeak(row, approved, hidden);
      };
      if (plan === "pro") {
        await check();
        await withProHidingTraffic(check);
      } else await check();
    }
  },
);

sqlTest(
  "listing_view_secure: the owner and admins see every value; drafts and rejected listings are invisible to others",
  async () => {
    const all = [approved, ...Object.values(hiddenListings)];
    const ids = all.map((l) => l.id);
    for (const who of [seller, admin]) {
      const rows = await viewRows({ role: "authenticated", userId: who.id }, ids);
      assert.equal(rows.length, all.length, `${who === seller ? "owner" : "admin"} sees all`);
      for (const row of rows) {
        const listing = all.find((l) => l.id === row.id)!;
        assert.deepEqual(row.blurred_fields, []);
        assert.equal(row.is_owner, who === seller);
        for (const column of Object.values(FIELD_COLUMNS)) {
          assert.equal(row[column], listing[column], column);
        }
      }
    }
    for (const plan of PLANS) {
      const rows = await viewRows(identity(plan), ids);
      assert.deepEqual(rows.map((r) => r.id), [approved.id], plan);
    }
  },
);

sqlTest(
  "listing_view_secure: a hidden value cannot be probed with a filter or a sort",
  async () => {
    await asRole(db.pool, identity("free"), async (c) => {
      const byUrl = await c.query(
        "select id from public.listing_view_secure where url = $1 or url like 'https://secret-%'",
        [approved.url],
      );
      assert.equal(byUrl.rowCount, 0);
      const byProfit = await c.query(
        "select id from public.listing_view_secure where monthly_profit > 0",
      );
      assert.equal(byProfit.rowCount, 0);
      const bySeller = await c.query(
        "select id from public.listing_view_secure where seller_id = $1",
        [seller.id],
      );
      assert.equal(bySeller.rowCount, 0);
    });
  },
);

sqlTest("listing_view_secure: an admin's change of a flag applies to the next query", async () => {
  await asRole(db.pool, { role: "authenticated", userId: admin.id }, async (c) => {
    const result = await c.query(
      "update public.blurred_fields set free = true where field_key = 'asking_price'",
    );
    assert.equal(result.rowCount, 1);
    await c.query("set local role postgres");
    await c.query("select set_config('request.jwt.claims', $1, true)", [
      JSON.stringify({ role: "authenticated", sub: viewers.free.id }),
    ]);
    await c.query("set local role authenticated");
    const { rows } = await c.query<ViewRow>(
      "select asking_price, blurred_fields from public.listing_view_secure where id = $1",
      [approved.id],
    );
    assert.equal(rows[0]!.asking_price, null);
    assert.ok(rows[0]!.blurred_fields.includes("asking_price"));
  });
});

sqlTest(
  "blurred_fields RLS: anyone reads the flags; only admins change them; nobody adds fields",
  async () => {
    await asRole(db.pool, identity("unauth"), async (c) => {
      const { rows } = await c.query("select count(*)::int as n from public.blurred_fields");
      assert.equal(rows[0].n, FIELDS.length);
      await rejectsWith(c, "42501", "update public.blurred_fields set unauth = false");
    });
    await asRole(db.pool, identity("pro"), async (c) => {
      const result = await c.query("update public.blurred_fields set free = false");
      assert.equal(result.rowCount, 0);
      await rejectsWith(
        c,
        "42501",
        `insert into public.blurred_fields (field_key, column_name, when_hidden, unauth, free, starter, pro)
       values ('title', 'title', 'blur', true, true, true, true)`,
      );
      await rejectsWith(c, "42501", "delete from public.blurred_fields");
    });
    await asRole(db.pool, { role: "authenticated", userId: admin.id }, async (c) => {
      await rejectsWith(c, "42501", "update public.blurred_fields set when_hidden = 'omit'");
      await rejectsWith(c, "42501", "delete from public.blurred_fields");
    });
    // Even the service connection cannot add a field the view does not know.
    await assert.rejects(
      db.pool.query(
        `insert into public.blurred_fields (field_key, column_name, when_hidden, unauth, free, starter, pro)
       values ('title', 'title', 'blur', true, true, true, true)`,
      ),
      (error: unknown) => (error as { code?: string }).code === "23514",
    );
  },
);
