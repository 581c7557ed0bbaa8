import assert from "node:assert/strict";
import pg from "pg";
import { createTestDatabase, sqlTest } from "../support/db.ts";
import { asRole, createUser, type SqlIdentity, type TestUser } from "../support/sql.ts";
import { createListing, rejectsWith, sqlState } from "./core_fixtures.ts";

const db = await createTestDatabase();

const seller = await createUser(db.pool);
const otherSeller = await createUser(db.pool);
const stranger = await createUser(db.pool);
const admin = await createUser(db.pool, { admin: true });

interface Placement {
  id: string;
  listing_id: string;
  seller_id: string;
  starts_at: Date;
  ends_at: Date;
  status: string;
  created_by: string | null;
  activated_at: Date | null;
  expired_at: Date | null;
  cancelled_at: Date | null;
  cancelled_by: string | null;
}

interface ListingSponsorship {
  is_sponsored: boolean;
  sponsored_until: Date | null;
  updated_at: Date;
}

interface Change {
  id: string;
  change: string;
}

function identityOf(who: TestUser): SqlIdentity {
  return { role: "authenticated", userId: who.id };
}

const INSERT = `insert into public.sponsored_listings (listing_id, seller_id, starts_at, ends_at)
  values ($1, $2, $3::timestamptz + make_interval(mins => $4), $3::timestamptz + make_interval(mins => $5))
  returning *`;

/** The parameters of {@linkcode INSERT}: minutes from `base` (default now). */
function windowOf(
  listingId: string,
  fromMinutes: number,
  toMinutes: number,
  sellerId: string | null = null,
  base = new Date(),
): unknown[] {
  return [listingId, sellerId, base, fromMinutes, toMinutes];
}

/**
 * Schedules a placement of `listingId` from `fromMinutes` to `toMinutes`
 * after `base` (default now) as the service connection; the seller defaults
 * to the listing's.
 */
async function place(
  listingId: string,
  fromMinutes: number,
  toMinutes: number,
  options: { sellerId?: string; base?: Date } = {},
): Promise<Placement> {
  const { rows } = await db.pool.query<Placement>(
    INSERT,
    windowOf(listingId, fromMinutes, toMinutes, options.sellerId, options.base),
  );
  return rows[0]!;
}

async function placement(id: string): Promise<Placement> {
  const { rows } = await db.pool.query<Placement>(
    "select * from public.sponsored_listings where id = $1",
    [id],
  );
  return rows[0]!;
}

async function sponsorship(listingId: string): Promise<ListingSponsorship> {
  const { rows } = await db.pool.query<ListingSponsorship>(
    "select is_sponsored, sponsored_until, updated_at from public.listings where id = $1",
    [listingId],
  );
  return rows[0]!;
}

/** Applies the changes due `minutesAgo` minutes ago (0: now) as the service connection. */
async function apply(minutesAgo = 0, pool: pg.Pool | pg.PoolClient = db.pool): Promise<Change[]> {
  const { rows } = await pool.query<Change>(
    `select id, change from public.apply_sponsored_changes(now() - make_interval(mins => $1))`,
    [minutesAgo],
  );
  return rows;
}

/** Only the rows about `ids`, so that tests sharing the database do not see each other. */
function about(changes: Change[], ...ids: string[]): Change[] {
  return changes.filter((c) => ids.includes(c.id)).sort((a, b) => a.id.localeCompare(b.id));
}

function sorted(changes: Change[]): Change[] {
  return [...changes].sort((a, b) => a.id.localeCompare(b.id));
}

async function tableSnapshot(): Promise<string> {
  const { rows } = await db.pool.query("select * from public.sponsored_listings order by id");
  return JSON.stringify(rows);
}

// -----------------------------------------------------------------------------
// Scheduling: seller, window, overlap
// -----------------------------------------------------------------------------

sqlTest(
  "sponsored_listings: an admin schedules a placement; the seller defaults to the listing's",
  async () => {
    const listing = await createListing(db.pool, seller.id, "approved");
    const row = await asRole(db.pool, identityOf(admin), async (c) => {
      const { rows } = await c.query<Placement>(
        `insert into public.sponsored_listings (listing_id, starts_at, ends_at)
         values ($1, now() + interval '1 day', now() + interval '8 days') returning *`,
        [listing.id],
      );
      await c.query("commit");
      return rows[0]!;
    });
    assert.equal(row.seller_id, seller.id);
    assert.equal(row.status, "scheduled");
    assert.equal(row.created_by, admin.id);
    assert.equal(row.activated_at, null);
    assert.equal((await sponsorship(listing.id)).is_sponsored, false);
  },
);

