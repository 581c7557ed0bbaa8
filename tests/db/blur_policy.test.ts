import assert from "node:assert/strict";
import { isDeepStrictEqual } from "node:util";
import type pg from "pg";
import {
  BLUR_FIELDS,
  FIELD_TO_COLUMN_MAP,
  FIELD_VISIBILITY,
  LISTING_FIELDS,
} from "../../shared/blur.ts";
import { EXPLORE_PAGE_SIZE } from "../../shared/explore.ts";
import { createTestDatabase, sqlTest } from "../support/db.ts";
import { asRole, createUser, type SqlIdentity, type TestUser } from "../support/sql.ts";
import {
  createListing,
  type ListingSecrets,
  rejectsWith,
  setSubscription,
  sqlState,
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
  "can_view_field() is false for an unknown listing and unpublished listings, true for title",
  async () => {
    const everyone: SqlIdentity[] = [
      identity("unauth"),
      identity("free"),
      identity("pro"),
      { role: "authenticated", userId: seller.id },
      { role: "authenticated", userId: admin.id },
    ];
    for (const who of everyone) {
      assert.equal(await canView(who, approved.id, "title"), true);
      assert.equal(await canView(who, crypto.randomUUID(), "asking_price"), false);
      assert.equal(await canView(who, crypto.randomUUID(), "title"), false);
    }
    assert.equal(await canViewFor(admin.id, crypto.randomUUID(), "url"), false);
    const nulls = await db.pool.query(
      "select public.can_view_field(null, 'url', $1) as a, public.can_view_field(null, 'id', $1) as b",
      [admin.id],
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

/** Columns the view computes for the viewer: they have no stored value to compare with. */
const VIEWER_COLUMNS: ReadonlySet<string> = new Set([
  "is_owner",
  "blurred_fields",
  "confidential_fields_hidden",
]);

/** Every viewer kind, with the user can_view_field() is asked about (null: a visitor). */
function viewerKinds(): Array<{ name: string; who: SqlIdentity; userId: string | null }> {
  const signedIn = (name: string, user: TestUser) => ({
    name,
    who: { role: "authenticated" as const, userId: user.id },
    userId: user.id,
  });
  return [
    { name: "unauth", who: identity("unauth"), userId: null },
    signedIn("free", viewers.free),
    signedIn("starter", viewers.starter),
    signedIn("pro", viewers.pro),
    signedIn("seller", seller),
    signedIn("admin", admin),
  ];
}

/** can_view_field() for every key of shared/blur.ts at once: as `who`, and asked about `userId`. */
async function answersFor(
  who: SqlIdentity,
  userId: string | null,
  listingId: string,
): Promise<{ own: Map<string, boolean>; asked: Map<string, boolean> }> {
  const sql = `select f as field, public.can_view_field($1, f) as own,
                 public.can_view_field($1, f, $3) as asked
               from unnest($2::text[]) f`;
  const { rows } = await asRole(
    db.pool,
    who,
    (c) =>
      c.query<{ field: string; own: boolean; asked: boolean }>(sql, [
        listingId,
        LISTING_FIELDS,
        userId,
      ]),
  );
  return {
    own: new Map(rows.map((r) => [r.field, r.own])),
    asked: new Map(rows.map((r) => [r.field, r.asked])),
  };
}

sqlTest(
  "listing_view_secure, can_view_field() and shared/blur.ts agree on every field, for every viewer and plan",
  async () => {
    // The view's columns, from the catalog, are exactly shared/blur.ts's columns, one field each.
    const { rows: columns } = await db.pool.query<{ attname: string }>(
      `select a.attname from pg_attribute a
       where a.attrelid = 'public.listing_view_secure'::regclass
         and a.attnum > 0 and not a.attisdropped`,
    );
    assert.deepEqual(
      columns.map((c) => c.attname).sort(),
      Object.values(FIELD_TO_COLUMN_MAP).sort(),
      "every column of listing_view_secure has one field key in shared/blur.ts",
    );
    assert.deepEqual(Object.keys(FIELD_TO_COLUMN_MAP).sort(), [...LISTING_FIELDS].sort());
    // The keys can_view_field() knows (listing_fields) are shared/blur.ts's, and its
    // blur-policy fields are those of blurred_fields.
    const { rows: keys } = await db.pool.query<
      { field_key: string; column_name: string; visibility: string }
    >("select field_key, column_name, visibility from public.listing_fields order by field_key");
    assert.deepEqual(
      keys,
      LISTING_FIELDS.toSorted().map((field) => ({
        field_key: field,
        column_name: FIELD_TO_COLUMN_MAP[field],
        visibility: FIELD_VISIBILITY[field],
      })),
    );
    assert.deepEqual(
      keys.filter((k) => k.visibility === "blur_policy").map((k) => k.field_key),
      [...BLUR_FIELDS].sort(),
    );

    // Two samples with a value in every column: one everyone may see, one only its
    // seller and admins may (rejected).
    const samples = [
      await createListing(db.pool, seller.id, "approved"),
      await createListing(db.pool, seller.id, "rejected"),
    ];
    for (const sample of samples) {
      await db.pool.query(
        `update public.listings set rejection_reason = 'A note to the seller', is_sponsored = true,
           sponsored_until = now() + interval '1 day'
         where id = $1`,
        [sample.id],
      );
    }
    const truth = new Map<string, Record<string, unknown>>();
    for (const sample of samples) {
      const { rows } = await db.pool.query<{ row: Record<string, unknown> }>(
        "select to_jsonb(l) as row from public.listings l where l.id = $1",
        [sample.id],
      );
      const row = rows[0]!.row;
      for (const column of Object.values(FIELD_TO_COLUMN_MAP)) {
        if (VIEWER_COLUMNS.has(column)) continue;
        assert.notEqual(row[column], null, `sample ${sample.review_status}: ${column} has a value`);
      }
      truth.set(sample.id, row);
    }

    // With the seeded flags and with every flag flipped, every plan sees every
    // blur-able field once and misses it once.
    let checked = 0;
    const check = async (flags: string) => {
      for (const { name, who, userId } of viewerKinds()) {
        for (const sample of samples) {
          const stored = truth.get(sample.id)!;
          const row = await asRole(db.pool, who, async (c) => {
            const { rows } = await c.query<{ row: Record<string, unknown> }>(
              "select to_jsonb(v) as row from public.listing_view_secure v where v.id = $1",
              [sample.id],
            );
            return rows[0]?.row;
          });
          const answers = await answersFor(who, userId, sample.id);
          for (const field of LISTING_FIELDS) {
            const column = FIELD_TO_COLUMN_MAP[field];
            const where = `${flags}, ${name}, ${sample.review_status} listing: ${field}`;
            // What the view shows: the row at all, and the stored value in the column.
            const shown = row !== undefined &&
              (VIEWER_COLUMNS.has(column) || isDeepStrictEqual(row[column], stored[column]));
            if (row !== undefined && !shown) assert.equal(row[column], null, `${where} is NULL`);
            assert.equal(answers.own.get(field), shown, `${where} (as the viewer)`);
            assert.equal(answers.asked.get(field), shown, `${where} (asked about the viewer)`);
            if (row !== undefined && FIELD_VISIBILITY[field] === "blur_policy") {
              assert.equal(
                (row.blurred_fields as string[]).includes(field),
                !shown,
                `${where} in blurred_fields`,
              );
            }
            checked++;
          }
        }
      }
    };
    await check("seeded flags");
    const flip = `update public.blurred_fields
      set unauth = not unauth, free = not free, starter = not starter, pro = not pro`;
    await db.pool.query(flip);
    try {
      await check("flipped flags");
    } finally {
      await db.pool.query(flip);
    }
    assert.equal(checked, 2 * 6 * samples.length * LISTING_FIELDS.length);
    assert.deepEqual((await expectedPolicy(db.pool)).get("free"), DEFAULT_HIDDEN.free, "restored");

    // A key that is no listing field is refused, never answered.
    for (const who of [identity("unauth"), identity("free"), { role: "service_role" as const }]) {
      await asRole(db.pool, who, async (c) => {
        for (const key of ["no_such_field", "Title", ""]) {
          await assertUnknownKey(c, samples[0]!.id, key, `"${key}" is not a listing field`);
        }
        await assertUnknownKey(c, samples[0]!.id, null, "name a listing field");
        // Refused before the listing is looked at.
        await assertUnknownKey(c, crypto.randomUUID(), "no_such_field", "no_such_field");
      });
    }
    // A column given for its field key: the hint names the key.
    await asRole(db.pool, identity("free"), async (c) => {
      const error = await assertUnknownKey(c, samples[0]!.id, "seller_id", "seller_id");
      assert.match(error.hint ?? "", /"seller_id" is the column of the field "seller"/);
    });
  },
);

/**
 * Asserts that can_view_field(`listingId`, `key`) fails with SQLSTATE 22023, a
 * message containing `message`, and a hint naming listing_fields; answers the error.
 */
async function assertUnknownKey(
  c: pg.PoolClient,
  listingId: string,
  key: string | null,
  message: string,
): Promise<{ code?: string; message: string; hint?: string }> {
  await c.query("savepoint unknown_key");
  try {
    await c.query("select public.can_view_field($1, $2)", [listingId, key]);
  } catch (error) {
    const e = error as { code?: string; message: string; hint?: string };
    assert.equal(e.code, "22023", `${key}: ${e.message}`);
    assert.ok(e.message.includes(message), `${key}: ${e.message}`);
    assert.match(e.hint ?? "", /public\.listing_fields/);
    return e;
  } finally {
    await c.query("rollback to savepoint unknown_key");
  }
  assert.fail(`can_view_field() answered for the key ${JSON.stringify(key)}`);
}

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

/** The hidden field keys per viewer class, computed from blurred_fields the slow way. */
async function expectedPolicy(client: pg.Pool | pg.PoolClient) {
  const { rows } = await client.query<{ viewer_class: string; hidden: string[] }>(
    `select k.viewer_class, h.hidden
     from (values ('unauth'), ('free'), ('starter'), ('pro'), ('admin')) k (viewer_class)
     cross join lateral (
       select coalesce(array_agg(b.field_key order by b.field_key), '{}') as hidden
       from public.blurred_fields b
       where case k.viewer_class when 'unauth' then b.unauth when 'free' then b.free
         when 'starter' then b.starter when 'pro' then b.pro else false end
     ) h`,
  );
  return new Map(rows.map((r) => [r.viewer_class, r.hidden]));
}

/** Asserts that blurred_fields_by_viewer holds exactly what blurred_fields says. */
async function assertPolicyMirrorsFlags(client: pg.Pool | pg.PoolClient, context: string) {
  const expected = await expectedPolicy(client);
  const { rows } = await client.query<
    Record<string, unknown> & {
      viewer_class: string;
      own_listing: boolean;
      locked: boolean;
      sees_unapproved: boolean;
      hide_confidential: boolean;
      hidden_fields: string[];
    }
  >("select * from public.blurred_fields_by_viewer order by viewer_class, own_listing, locked");
  assert.equal(rows.length, 20, `${context}: one row per viewer class, own_listing and lock`);
  for (const row of rows) {
    const hidden = row.own_listing ? [] : expected.get(row.viewer_class)!;
    const where =
      `${context}: ${row.viewer_class}, own_listing ${row.own_listing}, locked ${row.locked}`;
    assert.deepEqual(row.hidden_fields, hidden, where);
    const seesAll = row.own_listing || row.viewer_class === "admin";
    assert.equal(row.sees_unapproved, seesAll, where);
    assert.equal(row.hide_confidential, row.locked && !seesAll, `${where}: hide_confidential`);
    for (const field of FIELDS) {
      assert.equal(row[`hide_${field}`], hidden.includes(field), `${where}: hide_${field}`);
    }
  }
}

sqlTest(
  "listing_view_secure follows plan_of() for every subscription status, source and period end (its copy of the plan rule)",
  async () => {
    const day = 86_400_000;
    const statuses = [
      "active",
      "trialing",
      "past_due",
      "canceled",
      "unpaid",
      "incomplete",
      "incomplete_expired",
      "paused",
    ];
    const periodEnds: [string, Date | null][] = [
      ["ends later", new Date(Date.now() + 30 * day)],
      ["ended", new Date(Date.now() - day)],
      ["no end", null],
    ];
    const levels = ["free", "starter", "pro"] as const;
    let paid = 0;
    for (const status of statuses) {
      for (const source of ["payproc", "grant"] as const) {
        for (const [ends, periodEnd] of periodEnds) {
          const level = levels[(paid++) % levels.length]!;
          const user = await createUser(db.pool);
          await setSubscription(db.pool, user.id, level, { status, source, periodEnd });
          const label = `${level}, ${status}, ${source}, ${ends}`;
          const { rows } = await db.pool.query<{ plan: Plan }>(
            "select public.plan_of($1) as plan",
            [user.id],
          );
          const plan = rows[0]!.plan;
          const [row] = await viewRows({ role: "authenticated", userId: user.id }, [approved.id]);
          assert.deepEqual(row!.blurred_fields, DEFAULT_HIDDEN[plan], `${label}: ${plan}`);
        }
      }
    }
    // Not vacuous: every plan occurs.
    const { rows } = await db.pool.query<{ plan: string }>(
      "select distinct public.plan_of(user_id) as plan from public.subscriptions order by 1",
    );
    assert.deepEqual(rows.map((r) => r.plan), ["free", "pro", "starter"]);
  },
);

sqlTest("listing_view_secure: rejection_reason shows only to the owner and admins", async () => {
  const client = await db.pool.connect();
  try {
    await client.query("begin");
    // An admin may note a reason on a listing without taking it down.
    await client.query(
      "update public.listings set rejection_reason = 'Check the revenue' where id = $1",
      [
        approved.id,
      ],
    );
    await client.query("commit");
    for (
      const [who, expected] of [
        [{ role: "authenticated", userId: seller.id }, "Check the revenue"],
        [{ role: "authenticated", userId: admin.id }, "Check the revenue"],
        [identity("free"), null],
        [identity("pro"), null],
        [identity("unauth"), null],
      ] as const
    ) {
      const [row] = await viewRows(who, [approved.id]);
      assert.equal(row!.rejection_reason, expected, JSON.stringify(who));
    }
  } finally {
    await client.query("rollback").catch(() => {});
    await client.query("update public.listings set rejection_reason = null where id = $1", [
      approved.id,
    ]);
    client.release();
  }
});

sqlTest(
  "listing_view_secure: explore pages by keyset return the pages offset paging does",
  async () => {
    const pager = await createUser(db.pool);
    const ids: string[] = [];
    const total = 2 * EXPLORE_PAGE_SIZE + 1;
    for (let i = 0; i < total; i++) {
      ids.push((await createListing(db.pool, pager.id, "approved")).id);
    }
    await asRole(db.pool, identity("free"), async (c) => {
      const order = "order by created_at desc, id desc";
      const all = await c.query<{ id: string }>(
        `select id from public.listing_view_secure where id = any($1) ${order}`,
        [ids],
      );
      assert.equal(all.rowCount, total);
      const pages: string[][] = [];
      let cursor: { created_at: Date; id: string } | undefined;
      for (;;) {
        const page = await c.query<{ id: string; created_at: Date }>(
          `select id, created_at from public.listing_view_secure
         where id = any($1) and ($2::timestamptz is null or (created_at, id) < ($2, $3::uuid))
         ${order} limit $4`,
          [ids, cursor?.created_at ?? null, cursor?.id ?? null, EXPLORE_PAGE_SIZE],
        );
        if (page.rowCount === 0) break;
        pages.push(page.rows.map((r) => r.id));
        cursor = page.rows.at(-1)!;
      }
      assert.deepEqual(pages.map((p) => p.length), [EXPLORE_PAGE_SIZE, EXPLORE_PAGE_SIZE, 1]);
      assert.deepEqual(pages.flat(), all.rows.map((r) => r.id));
    });
  },
);

sqlTest("blurred_fields_by_viewer mirrors blurred_fields after every kind of change", async () => {
  await assertPolicyMirrorsFlags(db.pool, "as migrated");
  const client = await db.pool.connect();
  try {
    await client.query("begin");
    await client.query("update public.blurred_fields set free = not free where field_key = 'url'");
    await assertPolicyMirrorsFlags(client, "after an update");
    await client.query("update public.blurred_fields set unauth = false, pro = true");
    await assertPolicyMirrorsFlags(client, "after an update of every row");
    await client.query("delete from public.blurred_fields where field_key = 'seller'");
    await assertPolicyMirrorsFlags(client, "after a delete");
    await client.query(
      `insert into public.blurred_fields (field_key, column_name, when_hidden, unauth, free, starter, pro)
       values ('seller', 'seller_id', 'omit', true, true, true, true)`,
    );
    await assertPolicyMirrorsFlags(client, "after an insert");
    await client.query("truncate public.blurred_fields");
    await assertPolicyMirrorsFlags(client, "after a truncate");
  } finally {
    await client.query("rollback");
    client.release();
  }
  await assertPolicyMirrorsFlags(db.pool, "after the rollback");
});

sqlTest(
  "blurred_fields_by_viewer: concurrent changes by two admins both take effect",
  async () => {
    const first = await db.pool.connect();
    const second = await db.pool.connect();
    const restore = () =>
      db.pool.query(
        `update public.blurred_fields set
           free = field_key in ('monthly_profit', 'monthly_traffic', 'seller', 'url'),
           starter = field_key in ('seller', 'url')`,
      );
    try {
      for (const c of [first, second]) {
        await c.query("begin");
        await c.query("select set_config('request.jwt.claims', $1, true)", [
          JSON.stringify({ role: "authenticated", sub: admin.id, aud: "authenticated" }),
        ]);
        await c.query("set local role authenticated");
      }
      await first.query(
        "update public.blurred_fields set free = true where field_key = 'asking_price'",
      );
      // The second refresh waits for the first transaction to end...
      const secondOutcome = second.query(
        "update public.blurred_fields set starter = true where field_key = 'description'",
      ).then(() => null, (error: unknown) => error);
      const { rows } = await first.query<{ pid: number }>("select pg_backend_pid() as pid");
      await waitUntilBlockedBy(rows[0]!.pid);
      await first.query("commit");
      // ... then reads the flags with the first change committed.
      const secondError = await secondOutcome;
      if (secondError) throw secondError;
      await second.query("commit");
      const policy = await expectedPolicy(db.pool);
      assert.ok(policy.get("free")!.includes("asking_price"));
      assert.ok(policy.get("starter")!.includes("description"));
      await assertPolicyMirrorsFlags(db.pool, "after both commits");
    } finally {
      await first.query("rollback").catch(() => {});
      await second.query("rollback").catch(() => {});
      first.release();
      second.release();
      await restore();
    }
    await assertPolicyMirrorsFlags(db.pool, "restored");
    assert.deepEqual((await expectedPolicy(db.pool)).get("free"), DEFAULT_HIDDEN.free);
  },
);

sqlTest(
  "blurred_fields_by_viewer: under repeatable read, the later of two concurrent changes fails instead of writing a stale policy",
  async () => {
    const first = await db.pool.connect();
    const second = await db.pool.connect();
    try {
      await first.query("begin");
      await second.query("begin isolation level repeatable read");
      await second.query("select 1"); // takes the snapshot
      await first.query(
        "update public.blurred_fields set free = true where field_key = 'asking_price'",
      );
      // The outcome is captured at once: the refusal can arrive on the second
      // connection before the first one's commit has been answered.
      const secondOutcome = second.query(
        "update public.blurred_fields set starter = true where field_key = 'description'",
      ).then(() => null, (error: unknown) => error);
      const { rows } = await first.query<{ pid: number }>("select pg_backend_pid() as pid");
      await waitUntilBlockedBy(rows[0]!.pid);
      await first.query("commit");
      await assert.rejects(
        secondOutcome.then((error) => {
          if (error) throw error;
        }),
        sqlState("40001"),
      );
      await second.query("rollback");
      const policy = await expectedPolicy(db.pool);
      assert.ok(policy.get("free")!.includes("asking_price"));
      assert.ok(!policy.get("starter")!.includes("description"));
      await assertPolicyMirrorsFlags(db.pool, "after the first commit");
    } finally {
      await first.query("rollback").catch(() => {});
      await second.query("rollback").catch(() => {});
      first.release();
      second.release();
      await db.pool.query(
        "update public.blurred_fields set free = false where field_key = 'asking_price'",
      );
    }
    await assertPolicyMirrorsFlags(db.pool, "restored");
  },
);

/** Waits until some session is blocked by backend `pid`. */
async function waitUntilBlockedBy(pid: number): Promise<void> {
  for (let attempt = 0; attempt < 1000; attempt++) {
    const { rows } = await db.pool.query<{ n: number }>(
      "select count(*)::int as n from pg_stat_activity where $1 = any (pg_blocking_pids(pid))",
      [pid],
    );
    if (rows[0]!.n > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`No session got blocked by backend ${pid}`);
}

sqlTest(
  "blurred_fields_by_viewer and its refresh are out of clients' reach; listing_viewer_rows() tells the caller about themself only",
  async () => {
    for (
      const who of [identity("unauth"), identity("free"), {
        role: "authenticated" as const,
        userId: admin.id,
      }]
    ) {
      await asRole(db.pool, who, async (c) => {
        await rejectsWith(c, "42501", "select * from public.blurred_fields_by_viewer");
        await rejectsWith(
          c,
          "42501",
          "update public.blurred_fields_by_viewer set hide_url = false",
        );
        await rejectsWith(c, "42501", "select public.refresh_blurred_fields_by_viewer()");
      });
    }
    // Each row twice, unlocked and locked (a confidential listing the caller has no
    // access to: the confidential blur migration); only someone else's locked row
    // hides confidential fields. No own_listing rows for a visitor, who owns nothing.
    const ORDER = "order by own_listing, locked";
    await asRole(db.pool, identity("unauth"), async (c) => {
      const { rows } = await c.query(`select * from public.listing_viewer_rows() ${ORDER}`);
      assert.deepEqual(
        rows.map((r) => [r.user_id, r.own_listing, r.locked, r.hide_confidential, r.hidden_fields]),
        [
          [null, false, false, false, DEFAULT_HIDDEN.unauth],
          [null, false, true, true, DEFAULT_HIDDEN.unauth],
        ],
      );
    });
    await asRole(db.pool, identity("starter"), async (c) => {
      const { rows } = await c.query(`select * from public.listing_viewer_rows() ${ORDER}`);
      assert.deepEqual(
        rows.map((r) => [
          r.user_id,
          r.own_listing,
          r.sees_unapproved,
          r.locked,
          r.hide_confidential,
          r.hidden_fields,
        ]),
        [
          [viewers.starter.id, false, false, false, false, DEFAULT_HIDDEN.starter],
          [viewers.starter.id, false, false, true, true, DEFAULT_HIDDEN.starter],
          [viewers.starter.id, true, true, false, false, []],
          [viewers.starter.id, true, true, true, false, []],
        ],
      );
    });
    // A seller on the free plan.
    await asRole(db.pool, { role: "authenticated", userId: seller.id }, async (c) => {
      const { rows } = await c.query(
        `select own_listing, sees_unapproved, locked, hide_confidential, hidden_fields
         from public.listing_viewer_rows() ${ORDER}`,
      );
      assert.deepEqual(rows, [
        {
          own_listing: false,
          sees_unapproved: false,
          locked: false,
          hide_confidential: false,
          hidden_fields: DEFAULT_HIDDEN.free,
        },
        {
          own_listing: false,
          sees_unapproved: false,
          locked: true,
          hide_confidential: true,
          hidden_fields: DEFAULT_HIDDEN.free,
        },
        {
          own_listing: true,
          sees_unapproved: true,
          locked: false,
          hide_confidential: false,
          hidden_fields: [],
        },
        {
          own_listing: true,
          sees_unapproved: true,
          locked: true,
          hide_confidential: false,
          hidden_fields: [],
        },
      ]);
    });
    await asRole(db.pool, { role: "authenticated", userId: admin.id }, async (c) => {
      const { rows } = await c.query(
        `select own_listing, sees_unapproved, locked, hide_confidential, hidden_fields
         from public.listing_viewer_rows() ${ORDER}`,
      );
      assert.deepEqual(rows, [
        {
          own_listing: false,
          sees_unapproved: true,
          locked: false,
          hide_confidential: false,
          hidden_fields: [],
        },
        {
          own_listing: false,
          sees_unapproved: true,
          locked: true,
          hide_confidential: false,
          hidden_fields: [],
        },
        {
          own_listing: true,
          sees_unapproved: true,
          locked: false,
          hide_confidential: false,
          hidden_fields: [],
        },
        {
          own_listing: true,
          sees_unapproved: true,
          locked: true,
          hide_confidential: false,
          hidden_fields: [],
        },
      ]);
    });
  },
);
