import assert from "node:assert/strict";
import handler from "../../supabase/functions/update-views-count/handler.ts";
import { Context } from "../../supabase/functions/_shared/platform/context.ts";
import { runViewFold, VIEW_FOLD_JOB } from "../../supabase/functions/_shared/views/fold.ts";
import { createListing } from "../db/core_fixtures.ts";
import { testCredentials } from "../support/credentials.ts";
import { createTestDatabase, sqlTest } from "../support/db.ts";
import { assertOneRanOneSkipped, type JobAnswerBody } from "../support/jobs.ts";
import { invoke, testRuntime } from "../support/runtime.ts";
import { createUser } from "../support/sql.ts";
import { viewsSettled } from "../support/views.ts";

interface Answer extends JobAnswerBody {
  scanned: number;
  changed: number;
  counts: Record<string, number>;
}

const db = await createTestDatabase();
const runtime = await testRuntime(db);
const localRuntime = await testRuntime(db, { LOCAL_DEV: "true" });
const keys = await testCredentials();
const ctx = () => new Context(runtime, crypto.randomUUID(), runtime.log);

const seller = await createUser(db.pool);

async function count(sql: string, params: unknown[] = []): Promise<number> {
  const { rows } = await db.pool.query<{ n: number }>(`select (${sql})::int as n`, params);
  return rows[0]!.n;
}

const viewsCount = (listingId: string) =>
  count("select views_count from public.listings where id = $1", [listingId]);

/** Records `n` views of `listingId` through the RPC, each by another anonymous viewer. */
async function recordViews(listingId: string, n: number, tag: string): Promise<void> {
  for (let i = 0; i < n; i++) {
    const client = await db.pool.connect();
    try {
      await client.query("begin");
      await client.query("select set_config('request.jwt.claims', '{\"role\":\"anon\"}', true)");
      await client.query("set local role anon");
      await client.query("select public.record_listing_view($1, $2)", [
        listingId,
        `${tag}-viewer-${i}`,
      ]);
      await client.query("commit");
    } finally {
      client.release();
    }
  }
}

/** Runs the job to completion so a test starts with nothing left to fold. */
async function foldEverything(): Promise<void> {
  await viewsSettled(db.pool);
  const res = await invoke<Answer>(handler, runtime, { token: keys.schedulerToken });
  assert.equal(res.status, 200, JSON.stringify(res.body));
}

sqlTest("update-views-count: folds every recorded view once; a rerun folds nothing", async () => {
  await foldEverything();
  const a = await createListing(db.pool, seller.id, "approved");
  const b = await createListing(db.pool, seller.id, "approved");
  await recordViews(a.id, 3, "first");
  await recordViews(b.id, 2, "first");
  await recordViews(a.id, 3, "first"); // the same viewers again this hour
  const updatedAt = await db.pool.query(
    "select id, updated_at from public.listings where id = any($1) order by id",
    [[a.id, b.id]],
  );
  await viewsSettled(db.pool);

  const first = await invoke<Answer>(handler, runtime, { token: keys.schedulerToken });
  assert.equal(first.status, 200, JSON.stringify(first.body));
  assert.equal(first.body.job, VIEW_FOLD_JOB);
  assert.deepEqual(first.body.counts, {
    views: 5,
    listings: 2,
    batches: 1,
    pruned: 0,
    capped: 0,
  });
  assert.equal(first.body.scanned, 5);
  assert.equal(first.body.changed, 2);
  assert.equal(await viewsCount(a.id), 3);
  assert.equal(await viewsCount(b.id), 2);

  const again = await invoke<Answer>(handler, runtime, { token: keys.schedulerToken });
  assert.equal(again.status, 200);
  assert.deepEqual(again.body.counts, { views: 0, listings: 0, batches: 0, pruned: 0, capped: 0 });
  assert.equal(await viewsCount(a.id), 3);
  assert.equal(await viewsCount(b.id), 2);
  const after = await db.pool.query(
    "select id, updated_at from public.listings where id = any($1) order by id",
    [[a.id, b.id]],
  );
  assert.deepEqual(after.rows, updatedAt.rows, "a fold is not an edit");
});

