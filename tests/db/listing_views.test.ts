import assert from "node:assert/strict";
import type pg from "pg";
import { createTestDatabase, sqlTest } from "../support/db.ts";
import { asRole, createUser, type SqlIdentity, type TestUser } from "../support/sql.ts";
import { createListing, rejectsWith, sqlState } from "./core_fixtures.ts";
import { viewsSettled } from "../support/views.ts";

const db = await createTestDatabase();

const seller = await createUser(db.pool);
const viewer = await createUser(db.pool);
const admin = await createUser(db.pool, { admin: true });

const ANON: SqlIdentity = { role: "anon" };
const as = (user: TestUser): SqlIdentity => ({ role: "authenticated", userId: user.id });

/** Calls `record_listing_view` as `who` and commits, as a PostgREST RPC would. */
async function recordView(
  who: SqlIdentity,
  listingId: string,
  anonymousId: string | null = null,
): Promise<boolean> {
  return await asRole(db.pool, who, async (c) => {
    const { rows } = await c.query<{ counted: boolean }>(
      "select public.record_listing_view($1, $2) as counted",
      [listingId, anonymousId],
    );
    await c.query("commit");
    return rows[0]!.counted;
  });
}

async function viewRows(listingId: string): Promise<Array<{ viewer_key: string }>> {
  const { rows } = await db.pool.query<{ viewer_key: string }>(
    "select viewer_key from public.listing_views where listing_id = $1 order by id",
    [listingId],
  );
  return rows;
}

async function viewsCount(listingId: string): Promise<number> {
  const { rows } = await db.pool.query<{ n: number }>(
    "select views_count::int as n from public.listings where id = $1",
    [listingId],
  );
  return rows[0]!.n;
}

/** Folds batches of `batch` until one comes back short; answers every batch's counts. */
async function foldAll(batch = 1000): Promise<Array<{ views: number; listings: number }>> {
  const batches: Array<{ views: number; listings: number }> = [];
  for (;;) {
    const { rows } = await db.pool.query<{ views: number; listings: number }>(
      "select views, listings from public.fold_listing_views($1)",
      [batch],
    );
    batches.push(rows[0]!);
    if (rows[0]!.views < batch) return batches;
  }
}

/** Inserts `n` views of `listingId` by distinct anonymous viewers, as the service connection. */
async function insertViews(listingId: string, n: number, hoursAgo = 0): Promise<void> {
  await db.pool.query(
    `insert into public.listing_views (listing_id, viewer_key, viewed_hour)
     select $1, 'a:bulk-viewer-' || g || '-' || $3::int,
            date_trunc('hour', now(), 'UTC') - make_interval(hours => $3::int)
     from generate_series(1, $2::int) g`,
    [listingId, n, hoursAgo],
  );
}

sqlTest("record_listing_view() counts an anonymous viewer once per listing and hour", async () => {
  const listing = await createListing(db.pool, seller.id, "approved");
  const other = await createListing(db.pool, seller.id, "approved");
  assert.equal(await recordView(ANON, listing.id, "browser-aaaa-1"), true);
  assert.equal(await recordView(ANON, listing.id, "browser-aaaa-1"), false);
  assert.equal(await recordView(ANON, listing.id, "browser-bbbb-2"), true);
  assert.equal(await recordView(ANON, other.id, "browser-aaaa-1"), true);
  assert.deepEqual(await viewRows(listing.id), [
    { viewer_key: "a:browser-aaaa-1" },
    { viewer_key: "a:browser-bbbb-2" },
  ]);
  const { rows } = await db.pool.query<{ whole: boolean }>(
    `select bool_and(viewed_hour = date_trunc('hour', now(), 'UTC')) as whole
     from public.listing_views where listing_id = $1`,
    [listing.id],
  );
  assert.equal(rows[0]!.whole, true);
});

