import assert from "node:assert/strict";
import handler from "../../supabase/functions/process-sponsored-activations/handler.ts";
import { createListing } from "../db/core_fixtures.ts";
import { testCredentials } from "../support/credentials.ts";
import { createTestDatabase, sqlTest } from "../support/db.ts";
import {
  assertOneRanOneSkipped,
  type JobAnswerBody,
  twoStartsWhileLocked,
} from "../support/jobs.ts";
import { invoke, testRuntime } from "../support/runtime.ts";
import { createUser } from "../support/sql.ts";

interface ActivationRun extends JobAnswerBody {
  scanned: number;
  changed: number;
  failed: number;
  counts: Record<string, number>;
  items?: Record<string, string[]>;
}

const db = await createTestDatabase();
const keys = await testCredentials();
const runtime = await testRuntime(db);
const seller = await createUser(db.pool);
const admin = await createUser(db.pool, { admin: true });
const adminToken = await keys.userToken(admin);

async function run(token: string | undefined = adminToken) {
  return await invoke<ActivationRun>(handler, runtime, { token });
}

/** Schedules a placement from `fromMinutes` to `toMinutes` after now (service connection). */
async function place(listingId: string, fromMinutes: number, toMinutes: number): Promise<string> {
  const { rows } = await db.pool.query<{ id: string }>(
    `insert into public.sponsored_listings (listing_id, starts_at, ends_at)
     values ($1, now() + make_interval(mins => $2), now() + make_interval(mins => $3))
     returning id`,
    [listingId, fromMinutes, toMinutes],
  );
  return rows[0]!.id;
}

async function statusOf(id: string): Promise<string> {
  const { rows } = await db.pool.query<{ status: string }>(
    "select status from public.sponsored_listings where id = $1",
    [id],
  );
  return rows[0]!.status;
}

async function sponsorship(listingId: string) {
  const { rows } = await db.pool.query<{ is_sponsored: boolean; sponsored_until: Date | null }>(
    "select is_sponsored, sponsored_until from public.listings where id = $1",
    [listingId],
  );
  return rows[0]!;
}

/** Everything the job may write, to compare before and after a refused call. */
async function snapshot(): Promise<string> {
  const parts = await Promise.all([
    db.pool.query("select * from public.sponsored_listings order by id"),
    db.pool.query("select id, is_sponsored, sponsored_until from public.listings order by id"),
    db.pool.query("select id, status from public.job_runs order by id"),
  ]);
  return JSON.stringify(parts.map((p) => p.rows));
}

sqlTest(
  "process-sponsored-activations: activates what began, expires what ended, lists both",
  async () => {
    const listing = await createListing(db.pool, seller.id, "approved");
    const ending = await place(listing.id, -120, -60);
    const next = await place(listing.id, -60, 60);
    // The first placement was activated while its window was open.
    await db.pool.query("select public.apply_sponsored_changes(now() - interval '90 minutes')");
    const pending = await createListing(db.pool, seller.id, "pending_review");
    const waiting = await place(pending.id, -10, 60);
    const later = await place(listing.id, 60, 120);

    const res = await run();
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.job, "process-sponsored-activations");
    assert.equal(res.body.changed, 2);
    assert.equal(res.body.failed, 0);
    assert.deepEqual(res.body.counts, { activated: 1, expired: 1 });
    assert.deepEqual(res.body.items, { activated: [next], expired: [ending] });
    assert.equal(await statusOf(ending), "expired");
    assert.equal(await statusOf(next), "active");
    assert.equal(await statusOf(waiting), "scheduled", "its listing is not approved");
    assert.equal(await statusOf(later), "scheduled");
    assert.equal((await sponsorship(listing.id)).is_sponsored, true);
    assert.equal((await sponsorship(pending.id)).is_sponsored, false);

    const { rows } = await db.pool.query<{ status: string; changed: number }>(
      "select status, changed from public.job_runs where id = $1",
      [res.body.runId],
    );
    assert.deepEqual(rows, [{ status: "succeeded", changed: 2 }]);
  },
);

sqlTest("process-sponsored-activations: a rerun changes nothing", async () => {
  const before = await snapshot();
  const res = await run();
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body.changed, 0);
  assert.deepEqual(res.body.counts, {});
  assert.equal(res.body.items, undefined);
  const after = JSON.parse(await snapshot()) as unknown[][];
  const [placements, listings] = JSON.parse(before) as unknown[][];
  assert.deepEqual(after[0], placements);
  assert.deepEqual(after[1], listings);
});

sqlTest(
  "process-sponsored-activations: two runs at once: one runs, one is skipped; one activation",
  async () => {
    const listing = await createListing(db.pool, seller.id, "approved");
    const due = await place(listing.id, -5, 60);
    // Hold the run at its first lock on the placements, so the second start finds it running.
    const answers = await twoStartsWhileLocked(db.pool, "public.sponsored_listings", run);
    assertOneRanOneSkipped(answers);
    const ran = answers.find((a) => a.body.skipped !== true)!;
    assert.deepEqual(ran.body.items, { activated: [due] });
    assert.equal(await statusOf(due), "active");
  },
);

sqlTest(
  "process-sponsored-activations: admins and the scheduler start it; users and the anon key do not",
  async () => {
    const listing = await createListing(db.pool, seller.id, "approved");
    const due = await place(listing.id, -5, 60);
    const later = await place(
      (await createListing(db.pool, seller.id, "approved")).id,
      -5,
      60,
    );
    const before = await snapshot();
    const local = await testRuntime(db, { LOCAL_DEV: "true" });
    try {
      const none = await invoke(handler, runtime, {});
      assert.equal(none.status, 401);
      for (
        const [who, token, on] of [
          ["a user", await keys.userToken(seller), runtime],
          ["the anon key", keys.anonKey, runtime],
          ["the anon key with LOCAL_DEV", keys.anonKey, local],
        ] as const
      ) {
        const res = await invoke<ActivationRun>(handler, on, { token });
        assert.equal(res.status, 403, who);
        assert.equal(res.body.error?.code, "forbidden", who);
      }
    } finally {
      await local.close();
    }
    assert.equal(await snapshot(), before, "nothing written");
    assert.equal(await statusOf(due), "scheduled");
    const scheduled = await invoke<ActivationRun>(handler, runtime, {
      token: keys.schedulerToken,
    });
    assert.equal(scheduled.status, 200, JSON.stringify(scheduled.body));
    assert.deepEqual(
      [...(scheduled.body.items?.activated ?? [])].sort(),
      [due, later].sort(),
    );
    const again = await run(adminToken);
    assert.equal(again.status, 200);
    assert.equal(again.body.items, undefined, "the scheduler's run left nothing to do");
    assert.equal((await invoke(handler, runtime, { token: keys.serviceKey })).status, 200);
  },
);