sqlTest(
  "sponsored_listings: a seller who is not the listing's, or an unknown listing, is refused",
  async () => {
    const listing = await createListing(db.pool, seller.id, "approved");
    const before = await tableSnapshot();
    await assert.rejects(
      place(listing.id, 60, 120, { sellerId: otherSeller.id }),
      sqlState("23514"),
    );
    await asRole(db.pool, identityOf(admin), async (c) => {
      await rejectsWith(c, "23514", INSERT, windowOf(listing.id, 60, 120, otherSeller.id));
      await rejectsWith(c, "23503", INSERT, windowOf(crypto.randomUUID(), 60, 120));
    });
    assert.equal(await tableSnapshot(), before);
  },
);

sqlTest("sponsored_listings: a window must end after it starts", async () => {
  const listing = await createListing(db.pool, seller.id, "approved");
  const before = await tableSnapshot();
  await assert.rejects(place(listing.id, 120, 60), sqlState("23514"));
  await assert.rejects(place(listing.id, 60, 60), sqlState("23514"));
  assert.equal(await tableSnapshot(), before);
});

sqlTest(
  "sponsored_listings: overlapping scheduled or active placements of a listing are refused",
  async () => {
    const listing = await createListing(db.pool, seller.id, "approved");
    const other = await createListing(db.pool, seller.id, "approved");
    const base = new Date();
    const first = await place(listing.id, 60, 180, { base });
    const before = await tableSnapshot();
    for (const [from, to] of [[60, 180], [0, 61], [179, 300], [90, 120], [0, 600]]) {
      await assert.rejects(
        place(listing.id, from!, to!, { base }),
        sqlState("23P01"),
        `${from}..${to}`,
      );
    }
    assert.equal(await tableSnapshot(), before);
    // Windows are half-open: touching ones do not overlap; other listings are independent.
    await place(listing.id, 0, 60, { base });
    await place(listing.id, 180, 240, { base });
    await place(other.id, 60, 180, { base });
    // Moving a scheduled window onto another is refused the same way.
    await assert.rejects(
      db.pool.query(
        "update public.sponsored_listings set ends_at = ends_at + interval '1 minute' where id = $1",
        [first.id],
      ),
      sqlState("23P01"),
    );
    // A cancelled placement frees its window.
    await db.pool.query("update public.sponsored_listings set status = 'cancelled' where id = $1", [
      first.id,
    ]);
    await place(listing.id, 60, 180, { base });
  },
);

sqlTest(
  "sponsored_listings: two overlapping placements written at once: one is scheduled",
  async () => {
    const listing = await createListing(db.pool, seller.id, "approved");
    const pool = new pg.Pool({ connectionString: db.url, max: 2 });
    try {
      const [a, b] = [await pool.connect(), await pool.connect()];
      try {
        await a.query("begin");
        await b.query("begin");
        await a.query(INSERT, windowOf(listing.id, 60, 180));
        // b waits for a's lock on the listing row, then sees a's placement.
        const second = b.query(INSERT, windowOf(listing.id, 120, 240)).then(
          () => "inserted",
          (error: { code?: string }) => error.code,
        );
        await a.query("commit");
        assert.equal(await second, "23P01");
        await b.query("rollback");
      } finally {
        a.release();
        b.release();
      }
    } finally {
      await pool.end();
    }
    const { rows } = await db.pool.query(
      "select count(*)::int as n from public.sponsored_listings where listing_id = $1",
      [listing.id],
    );
    assert.equal(rows[0]!.n, 1);
  },
);

// -----------------------------------------------------------------------------
// The state machine and the listing mirror
// -----------------------------------------------------------------------------

sqlTest(
  "apply_sponsored_changes(): a placement whose window began activates and sponsors its listing",
  async () => {
    const listing = await createListing(db.pool, seller.id, "approved");
    const { updated_at: editedAt } = await sponsorship(listing.id);
    const due = await place(listing.id, -10, 60);
    const later = await place(listing.id, 60, 120);
    assert.deepEqual(about(await apply(), due.id, later.id), [{ id: due.id, change: "activate" }]);
    const row = await placement(due.id);
    assert.equal(row.status, "active");
    assert.ok(row.activated_at);
    assert.equal((await placement(later.id)).status, "scheduled");
    const listed = await sponsorship(listing.id);
    assert.equal(listed.is_sponsored, true);
    assert.deepEqual(listed.sponsored_until, due.ends_at);
    assert.deepEqual(listed.updated_at, editedAt, "a job column is not an edit");
    // A rerun finds nothing.
    assert.deepEqual(about(await apply(), due.id, later.id), []);
  },
);