sqlTest(
  "record_listing_view() counts a signed-in user by their id, whatever p_viewer says",
  async () => {
    const listing = await createListing(db.pool, seller.id, "approved");
    assert.equal(await recordView(as(viewer), listing.id), true);
    assert.equal(await recordView(as(viewer), listing.id, "another-browser-id"), false);
    // The same person signed out is another viewer (an anonymous id).
    assert.equal(await recordView(ANON, listing.id, "another-browser-id"), true);
    assert.deepEqual(await viewRows(listing.id), [
      { viewer_key: `u:${viewer.id}` },
      { viewer_key: "a:another-browser-id" },
    ]);
  },
);

sqlTest("record_listing_view() does not count the seller's own views", async () => {
  const listing = await createListing(db.pool, seller.id, "approved");
  assert.equal(await recordView(as(seller), listing.id), false);
  assert.equal(await recordView(as(seller), listing.id, "sellers-browser"), false);
  assert.deepEqual(await viewRows(listing.id), []);
});

sqlTest(
  "record_listing_view() counts only approved listings, and says nothing of others",
  async () => {
    for (const status of ["draft", "pending_review", "rejected", "archived"] as const) {
      const listing = await createListing(db.pool, seller.id, status);
      assert.equal(await recordView(ANON, listing.id, "curious-browser"), false, status);
      assert.equal(await recordView(as(viewer), listing.id), false, status);
      assert.deepEqual(await viewRows(listing.id), [], status);
    }
    assert.equal(await recordView(ANON, crypto.randomUUID(), "curious-browser"), false);
  },
);

sqlTest(
  "record_listing_view() refuses a missing or malformed anonymous id with 22023",
  async () => {
    const listing = await createListing(db.pool, seller.id, "approved");
    const bad = ["short", "x".repeat(65), "has space!", "semi;colon1", "ünïcödé-id", ""];
    await asRole(db.pool, ANON, async (c) => {
      await rejectsWith(c, "22023", "select public.record_listing_view($1)", [listing.id]);
      for (const id of bad) {
        await rejectsWith(c, "22023", "select public.record_listing_view($1, $2)", [
          listing.id,
          id,
        ]);
      }
    });
    // A signed-in caller's p_viewer is ignored, but must still be well formed.
    await asRole(db.pool, as(viewer), async (c) => {
      await rejectsWith(c, "22023", "select public.record_listing_view($1, $2)", [
        listing.id,
        "has space!",
      ]);
    });
    await assert.rejects(
      recordView(ANON, listing.id),
      (error: Error) =>
        sqlState("22023")(error) && /must send its anonymous id as p_viewer/.test(error.message),
    );
    assert.deepEqual(await viewRows(listing.id), []);
    // The boundaries are accepted.
    assert.equal(await recordView(ANON, listing.id, "a".repeat(8)), true);
    assert.equal(await recordView(ANON, listing.id, "Z_-9".repeat(16)), true);
  },
);

sqlTest(
  "clients reach listing_views only through record_listing_view(); admins may read",
  async () => {
    const listing = await createListing(db.pool, seller.id, "approved");
    await recordView(ANON, listing.id, "reader-browser");
    for (const who of [ANON, as(viewer)]) {
      await asRole(db.pool, who, async (c) => {
        await c.query("savepoint read");
        const read = await c.query("select * from public.listing_views").then(
          (r) => `rows:${r.rowCount}`,
          (error: { code?: string }) => `error:${error.code}`,
        );
        await c.query("rollback to savepoint read");
        assert.ok(read === "rows:0" || read === "error:42501", `${who.role}: ${read}`);
        await rejectsWith(
          c,
          "42501",
          `insert into public.listing_views (listing_id, viewer_key, viewed_hour)
         values ($1, 'a:forged-viewer', date_trunc('hour', now()))`,
          [listing.id],
        );
        await rejectsWith(c, "42501", "select public.fold_listing_views(10)");
        await rejectsWith(c, "42501", "select public.prune_listing_views(10)");
      });
    }
    const seen = await asRole(db.pool, as(admin), async (c) => {
      const { rows } = await c.query<{ viewer_key: string }>(
        "select viewer_key from public.listing_views where listing_id = $1",
        [listing.id],
      );
      return rows;
    });
    assert.deepEqual(seen, [{ viewer_key: "a:reader-browser" }]);
  },
);

