import assert from "node:assert/strict";
import { isDeepStrictEqual } from "node:util";
import {
  type AccessMode,
  BLUR_FIELDS,
  confidentialFieldsHidden,
  FIELD_TO_COLUMN_MAP,
  isFieldHidden,
} from "../../shared/blur.ts";
import { ACCESS_REQUEST_STATUSES } from "../../shared/listing_access.ts";
import type { AccessRequestStatus } from "../../shared/listing_access_schemas.ts";
import { createTestDatabase, sqlTest } from "../support/db.ts";
import { accessRequest, makeConfidential } from "../support/listing_access.ts";
import { asRole, createUser, queryAs, type SqlIdentity, type TestUser } from "../support/sql.ts";
import { createListing, rejectsWith, setSubscription, type TestListing } from "./core_fixtures.ts";

const db = await createTestDatabase();

type Plan = "unauth" | "free" | "starter" | "pro";

/** The seeded plan blur: hidden field keys per plan. */
const PLAN_HIDDEN: Record<Plan, string[]> = {
  unauth: ["description", "monthly_profit", "monthly_revenue", "monthly_traffic", "seller", "url"],
  free: ["monthly_profit", "monthly_traffic", "seller", "url"],
  starter: ["seller", "url"],
  pro: [],
};

/**
 * The confidential fields of the matrix's nda listing: two the free plan
 * hides anyway, one it shows (revenue), one every signed-in plan shows
 * (description), so each layer hides something the other does not.
 */
const CONFIDENTIAL = ["description", "monthly_revenue", "seller", "url"];

const seller = await createUser(db.pool);
const admin = await createUser(db.pool, { admin: true });
const nda = await createListing(db.pool, seller.id, "approved");
await makeConfidential(db.pool, nda.id, CONFIDENTIAL);
const open = await createListing(db.pool, seller.id, "approved");

/** One viewer of the matrix. */
interface Viewer {
  name: string;
  who: SqlIdentity;
  /** The user can_view_field() and listing_visibility() are asked about (null: a visitor). */
  userId: string | null;
  plan: Plan;
  role: "visitor" | "buyer" | "seller" | "admin";
  access: AccessRequestStatus | "none";
}

const viewers: Viewer[] = [
  {
    name: "visitor",
    who: { role: "anon" },
    userId: null,
    plan: "unauth",
    role: "visitor",
    access: "none",
  },
  {
    name: "seller",
    who: { role: "authenticated", userId: seller.id },
    userId: seller.id,
    plan: "free",
    role: "seller",
    access: "none",
  },
  {
    name: "admin",
    who: { role: "authenticated", userId: admin.id },
    userId: admin.id,
    plan: "free",
    role: "admin",
    access: "none",
  },
];
for (const plan of ["free", "starter", "pro"] as const) {
  for (const access of ["none", ...ACCESS_REQUEST_STATUSES] as const) {
    const user: TestUser = await createUser(db.pool);
    if (plan !== "free") await setSubscription(db.pool, user.id, plan);
    if (access !== "none") {
      // The same request on the open listing (made while it was confidential):
      // an open listing shows its fields whatever the access.
      await accessRequest(db.pool, nda.id, user.id, access);
      await accessRequest(db.pool, open.id, user.id, access);
    }
    viewers.push({
      name: `${plan} buyer, access ${access}`,
      who: { role: "authenticated", userId: user.id },
      userId: user.id,
      plan,
      role: "buyer",
      access,
    });
  }
}

/** What shared/blur.ts says `viewer` sees of field `field` of `listing`. */
function expectedHidden(viewer: Viewer, field: string, mode: AccessMode): boolean {
  const seesEverything = viewer.role === "seller" || viewer.role === "admin";
  return isFieldHidden(field, {
    planHidden: seesEverything ? [] : PLAN_HIDDEN[viewer.plan],
    accessMode: mode,
    confidentialFields: mode === "nda" ? CONFIDENTIAL : ["seller", "url"],
    seesEverything,
    hasAccess: viewer.access === "approved",
  });
}

