import assert from "node:assert/strict";
import handler from "../../supabase/functions/test-sponsored-activation/handler.ts";
import { createListing } from "../db/core_fixtures.ts";
import { testCredentials } from "../support/credentials.ts";
import { createTestDatabase, sqlTest } from "../support/db.ts";
import { invoke, testRuntime } from "../support/runtime.ts";
import { createUser } from "../support/sql.ts";

interface Change {
  id: string;
  listingId: string;
  sellerId: string;
  startsAt: string;
  endsAt: string;
}

interface Plan {
  at: string;
  dryRun: true;
  activate: Change[];
  expire: Change[];
  error?: { code: string; details?: unknown };
}

const db = await createTestDatabase();
const keys = await testCredentials();
const runtime = await testRuntime(db);
const seller = await createUser(db.pool);
const admin = await createUser(db.pool, { admin: true });
const adminToken = await keys.userToken(admin);

async function plan(body: unknown, token: string | undefined = adminToken) {
  return await invoke<Plan>(handler, runtime, { token, body });
}

/** Schedules a placement from `fromMinutes` to `toMinutes` after now (service connection). */
async function place(listingId: string, fromMinutes: number, toMinutes: number) {
  const { rows } = await db.pool.query<{ id: string; starts_at: Date; ends_at: Date }>(
    `insert into public.sponsored_listings (listing_id, starts_at, ends_at)
     values ($1, now() + make_interval(mins => $2), now() + make_interval(mins => $3))
     returning id, starts_at, ends_at`,
    [listingId, fromMinutes, toMinutes],
  );
  const row = rows[0]!;
  return {
    id: row.id,
    listingId,
    sellerId: seller.id,
    startsAt: row.starts_at.toISOString(),
    endsAt: row.ends_at.toISOString(),
  };
}

/** Every row the real job could write: placements, listings, job runs. */
async function snapshot(): Promise<string> {
  const parts = await Promise.all([
    db.pool.query("select * from public.sponsored_listings order by id"),
    db.pool.query("select * from public.listings order by id"),
    db.pool.query("select * from public.job_runs order by id"),
  ]);
  return JSON.stringify(parts.map((p) => p.rows));
}

const approved = await createListing(db.pool, seller.id, "approved");
const other = await createListing(db.pool, seller.id, "approved");
const pending = await createListing(db.pool, seller.id, "pending_review");
// Active now, ending in 45 minutes.
const live = await place(approved.id, -10, 45);
await db.pool.query("select public.apply_sponsored_changes()");
const starting = await place(approved.id, 45, 120);
const brief = await place(other.id, 10, 20);
const blocked = await place(pending.id, 30, 90);

sqlTest(
  "test-sponsored-activation: lists what a run in an hour would change, writing nothing",
  async () => {
    const before = await snapshot();
    const at = new Date(Date.now() + 60 * 60_000).toISOString();
    const res = await plan({ at });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.at, at);
    assert.equal(res.body.dryRun, true);
    assert.deepEqual(res.body.activate, [starting]);
    // The live one ends; the brief one's window passes before any run starts it.
    assert.deepEqual(res.body.expire, [live, brief]);
    assert.ok(!JSON.stringify(res.body).includes(blocked.id), "its listing is not approved");
    assert.equal(await snapshot(), before);
  },
);

sqlTest("test-sponsored-activation: without `at` it plans for now", async () => {
  const before = await snapshot();
  const start = Date.now();
  const res = await plan({});
  assert.equal(res.status, 200, JSON.stringify(res.body));
  const at = Date.parse(res.body.at);
  assert.ok(at >= start - 1000 && at <= Date.now() + 1000, res.body.at);
  assert.deepEqual(res.body.activate, []);
  assert.deepEqual(res.body.expire, []);
  assert.equal(await snapshot(), before);
});

sqlTest("test-sponsored-activation: a time with an offset is read in it", async () => {
  const res = await plan({ at: "2030-01-01T02:00:00+02:00" });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body.at, "2030-01-01T00:00:00.000Z");
  // Everything scheduled has ended by then.
  assert.deepEqual(res.body.activate, []);
  assert.deepEqual(
    res.body.expire.map((c) => c.id).sort(),
    [live.id, starting.id, brief.id, blocked.id].sort(),
  );
  // Any year the format allows, even one PostgreSQL spells "BC": nothing is due then.
  const early = await plan({ at: "0000-01-01T00:00:00Z" });
  assert.equal(early.status, 200, JSON.stringify(early.body));
  assert.equal(early.body.at, "0000-01-01T00:00:00.000Z");
  assert.deepEqual([early.body.activate, early.body.expire], [[], []]);
});

sqlTest("test-sponsored-activation: an invalid `at` is 400 and writes nothing", async () => {
  const before = await snapshot();
  for (
    const at of ["tomorrow", "2026-13-01T00:00:00Z", "2026-11-23T10:00:00", "", 1764000000, null]
  ) {
    const res = await plan({ at });
    assert.equal(res.status, 400, JSON.stringify(at));
    assert.equal(res.body.error?.code, "invalid_input", JSON.stringify(at));
  }
  const raw = await invoke<Plan>(handler, runtime, { token: adminToken, rawBody: "{" });
  assert.equal(raw.status, 400);
  assert.equal(raw.body.error?.code, "invalid_json");
  assert.equal(await snapshot(), before);
});

sqlTest(
  "test-sponsored-activation: admins only; the anon key only with LOCAL_DEV=true",
  async () => {
    const before = await snapshot();
    const none = await invoke<Plan>(handler, runtime, { body: {} });
    assert.equal(none.status, 401);
    for (
      const [who, token] of [
        ["a user", await keys.userToken(seller)],
        ["the anon key", keys.anonKey],
        ["the scheduler token", keys.schedulerToken],
        ["the service key", keys.serviceKey],
      ] as const
    ) {
      const res = await plan({}, token);
      assert.equal(res.status, 403, who);
      assert.equal(res.body.error?.code, "forbidden", who);
    }
    const local = await testRuntime(db, { LOCAL_DEV: "true" });
    try {
      const at = new Date(Date.now() + 60 * 60_000).toISOString();
      const res = await invoke<Plan>(handler, local, { token: keys.anonKey, body: { at } });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.deepEqual(res.body.activate, [starting]);
    } finally {
      await local.close();
    }
    assert.equal(await snapshot(), before);
  },
);