sqlTest(
  "fold_listing_views() folds every view once, in batches; a rerun folds nothing; updated_at stays",
  async () => {
    await viewsSettled(db.pool);
    await foldAll();
    const a = await createListing(db.pool, seller.id, "approved");
    const b = await createListing(db.pool, seller.id, "approved");
    await db.pool.query("update public.listings set views_count = 100 where id = $1", [b.id]);
    const before = await db.pool.query<{ id: string; updated_at: Date }>(
      "select id, updated_at from public.listings where id = any($1) order by id",
      [[a.id, b.id]],
    );
    await insertViews(a.id, 7);
    await insertViews(b.id, 5);
    await recordView(ANON, b.id, "one-more-browser");
    await viewsSettled(db.pool);

    const batches = await foldAll(4);
    assert.deepEqual(batches.map((x) => x.views), [4, 4, 4, 1]);
    assert.equal(batches.reduce((n, x) => n + x.listings, 0) >= 2, true);
    assert.equal(await viewsCount(a.id), 7);
    assert.equal(await viewsCount(b.id), 106);
    assert.deepEqual(await foldAll(4), [{ views: 0, listings: 0 }]);
    assert.equal(await viewsCount(a.id), 7);

    const after = await db.pool.query<{ id: string; updated_at: Date }>(
      "select id, updated_at from public.listings where id = any($1) order by id",
      [[a.id, b.id]],
    );
    assert.deepEqual(after.rows, before.rows);
    const { rows: [cursor] } = await db.pool.query<{ cursor: { xact: string; id: number } }>(
      "select cursor from public.job_cursors where job_name = 'update-views-count'",
    );
    const { rows: [last] } = await db.pool.query<{ xact: string; id: string }>(
      "select xact::text, id::text from public.listing_views order by xact desc, id desc limit 1",
    );
    assert.deepEqual(cursor!.cursor, { xact: last!.xact, id: Number(last!.id) });
  },
);

sqlTest("fold_listing_views() refuses a batch size out of range with 22023", async () => {
  for (const size of [0, -1, 10_000_001, null]) {
    await assert.rejects(
      db.pool.query("select * from public.fold_listing_views($1)", [size]),
      sqlState("22023"),
    );
  }
  for (const size of [0, -1, 1_000_001, null]) {
    await assert.rejects(
      db.pool.query("select public.prune_listing_views($1)", [size]),
      sqlState("22023"),
    );
  }
});

sqlTest("two concurrent folds queue on the cursor and count each view once", async () => {
  await viewsSettled(db.pool);
  await foldAll();
  const listing = await createListing(db.pool, seller.id, "approved");
  await insertViews(listing.id, 10);
  await viewsSettled(db.pool);

  const first = await db.pool.connect();
  const second = await db.pool.connect();
  try {
    const { rows: [backend] } = await second.query<{ pid: number }>(
      "select pg_backend_pid() as pid",
    );
    await first.query("begin");
    const a = await first.query<{ views: number }>("select * from public.fold_listing_views(6)");
    assert.equal(a.rows[0]!.views, 6);
    const waiting = second.query<{ views: number }>("select * from public.fold_listing_views(6)");
    await waitUntilBlocked(backend!.pid);
    await first.query("commit");
    const b = await waiting;
    assert.equal(b.rows[0]!.views, 4, "the second fold went on from the first one's cursor");
  } finally {
    first.release();
    second.release();
  }
  assert.equal(await viewsCount(listing.id), 10);
  assert.deepEqual(await foldAll(), [{ views: 0, listings: 0 }]);
  assert.equal(await viewsCount(listing.id), 10);
});