/** Everything the database says about `viewer` and `listing`: the view row, both can_view_field()s, listing_visibility(). */
async function databaseView(viewer: Viewer, listing: TestListing) {
  const row = await asRole(db.pool, viewer.who, async (c) => {
    const { rows } = await c.query<{ row: Record<string, unknown> }>(
      "select to_jsonb(v) as row from public.listing_view_secure v where v.id = $1",
      [listing.id],
    );
    return rows[0]?.row;
  });
  const answers = await asRole(db.pool, viewer.who, async (c) => {
    const { rows } = await c.query<{ field: string; own: boolean }>(
      "select f as field, public.can_view_field($1, f) as own from unnest($2::text[]) f",
      [listing.id, BLUR_FIELDS],
    );
    return new Map(rows.map((r) => [r.field, r.own]));
  });
  const { rows: asked } = await db.pool.query<{ field: string; ok: boolean }>(
    "select f as field, public.can_view_field($1, f, $3) as ok from unnest($2::text[]) f",
    [listing.id, BLUR_FIELDS, viewer.userId],
  );
  const { rows: [visibility] } = await db.pool.query<{
    sees_listing: boolean;
    sees_everything: boolean;
    hidden_fields: string[];
    confidential_fields_hidden: string[];
  }>("select * from public.listing_visibility($1, $2)", [listing.id, viewer.userId]);
  return {
    row,
    answers,
    asked: new Map(asked.map((r) => [r.field, r.ok])),
    visibility: visibility!,
  };
}

sqlTest(
  "the blur rule: listing_view_secure, can_view_field(), listing_visibility() and shared/blur.ts agree for every plan, access state, field and viewer",
  async () => {
    const stored = new Map<string, Record<string, unknown>>();
    for (const listing of [nda, open]) {
      const { rows } = await db.pool.query<{ row: Record<string, unknown> }>(
        "select to_jsonb(l) as row from public.listings l where l.id = $1",
        [listing.id],
      );
      stored.set(listing.id, rows[0]!.row);
    }
    let checked = 0;
    const check = async (flags: string) => {
      for (const viewer of viewers) {
        for (const [listing, mode] of [[nda, "nda"], [open, "open"]] as const) {
          const truth = stored.get(listing.id)!;
          const { row, answers, asked, visibility } = await databaseView(viewer, listing);
          assert.ok(row, `${viewer.name} sees the approved ${mode} listing`);
          const where = (field: string) => `${flags}, ${mode} listing, ${viewer.name}: ${field}`;
          const seesEverything = viewer.role === "seller" || viewer.role === "admin";
          const planHidden = seesEverything ? [] : PLAN_HIDDEN[viewer.plan];
          const confidentialHidden = confidentialFieldsHidden({
            accessMode: mode,
            confidentialFields: mode === "nda" ? CONFIDENTIAL : ["seller", "url"],
            seesEverything,
            hasAccess: viewer.access === "approved",
          });
          // The two layers, each named apart on the row.
          assert.deepEqual(row.blurred_fields, planHidden, where("blurred_fields"));
          assert.deepEqual(
            row.confidential_fields_hidden,
            confidentialHidden,
            where("confidential_fields_hidden"),
          );
          assert.equal(row.access_mode, mode, where("access_mode"));
          assert.equal(visibility.sees_listing, true, where("listing_visibility sees it"));
          assert.equal(visibility.sees_everything, seesEverything, where("sees everything"));
          assert.deepEqual(
            visibility.confidential_fields_hidden,
            confidentialHidden,
            where("listing_visibility's confidential fields"),
          );
          for (const field of BLUR_FIELDS) {
            const hidden = expectedHidden(viewer, field, mode);
            const column = FIELD_TO_COLUMN_MAP[field];
            if (hidden) {
              assert.equal(row[column], null, `${where(field)} is NULL`);
            } else {
              assert.ok(isDeepStrictEqual(row[column], truth[column]), `${where(field)} is shown`);
            }
            assert.equal(
              answers.get(field),
              !hidden,
              `${where(field)} (can_view_field as the viewer)`,
            );
            assert.equal(asked.get(field), !hidden, `${where(field)} (can_view_field about them)`);
            assert.equal(
              visibility.hidden_fields.includes(field),
              hidden,
              `${where(field)} (listing_visibility)`,
            );
            checked++;
          }
        }
      }
    };
    await check("seeded flags");
    // With every plan flag flipped the plan layer changes and the confidentiality
    // layer does not: an approved buyer still misses what their plan hides.
    const flip = `update public.blurred_fields
      set unauth = not unauth, free = not free, starter = not starter, pro = not pro`;
    await db.pool.query(flip);
    const flipped = structuredClone(PLAN_HIDDEN);
    for (const plan of Object.keys(PLAN_HIDDEN) as Plan[]) {
      PLAN_HIDDEN[plan] = BLUR_FIELDS.filter((f) => !flipped[plan].includes(f)).sort();
    }
    try {
      await check("flipped flags");
    } finally {
      await db.pool.query(flip);
      Object.assign(PLAN_HIDDEN, flipped);
    }
    assert.equal(checked, 2 * viewers.length * 2 * BLUR_FIELDS.length);
    assert.equal(viewers.length, 3 + 3 * (1 + ACCESS_REQUEST_STATUSES.length));
  },
);

