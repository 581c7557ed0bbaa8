import assert from "node:assert/strict";
import { runGuardedJob } from "../../../../../supabase/functions/_shared/platform/jobs/guard.ts";
import { startJobRun } from "../../../../../supabase/functions/_shared/platform/jobs/runs.ts";
import { Context } from "../../../../../supabase/functions/_shared/platform/context.ts";
import {
  Db,
  type Sql,
  type SqlParam,
} from "../../../../../supabase/functions/_shared/platform/db.ts";
import {
  HttpError,
  upstreamUnavailable,
} from "../../../../../supabase/functions/_shared/platform/errors.ts";
import { createTestDatabase, sqlTest } from "../../../../support/db.ts";
import { testRuntime } from "../../../../support/runtime.ts";

const db = await createTestDatabase();
const runtime = await testRuntime(db);
const ctx = () => new Context(runtime, crypto.randomUUID(), runtime.log);

async function runs(job: string) {
  const { rows } = await db.pool.query(
    "select status, scanned, changed, failed, failures, error_code from public.job_runs where job_name = $1 order by started_at",
    [job],
  );
  return rows;
}

sqlTest("runGuardedJob() records a successful run with its counts", async () => {
  const output = await runGuardedJob(ctx(), "job-ok", {}, (tally) => {
    tally.scanned = 3;
    tally.changed = 1;
    tally.count("skipped", 2);
    return Promise.resolve();
  });
  assert.ok(!("skipped" in output));
  assert.equal(output.job, "job-ok");
  assert.deepEqual(output.counts, { skipped: 2 });
  assert.deepEqual(await runs("job-ok"), [
    { status: "succeeded", scanned: 3, changed: 1, failed: 0, failures: [], error_code: null },
  ]);
});

sqlTest("runGuardedJob() answers the ids a run listed under items, counted by name", async () => {
  const plain = await runGuardedJob(ctx(), "job-no-items", {}, () => Promise.resolve());
  assert.ok(!("skipped" in plain));
  assert.equal("items" in plain, false, "no items key when nothing was listed");

  const output = await runGuardedJob(ctx(), "job-items", {}, (tally) => {
    tally.list("activated", "a1");
    tally.list("activated", "a2");
    tally.list("expired", "e1");
    return Promise.resolve();
  });
  assert.ok(!("skipped" in output));
  assert.deepEqual(output.items, { activated: ["a1", "a2"], expired: ["e1"] });
  assert.deepEqual(output.counts, { activated: 2, expired: 1 });
  const { rows: [row] } = await db.pool.query(
    "select result from public.job_runs where job_name = 'job-items'",
  );
  assert.deepEqual(row.result.items, output.items);
});

sqlTest(
  "runGuardedJob() skips a start while a run is in progress (naming that run) and lets one run at a time",
  async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => release = resolve);
    let started!: () => void;
    const running = new Promise<void>((resolve) => started = resolve);
    const first = runGuardedJob(ctx(), "job-overlap", {}, () => {
      started();
      return gate;
    });
    await running;
    let worked = false;
    const second = await runGuardedJob(ctx(), "job-overlap", {}, () => {
      worked = true;
      return Promise.resolve();
    });
    assert.equal(worked, false);
    const { rows: [live] } = await db.pool.query(
      "select id, started_at from public.job_runs where job_name = 'job-overlap' and finished_at is null",
    );
    assert.deepEqual(second, {
      job: "job-overlap",
      skipped: true,
      reason: "already_running",
      runId: live.id,
      startedAt: live.started_at.toISOString(),
    });
    release();
    await first;
    await runGuardedJob(ctx(), "job-overlap", {}, () => Promise.resolve());
    assert.deepEqual((await runs("job-overlap")).map((r) => r.status), ["succeeded", "succeeded"]);
  },
);

sqlTest("startJobRun() takes over a run older than its stale_after", async () => {
  const first = await startJobRun(ctx(), "job-stale", 60_000);
  assert.ok("started" in first);
  assert.deepEqual(await startJobRun(ctx(), "job-stale", 60_000), { running: first.started });
  await db.pool.query(
    "update public.job_runs set started_at = now() - interval '2 minutes' where job_name = 'job-stale'",
  );
  await startJobRun(ctx(), "job-stale", 60_000);
  assert.deepEqual((await runs("job-stale")).map((r) => [r.status, r.error_code]), [
    ["abandoned", "stale_taken_over"],
    ["running", null],
  ]);
});

/**
 * A database whose transactions run `between` right after an insert into
 * `job_runs` that inserted nothing: the moment a colliding run can finish
 * before the start reads it.
 */
class CollidingDb extends Db {
  constructor(url: string, private readonly between: () => Promise<void>) {
    super(url, 2);
  }
  override tx<T>(fn: (sql: Sql) => Promise<T>): Promise<T> {
    return super.tx((sql) =>
      fn({
        query: (text, params) => sql.query(text, params),
        one: (text, params) => sql.one(text, params),
        maybeOne: async <R extends object>(text: string, params?: readonly SqlParam[]) => {
          const row = await sql.maybeOne<R>(text, params);
          if (row === null && text.includes("insert into public.job_runs")) await this.between();
          return row;
        },
      })
    );
  }
}

sqlTest(
  "startJobRun() starts when the run it collided with finishes before it is read",
  async () => {
    const { rows: [live] } = await db.pool.query(
      "insert into public.job_runs (job_name) values ('job-race') returning id",
    );
    let finishes = 0;
    const colliding = new CollidingDb(db.url, async () => {
      finishes++;
      await db.pool.query(
        "update public.job_runs set status = 'succeeded', finished_at = now() where id = $1",
        [live.id],
      );
    });
    const racingCtx = new (class extends Context {
      override get db(): Db {
        return colliding;
      }
    })(runtime, crypto.randomUUID(), runtime.log);
    try {
      const start = await startJobRun(racingCtx, "job-race", 60_000);
      assert.ok("started" in start, "nothing is in progress any more, so this start runs");
      assert.equal(finishes, 1);
      assert.deepEqual((await runs("job-race")).map((r) => r.status), ["succeeded", "running"]);
    } finally {
      await colliding.close();
    }
  },
);

sqlTest(
  "runGuardedJob() ends partial with 500 partial_failure when items failed, and failed when the work throws",
  async () => {
    await assert.rejects(
      runGuardedJob(ctx(), "job-partial", {}, async (tally) => {
        tally.scanned = 2;
        await tally.attempt(
          "item-1",
          () => Promise.reject(upstreamUnavailable("payment processor")),
        );
        await tally.attempt("item-2", () => Promise.reject(new Error("secret database text")));
      }),
      (e: unknown) => {
        assert.ok(e instanceof HttpError);
        assert.equal(e.status, 500);
        assert.equal(e.code, "partial_failure");
        const details = e.details as {
          failures: Array<{ item: string; code: string; message: string }>;
        };
        assert.deepEqual(details.failures.map((f) => [f.item, f.code]), [
          ["item-1", "upstream_unavailable"],
          ["item-2", "internal"],
        ]);
        assert.doesNotMatch(JSON.stringify(details), /secret database text/);
        return true;
      },
    );
    assert.equal((await runs("job-partial"))[0].status, "partial");

    await assert.rejects(
      runGuardedJob(
        ctx(),
        "job-failed",
        {},
        () => Promise.reject(upstreamUnavailable("payment processor")),
      ),
      (e: unknown) => e instanceof HttpError && e.status === 503,
    );
    assert.deepEqual((await runs("job-failed")).map((r) => [r.status, r.error_code]), [[
      "failed",
      "upstream_unavailable",
    ]]);
  },
);