sqlTest("update-views-count: a run stops at its cap; the next one goes on", async () => {
  await foldEverything();
  const listing = await createListing(db.pool, seller.id, "approved");
  await recordViews(listing.id, 7, "capped");
  await viewsSettled(db.pool);
  const first = await runViewFold(ctx(), { batchSize: 2, maxBatches: 2 });
  assert.ok(!("skipped" in first));
  assert.deepEqual(first.counts, { views: 4, listings: 2, batches: 2, pruned: 0, capped: 1 });
  assert.equal(await viewsCount(listing.id), 4);
  const second = await runViewFold(ctx(), { batchSize: 2, maxBatches: 10 });
  assert.ok(!("skipped" in second));
  assert.deepEqual(second.counts, { views: 3, listings: 2, batches: 2, pruned: 0, capped: 0 });
  assert.equal(await viewsCount(listing.id), 7);
});

sqlTest("update-views-count: prunes folded views outside the dedupe window", async () => {
  await foldEverything();
  const listing = await createListing(db.pool, seller.id, "approved");
  await db.pool.query(
    `insert into public.listing_views (listing_id, viewer_key, viewed_hour)
     select $1, 'a:old-viewer-' || g, date_trunc('hour', now(), 'UTC') - interval '3 hours'
     from generate_series(1, 5) g`,
    [listing.id],
  );
  await recordViews(listing.id, 2, "fresh");
  await viewsSettled(db.pool);
  const res = await runViewFold(ctx(), { pruneBatchSize: 2 });
  assert.ok(!("skipped" in res));
  assert.equal(res.counts.views, 7);
  assert.equal(res.counts.pruned, 5);
  assert.equal(await viewsCount(listing.id), 7);
  assert.equal(
    await count("select count(*) from public.listing_views where listing_id = $1", [listing.id]),
    2,
  );
});

sqlTest("update-views-count: two overlapping starts, one runs and one is skipped", async () => {
  await foldEverything();
  const listing = await createListing(db.pool, seller.id, "approved");
  await recordViews(listing.id, 4, "overlap");
  await viewsSettled(db.pool);

  // Hold the fold's cursor row so the first run stays in progress.
  const blocker = await db.pool.connect();
  try {
    await blocker.query("begin");
    await blocker.query(
      "select 1 from public.job_cursors where job_name = $1 for update",
      [VIEW_FOLD_JOB],
    );
    const running = invoke<Answer>(handler, runtime, { token: keys.schedulerToken });
    await waitForLockWaiter("fold_listing_views");
    const skipped = await invoke<Answer>(handler, runtime, { token: keys.schedulerToken });
    await blocker.query("commit");
    const ran = await running;
    assertOneRanOneSkipped([ran, skipped]);
    assert.equal(ran.body.counts.views, 4);
  } finally {
    blocker.release();
  }
  assert.equal(await viewsCount(listing.id), 4);
  assert.equal(
    await count(
      "select count(*) from public.job_runs where job_name = $1 and finished_at is null",
      [
        VIEW_FOLD_JOB,
      ],
    ),
    0,
  );
});