sqlTest(
  "apply_sponsored_changes(): an active placement expires at its end; the next one takes over",
  async () => {
    const listing = await createListing(db.pool, seller.id, "approved");
    const first = await place(listing.id, -120, -60);
    const next = await place(listing.id, -60, 60);
    // Applied 90 minutes ago: the first was active then.
    assert.deepEqual(about(await apply(90), first.id, next.id), [
      { id: first.id, change: "activate" },
    ]);
    assert.deepEqual((await sponsorship(listing.id)).sponsored_until, first.ends_at);
    // Now: the first ends, the next begins, the listing stays sponsored until the next's end.
    assert.deepEqual(
      about(await apply(), first.id, next.id),
      sorted([{ id: first.id, change: "expire" }, { id: next.id, change: "activate" }]),
    );
    const ended = await placement(first.id);
    assert.equal(ended.status, "expired");
    assert.ok(ended.activated_at && ended.expired_at);
    const listed = await sponsorship(listing.id);
    assert.equal(listed.is_sponsored, true);
    assert.deepEqual(listed.sponsored_until, next.ends_at);
  },
);

sqlTest(
  "apply_sponsored_changes(): the last placement's end clears the listing's sponsorship",
  async () => {
    const listing = await createListing(db.pool, seller.id, "approved");
    const only = await place(listing.id, -120, -60);
    await apply(90);
    assert.equal((await sponsorship(listing.id)).is_sponsored, true);
    assert.deepEqual(about(await apply(), only.id), [{ id: only.id, change: "expire" }]);
    const listed = await sponsorship(listing.id);
    assert.equal(listed.is_sponsored, false);
    assert.equal(listed.sponsored_until, null);
  },
);

sqlTest(
  "apply_sponsored_changes(): a listing not approved keeps its placement scheduled until it is",
  async () => {
    const listing = await createListing(db.pool, seller.id, "pending_review");
    const due = await place(listing.id, -10, 60);
    assert.deepEqual(about(await apply(), due.id), []);
    assert.equal((await placement(due.id)).status, "scheduled");
    assert.equal((await sponsorship(listing.id)).is_sponsored, false);

    await db.pool.query("update public.listings set review_status = 'approved' where id = $1", [
      listing.id,
    ]);
    assert.deepEqual(about(await apply(), due.id), [{ id: due.id, change: "activate" }]);
    assert.equal((await sponsorship(listing.id)).is_sponsored, true);
  },
);

sqlTest(
  "apply_sponsored_changes(): a scheduled placement whose window passed expires unstarted",
  async () => {
    const listing = await createListing(db.pool, seller.id, "draft");
    const missed = await place(listing.id, -120, -60);
    assert.deepEqual(about(await apply(), missed.id), [{ id: missed.id, change: "expire" }]);
    const row = await placement(missed.id);
    assert.equal(row.status, "expired");
    assert.equal(row.activated_at, null);
    assert.ok(row.expired_at);
    assert.equal((await sponsorship(listing.id)).is_sponsored, false);
  },
);

sqlTest(
  "sponsored_changes_due(): lists what apply would change at a time, changing nothing",
  async () => {
    const listing = await createListing(db.pool, seller.id, "approved");
    const soon = await place(listing.id, 30, 90);
    const before = await tableSnapshot();
    const at = async (sql: string) =>
      about(
        (await db.pool.query<Change>(
          `select id, change from public.sponsored_changes_due(${sql})`,
        )).rows,
        soon.id,
      );
    assert.deepEqual(await at("now()"), []);
    assert.deepEqual(await at("now() + interval '1 hour'"), [{ id: soon.id, change: "activate" }]);
    assert.deepEqual(await at("now() + interval '2 hours'"), [{ id: soon.id, change: "expire" }]);
    assert.equal(await tableSnapshot(), before);
    // Applying at a future time is refused.
    await assert.rejects(
      db.pool.query("select * from public.apply_sponsored_changes(now() + interval '1 hour')"),
      sqlState("22023"),
    );
    assert.equal(await tableSnapshot(), before);
  },
);