/** Waits until backend `pid` waits for a lock (the signal that it queued). */
async function waitUntilBlocked(pid: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const { rows } = await db.pool.query<{ blocked: boolean }>(
      "select wait_event_type = 'Lock' as blocked from pg_stat_activity where pid = $1",
      [pid],
    );
    if (rows[0]?.blocked) return;
    if (Date.now() > deadline) throw new Error(`Backend ${pid} never waited for a lock`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

sqlTest(
  "a view committed late by a long-open transaction is folded exactly once, after it commits",
  async () => {
    const listing = await createListing(db.pool, seller.id, "approved");
    assert.equal(await recordView(ANON, listing.id, "early-viewer-1"), true);
    await viewsSettled(db.pool);

    // A viewer's transaction records a view and stays open.
    const late: pg.PoolClient = await db.pool.connect();
    try {
      await late.query("begin");
      await late.query("select set_config('request.jwt.claims', '{\"role\":\"anon\"}', true)");
      await late.query("set local role anon");
      const { rows: [recorded] } = await late.query<{ counted: boolean }>(
        "select public.record_listing_view($1, 'late-viewer-1') as counted",
        [listing.id],
      );
      assert.equal(recorded!.counted, true);
      // Another view commits after it, with a later id.
      assert.equal(await recordView(ANON, listing.id, "later-viewer-1"), true);

      await foldAll();
      assert.equal(await viewsCount(listing.id), 1, "only the view before the open transaction");

      await late.query("commit");
    } finally {
      late.release();
    }
    const { rows: ids } = await db.pool.query<{ viewer_key: string }>(
      "select viewer_key from public.listing_views where listing_id = $1 order by id",
      [listing.id],
    );
    assert.deepEqual(ids.map((r) => r.viewer_key), [
      "a:early-viewer-1",
      "a:late-viewer-1",
      "a:later-viewer-1",
    ]);
    await viewsSettled(db.pool);
    await foldAll();
    assert.equal(await viewsCount(listing.id), 3);
    await foldAll();
    assert.equal(await viewsCount(listing.id), 3);
  },
);

sqlTest("prune_listing_views() deletes folded views outside the dedupe window only", async () => {
  await viewsSettled(db.pool);
  await foldAll();
  const listing = await createListing(db.pool, seller.id, "approved");
  await insertViews(listing.id, 3, 5);
  await insertViews(listing.id, 2, 2);
  await insertViews(listing.id, 4, 1);
  await insertViews(listing.id, 1, 0);
  const count = async (where: string) => {
    const { rows } = await db.pool.query<{ n: number }>(
      `select count(*)::int as n from public.listing_views where listing_id = $1 and ${where}`,
      [listing.id],
    );
    return rows[0]!.n;
  };
  // Not folded yet: nothing goes, however old.
  await db.pool.query("select public.prune_listing_views(1000)");
  assert.equal(await count("true"), 10);

  await viewsSettled(db.pool);
  await foldAll();
  assert.equal(await viewsCount(listing.id), 10);
  const { rows: [first] } = await db.pool.query<{ n: number }>(
    "select public.prune_listing_views(2) as n",
  );
  assert.equal(first!.n, 2);
  const { rows: [rest] } = await db.pool.query<{ n: number }>(
    "select public.prune_listing_views(1000) as n",
  );
  assert.equal(rest!.n, 3);
  // The previous and the current hour stay (their views can still be repeated).
  assert.equal(await count("true"), 5);
  assert.equal(
    await count("viewed_hour >= date_trunc('hour', now(), 'UTC') - interval '1 hour'"),
    5,
  );
  // The counts stay, and pruned views are not folded again.
  assert.deepEqual(await foldAll(), [{ views: 0, listings: 0 }]);
  assert.equal(await viewsCount(listing.id), 10);
});

sqlTest("a listing's views go with it", async () => {
  const listing = await createListing(db.pool, seller.id, "approved");
  await recordView(ANON, listing.id, "gone-browser-1");
  await db.pool.query("delete from public.listings where id = $1", [listing.id]);
  assert.deepEqual(await viewRows(listing.id), []);
  await viewsSettled(db.pool);
  await foldAll();
});