/** Waits until a backend running `query` waits for a lock (the signal that it is in progress). */
async function waitForLockWaiter(query: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (
    await count(
      `select count(*) from pg_stat_activity
       where wait_event_type = 'Lock' and query like '%' || $1 || '%' and pid <> pg_backend_pid()`,
      [query],
    ) === 0
  ) {
    if (Date.now() > deadline) throw new Error(`No backend running ${query} waited for a lock`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

sqlTest(
  "update-views-count: a batch that fails to commit mid-run fails the run; the next run ends exact",
  async () => {
    await foldEverything();
    const listing = await createListing(db.pool, seller.id, "approved");
    const other = await createListing(db.pool, seller.id, "approved");
    await recordViews(listing.id, 6, "crash");
    await recordViews(other.id, 4, "crash");
    await viewsSettled(db.pool);

    // The second batch's commit fails, once: a deferred trigger on the cursor
    // counts commits with a sequence (sequences do not roll back).
    await db.pool.query(`
      create sequence public.test_fold_commits;
      create function public.test_fail_second_fold_commit() returns trigger
      language plpgsql set search_path = '' as $$
      begin
        if nextval('public.test_fold_commits') = 2 then
          raise exception 'Simulated crash while committing a fold batch';
        end if;
        return null;
      end $$;
      create constraint trigger test_fail_second_fold_commit
        after update on public.job_cursors
        deferrable initially deferred
        for each row execute function public.test_fail_second_fold_commit();
    `);
    try {
      await assert.rejects(
        runViewFold(ctx(), { batchSize: 3 }),
        /Simulated crash while committing a fold batch/,
      );
      // The first batch stayed; the second left nothing behind.
      assert.equal(await viewsCount(listing.id) + await viewsCount(other.id), 3);
      const { rows: [run] } = await db.pool.query<{ status: string }>(
        "select status from public.job_runs where job_name = $1 order by started_at desc limit 1",
        [VIEW_FOLD_JOB],
      );
      assert.equal(run!.status, "failed");

      const resumed = await runViewFold(ctx(), { batchSize: 3 });
      assert.ok(!("skipped" in resumed));
      assert.equal(resumed.counts.views, 7);
      assert.equal(await viewsCount(listing.id), 6);
      assert.equal(await viewsCount(other.id), 4);
      const rerun = await runViewFold(ctx(), { batchSize: 3 });
      assert.ok(!("skipped" in rerun));
      assert.equal(rerun.counts.views, 0);
      assert.equal(await viewsCount(listing.id), 6);
      assert.equal(await viewsCount(other.id), 4);
    } finally {
      await db.pool.query(`
        drop trigger test_fail_second_fold_commit on public.job_cursors;
        drop function public.test_fail_second_fold_commit();
        drop sequence public.test_fold_commits;
      `);
    }
  },
);

sqlTest(
  "update-views-count: refuses signed-in users and the anon key (outside LOCAL_DEV), writing nothing",
  async () => {
    await foldEverything();
    const listing = await createListing(db.pool, seller.id, "approved");
    await recordViews(listing.id, 2, "refused");
    await viewsSettled(db.pool);
    const user = await createUser(db.pool);
    const runsBefore = await count("select count(*) from public.job_runs");

    const refusals = [
      { token: await keys.userToken(user), status: 403, code: "forbidden" },
      { token: keys.anonKey, status: 403, code: "forbidden" },
      { token: undefined, status: 401, code: "unauthorized" },
    ];
    for (const { token, status, code } of refusals) {
      const res = await invoke<Answer>(handler, runtime, { token });
      assert.equal(res.status, status, JSON.stringify(res.body));
      assert.equal(res.body.error?.code, code);
    }
    assert.equal(await count("select count(*) from public.job_runs"), runsBefore);
    assert.equal(await viewsCount(listing.id), 0);

    // The anon key under LOCAL_DEV, the service key and an admin may start it.
    const local = await invoke<Answer>(handler, localRuntime, { token: keys.anonKey });
    assert.equal(local.status, 200, JSON.stringify(local.body));
    assert.equal(local.body.counts.views, 2);
    const service = await invoke<Answer>(handler, runtime, { token: keys.serviceKey });
    assert.equal(service.status, 200);
    const admin = await createUser(db.pool, { admin: true });
    const byAdmin = await invoke<Answer>(handler, runtime, { token: await keys.userToken(admin) });
    assert.equal(byAdmin.status, 200);
    assert.equal(await viewsCount(listing.id), 2);
  },
);