sqlTest(
  "apply_sponsored_changes(): two concurrent applies change each placement once",
  async () => {
    const listings = await Promise.all(
      Array.from({ length: 4 }, () => createListing(db.pool, seller.id, "approved")),
    );
    const due = await Promise.all(listings.map((l) => place(l.id, -5, 60)));
    const ids = due.map((p) => p.id);
    const pool = new pg.Pool({ connectionString: db.url, max: 2 });
    try {
      const [a, b] = [await pool.connect(), await pool.connect()];
      try {
        await a.query("begin");
        await b.query("begin");
        const first = about(await apply(0, a), ...ids);
        // b waits for a's row locks, then finds the rows no longer due.
        const second = apply(0, b);
        await a.query("commit");
        const seconds = about(await second, ...ids);
        await b.query("commit");
        assert.deepEqual(first, sorted(ids.map((id) => ({ id, change: "activate" }))));
        assert.deepEqual(seconds, []);
      } finally {
        a.release();
        b.release();
      }
    } finally {
      await pool.end();
    }
    for (const listing of listings) {
      assert.equal(
        (await sponsorship(listing.id)).is_sponsored,
        true,
      );
    }
  },
);

sqlTest(
  "sponsored_listings: an admin cancels a placement; an active one stops sponsoring its listing",
  async () => {
    const listing = await createListing(db.pool, seller.id, "approved");
    const live = await place(listing.id, -10, 60);
    const later = await place(listing.id, 60, 120);
    await apply();
    assert.equal((await sponsorship(listing.id)).is_sponsored, true);
    await asRole(db.pool, identityOf(admin), async (c) => {
      const { rowCount } = await c.query(
        "update public.sponsored_listings set status = 'cancelled' where id = any($1)",
        [[live.id, later.id]],
      );
      assert.equal(rowCount, 2);
      await c.query("commit");
    });
    for (const id of [live.id, later.id]) {
      const row = await placement(id);
      assert.equal(row.status, "cancelled");
      assert.equal(row.cancelled_by, admin.id);
      assert.ok(row.cancelled_at);
    }
    const listed = await sponsorship(listing.id);
    assert.equal(listed.is_sponsored, false);
    assert.equal(listed.sponsored_until, null);
  },
);

sqlTest("sponsored_listings: moves outside the state machine are refused", async () => {
  const listing = await createListing(db.pool, seller.id, "approved");
  const other = await createListing(db.pool, seller.id, "approved");
  const scheduled = await place(listing.id, 60, 120);
  const active = await place(listing.id, -10, 30);
  const ended = await place(listing.id, -120, -60);
  await apply();
  assert.equal((await placement(active.id)).status, "active");
  assert.equal((await placement(ended.id)).status, "expired");
  const before = await tableSnapshot();
  const set = (assignment: string) =>
    `update public.sponsored_listings set ${assignment} where id = $1`;

  // Activation and expiry belong to the job, not to admins.
  await asRole(db.pool, identityOf(admin), async (c) => {
    await rejectsWith(c, "42501", set("status = 'active'"), [scheduled.id]);
    await rejectsWith(c, "42501", set("status = 'expired'"), [active.id]);
    await rejectsWith(c, "PT409", set("status = 'scheduled'"), [active.id]);
    await rejectsWith(c, "PT409", set("status = 'active'"), [ended.id]);
    await rejectsWith(c, "PT409", set("status = 'cancelled'"), [ended.id]);
    await rejectsWith(c, "PT409", set("ends_at = ends_at + interval '1 day'"), [active.id]);
    // Columns that are not the admin's to write.
    await rejectsWith(c, "42501", set("listing_id = $2"), [scheduled.id, other.id]);
    await rejectsWith(c, "42501", set("activated_at = now()"), [scheduled.id]);
  });
  // The service connection obeys the same machine.
  const service = [
    [set("status = 'scheduled'"), [active.id]],
    [set("status = 'active'"), [ended.id]],
    [set("listing_id = $2"), [scheduled.id, other.id]],
    [set("activated_at = now()"), [active.id]],
    [set("started_notified_at = now()"), [scheduled.id]],
    [
      `insert into public.sponsored_listings (listing_id, starts_at, ends_at, status, activated_at)
       values ($1, now() + interval '1 day', now() + interval '2 days', 'active', now())`,
      [other.id],
    ],
  ] as const;
  for (const [sql, params] of service) {
    await assert.rejects(
      db.pool.query(sql, [...params]),
      (error: { code?: string }) => ["PT409", "23514"].includes(error.code ?? ""),
      sql,
    );
  }
  assert.equal(await tableSnapshot(), before);

  // A scheduled placement's window may move (admins, the service connection).
  await asRole(db.pool, identityOf(admin), async (c) => {
    const { rowCount } = await c.query(set("ends_at = ends_at + interval '1 hour'"), [
      scheduled.id,
    ]);
    assert.equal(rowCount, 1);
  });
});

// -----------------------------------------------------------------------------
// Row level security and privileges
// -----------------------------------------------------------------------------