sqlTest(
  "the blur rule: a confidential value cannot be probed with a filter or a sort",
  async () => {
    const buyer = await createUser(db.pool);
    await setSubscription(db.pool, buyer.id, "pro"); // the plan hides nothing
    await accessRequest(db.pool, nda.id, buyer.id, "pending");
    await asRole(db.pool, { role: "authenticated", userId: buyer.id }, async (c) => {
      for (
        const [column, value] of [
          ["url", nda.url],
          ["description", nda.description],
          ["monthly_revenue", nda.monthly_revenue],
          ["seller_id", nda.seller_id],
        ]
      ) {
        const { rows } = await c.query(
          `select id from public.listing_view_secure where id = $1 and ${column} = $2`,
          [nda.id, value],
        );
        assert.deepEqual(rows, [], `a filter on the hidden ${column}`);
        const like = await c.query(
          `select id from public.listing_view_secure where id = $1 and ${column}::text like $2`,
          [nda.id, `${String(value).slice(0, -1)}%`],
        );
        assert.deepEqual(like.rows, [], `a prefix of the hidden ${column}`);
      }
      // Sorted by a hidden column, the listing sorts as a NULL does.
      const { rows } = await c.query<{ id: string; url: string | null }>(
        `select id, url from public.listing_view_secure where id = any($1)
         order by url nulls first`,
        [[nda.id, open.id]],
      );
      assert.deepEqual(rows.map((r) => r.id), [nda.id, open.id]);
      // A visible field of the same listing still filters.
      const byPrice = await c.query(
        "select id from public.listing_view_secure where asking_price = $1",
        [
          nda.asking_price,
        ],
      );
      assert.deepEqual(byPrice.rows, [{ id: nda.id }]);
    });
  },
);

sqlTest(
  "confidential fields: only blur-able keys, stored sorted and once; an nda listing keeps at least one",
  async () => {
    const listing = await createListing(db.pool, seller.id, "draft");
    const update =
      "update public.listings set access_mode = $2, confidential_fields = $3 where id = $1";
    await asRole(db.pool, { role: "authenticated", userId: seller.id }, async (c) => {
      for (const key of ["title", "seller_id", "no_such_field", ""]) {
        await c.query("savepoint s");
        const error = await c.query(update, [listing.id, "nda", ["url", key]]).then(
          () => null,
          (e) => e,
        );
        await c.query("rollback to savepoint s");
        assert.equal(error?.code, "22023", key);
        assert.match(
          error.message,
          new RegExp(`"${key}" is not a field that can be kept confidential`),
        );
        assert.match(
          error.hint,
          /asking_price, description, monthly_profit, monthly_revenue, monthly_traffic, seller, url/,
        );
      }
      await rejectsWith(
        c,
        "23514",
        update,
        [listing.id, "nda", []],
        "nda with nothing confidential",
      );
      await rejectsWith(c, "23502", update, [listing.id, "nda", null]);
      await rejectsWith(c, "23514", update, [listing.id, "secret", ["url"]], "an unknown mode");
      const { rows } = await c.query<{ confidential_fields: string[] }>(
        `${update} returning confidential_fields`,
        [listing.id, "nda", ["url", "seller", "url", "asking_price"]],
      );
      assert.deepEqual(rows[0]!.confidential_fields, ["asking_price", "seller", "url"]);
      // An open listing may keep an empty list (nothing is hidden anyway).
      const openRows = await c.query<{ confidential_fields: string[] }>(
        `${update} returning confidential_fields`,
        [listing.id, "open", []],
      );
      assert.deepEqual(openRows.rows[0]!.confidential_fields, []);
    });
    // A new listing is open, with the default confidential fields.
    const { rows } = await db.pool.query(
      "select access_mode, confidential_fields from public.listings where id = $1",
      [open.id],
    );
    assert.deepEqual(rows[0], { access_mode: "open", confidential_fields: ["seller", "url"] });
  },
);