sqlTest(
  "sponsored_listings RLS: sellers read their own, admins all, strangers none, anon nothing",
  async () => {
    const mine = await place((await createListing(db.pool, seller.id, "approved")).id, 60, 120);
    const theirs = await place(
      (await createListing(db.pool, otherSeller.id, "approved")).id,
      60,
      120,
    );
    const read = async (who: TestUser) =>
      await asRole(db.pool, identityOf(who), async (c) => {
        const { rows } = await c.query<{ id: string }>(
          "select id from public.sponsored_listings where id = any($1) order by id",
          [[mine.id, theirs.id]],
        );
        return rows.map((r) => r.id);
      });
    assert.deepEqual(await read(seller), [mine.id]);
    assert.deepEqual(await read(otherSeller), [theirs.id]);
    assert.deepEqual(await read(stranger), []);
    assert.deepEqual(await read(admin), [mine.id, theirs.id].sort());
    await asRole(db.pool, { role: "anon" }, async (c) => {
      await rejectsWith(c, "42501", "select id from public.sponsored_listings");
    });
  },
);

sqlTest("sponsored_listings RLS: sellers and anon cannot schedule, change or cancel", async () => {
  const listing = await createListing(db.pool, seller.id, "approved");
  const mine = await place(listing.id, 60, 120);
  const before = await tableSnapshot();
  await asRole(db.pool, identityOf(seller), async (c) => {
    await rejectsWith(c, "42501", INSERT, windowOf(listing.id, 200, 300, seller.id));
    for (
      const sql of [
        "update public.sponsored_listings set status = 'cancelled' where id = $1",
        "update public.sponsored_listings set ends_at = ends_at + interval '1 day' where id = $1",
      ]
    ) {
      const { rowCount } = await c.query(sql, [mine.id]);
      assert.equal(rowCount, 0, sql);
    }
    await rejectsWith(c, "42501", "delete from public.sponsored_listings where id = $1", [
      mine.id,
    ]);
  });
  await asRole(db.pool, { role: "anon" }, async (c) => {
    await rejectsWith(c, "42501", INSERT, windowOf(listing.id, 200, 300, seller.id));
    await rejectsWith(c, "42501", "update public.sponsored_listings set status = 'cancelled'");
    await rejectsWith(c, "42501", "delete from public.sponsored_listings");
  });
  assert.equal(await tableSnapshot(), before);
});

sqlTest(
  "sponsored_changes_due() and apply_sponsored_changes() are the service role's alone",
  async () => {
    const listing = await createListing(db.pool, seller.id, "approved");
    const due = await place(listing.id, -5, 60);
    const before = await tableSnapshot();
    for (const identity of [identityOf(admin), identityOf(seller), { role: "anon" } as const]) {
      await asRole(db.pool, identity, async (c) => {
        await rejectsWith(c, "42501", "select * from public.sponsored_changes_due(now())");
        await rejectsWith(c, "42501", "select * from public.apply_sponsored_changes(now())");
        await rejectsWith(c, "42501", "select public.sync_listing_sponsorship($1)", [listing.id]);
      });
    }
    assert.equal(await tableSnapshot(), before);
    await asRole(db.pool, { role: "service_role" }, async (c) => {
      const { rows } = await c.query<Change>(
        "select id, change from public.apply_sponsored_changes()",
      );
      assert.deepEqual(about(rows, due.id), [{ id: due.id, change: "activate" }]);
    });
  },
);

sqlTest(
  "sponsored_listings: every column, constraint, index, trigger and policy has a comment",
  async () => {
    const { rows } = await db.pool.query<{ kind: string; name: string }>(
      `select 'column' as kind, a.attname::text as name
       from pg_attribute a
       where a.attrelid = 'public.sponsored_listings'::regclass and a.attnum > 0
         and not a.attisdropped
         and col_description(a.attrelid, a.attnum) is null
       union all
       select 'constraint', c.conname::text from pg_constraint c
       where c.conrelid = 'public.sponsored_listings'::regclass and c.contype <> 'n'
         and c.contype <> 'p' and obj_description(c.oid, 'pg_constraint') is null
       union all
       select 'index', i.indexrelid::regclass::text from pg_index i
       where i.indrelid = 'public.sponsored_listings'::regclass and not i.indisprimary
         and obj_description(i.indexrelid, 'pg_class') is null
       union all
       select 'trigger', t.tgname::text from pg_trigger t
       where t.tgrelid = 'public.sponsored_listings'::regclass and not t.tgisinternal
         and obj_description(t.oid, 'pg_trigger') is null
       union all
       select 'policy', p.polname::text from pg_policy p
       where p.polrelid = 'public.sponsored_listings'::regclass
         and obj_description(p.oid, 'pg_policy') is null`,
    );
    assert.deepEqual(rows, []);
  },
);