sqlTest(
  "confidential fields: revealing more of an approved listing sends it back to review; hiding more applies at once",
  async () => {
    const statusAfter = async (
      who: TestUser,
      from: { mode: AccessMode; fields: string[] },
      to: { mode: AccessMode; fields: string[] },
    ) => {
      const listing = await createListing(db.pool, seller.id, "approved");
      await db.pool.query(
        "update public.listings set access_mode = $2, confidential_fields = $3 where id = $1",
        [listing.id, from.mode, from.fields],
      );
      const [row] = await queryAs<{ review_status: string }>(
        db.pool,
        who,
        `update public.listings set access_mode = $2, confidential_fields = $3 where id = $1
         returning review_status`,
        [listing.id, to.mode, to.fields],
      );
      return row!.review_status;
    };
    const nda = (...fields: string[]) => ({ mode: "nda" as const, fields });
    const open = (...fields: string[]) => ({ mode: "open" as const, fields });
    // The seller revealing more: reviewed again.
    assert.equal(
      await statusAfter(seller, nda("seller", "url"), open("seller", "url")),
      "pending_review",
    );
    assert.equal(await statusAfter(seller, nda("seller", "url"), nda("url")), "pending_review");
    assert.equal(
      await statusAfter(seller, nda("seller", "url"), nda("description", "url")),
      "pending_review",
      "one field swapped for another reveals the dropped one",
    );
    // Hiding more, or changing nothing visible: stays approved.
    assert.equal(
      await statusAfter(seller, open("seller", "url"), nda("seller", "url")),
      "approved",
    );
    assert.equal(await statusAfter(seller, nda("url"), nda("seller", "url")), "approved");
    assert.equal(await statusAfter(seller, open("seller", "url"), open("url")), "approved");
    // An admin's change needs no review.
    assert.equal(await statusAfter(admin, nda("seller", "url"), open("seller", "url")), "approved");
  },
);

sqlTest(
  "the blur rule: the price-alert matcher and can_view_field() keep a confidential price from a buyer without access",
  async () => {
    const listing = await createListing(db.pool, seller.id, "approved");
    await makeConfidential(db.pool, listing.id, ["asking_price", "url"]);
    const withAccess = await createUser(db.pool);
    const without = await createUser(db.pool);
    await accessRequest(db.pool, listing.id, withAccess.id, "approved");
    await accessRequest(db.pool, listing.id, without.id, "pending");
    for (const user of [withAccess, without]) {
      await db.pool.query(
        `insert into public.price_alerts (user_id, listing_id, target_price, channels)
         values ($1, $2, $3, '{in_app}')`,
        [user.id, listing.id, Number(listing.asking_price) + 1],
      );
    }
    await db.pool.query("select * from public.match_price_alerts(now() - interval '1 day')");
    const { rows } = await db.pool.query<{ user_id: string }>(
      "select user_id from public.price_alert_events where listing_id = $1",
      [listing.id],
    );
    assert.deepEqual(rows.map((r) => r.user_id), [withAccess.id]);
  },
);
