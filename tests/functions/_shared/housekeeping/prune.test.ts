import assert from "node:assert/strict";
import {
  PRUNE_BATCH,
  runHousekeeping,
} from "../../../../supabase/functions/_shared/housekeeping/prune.ts";
import { Context } from "../../../../supabase/functions/_shared/platform/context.ts";
import { createTestDatabase, sqlTest } from "../../../support/db.ts";
import { testRuntime } from "../../../support/runtime.ts";

const db = await createTestDatabase();
const runtime = await testRuntime(db);
const ctx = () => new Context(runtime, crypto.randomUUID(), runtime.log);

/** Inserts a job run started `days` ago; finished unless `running`. */
async function jobRun(job: string, days: number, running = false): Promise<string> {
  const { rows: [row] } = await db.pool.query<{ id: string }>(
    `insert into public.job_runs (job_name, status, started_at, finished_at, stale_after)
     values ($1, $2, now() - make_interval(days => $3), $4::timestamptz, interval '1000 days')
     returning id`,
    [
      job,
      running ? "running" : "succeeded",
      days,
      running ? null : new Date(Date.now() - days * 86_400_000 + 60_000).toISOString(),
    ],
  );
  return row!.id;
}

async function ids(sql: string): Promise<string[]> {
  const { rows } = await db.pool.query<{ id: string }>(sql);
  return rows.map((r) => String(r.id)).sort();
}

sqlTest(
  "housekeeping prunes old rows of the append-only tables, keeps young ones, running runs and each job's latest; a second run prunes nothing",
  async () => {
    const a200 = await jobRun("prune-a", 200);
    await jobRun("prune-a", 150);
    const a100 = await jobRun("prune-a", 100); // the latest of prune-a: kept
    await jobRun("prune-b", 200);
    const b10 = await jobRun("prune-b", 10);
    const c200 = await jobRun("prune-c", 200, true); // still running: kept
    const c300 = await jobRun("prune-c", 300); // prune-c's latest finished run: kept
    const d300 = await jobRun("prune-d", 300); // the only run: kept

    await db.pool.query(
      `insert into public.price_alert_runs (id, job_run_id, status, since, started_at, finished_at, duration_ms)
       values ('00000000-0000-4000-8000-000000000001', $1, 'succeeded', now() - interval '201 days',
               now() - interval '200 days', now() - interval '200 days', 5),
              ('00000000-0000-4000-8000-000000000002', null, 'failed', now() - interval '121 days',
               now() - interval '120 days', now() - interval '120 days', 5),
              ('00000000-0000-4000-8000-000000000003', null, 'succeeded', now() - interval '101 days',
               now() - interval '100 days', now() - interval '100 days', 5)`,
      [a200],
    );
    await db.pool.query(
      `insert into public.daily_task_runs (id, slot, day, status, started_at, finished_at)
       values ('00000000-0000-4000-8000-000000000011', 'prune', current_date - 200, 'succeeded',
               now() - interval '200 days', now() - interval '200 days'),
              ('00000000-0000-4000-8000-000000000012', 'prune', current_date - 150, 'running',
               now() - interval '150 days', null),
              ('00000000-0000-4000-8000-000000000013', 'prune', current_date - 10, 'succeeded',
               now() - interval '10 days', now() - interval '10 days')`,
    );
    await db.pool.query(
      `insert into public.payproc_events (id, type, created, received_at)
       values ('evt_prune_old', 'charge.refunded', now() - interval '100 days', now() - interval '100 days'),
              ('evt_prune_young', 'charge.refunded', now() - interval '40 days', now() - interval '40 days')`,
    );
    await db.pool.query(
      `insert into public.email_logs
         (id, recipient_email, email_type, subject, send_status, created_at, next_attempt_at, attempts)
       values ('00000000-0000-4000-8000-000000000021', 'a@example.com', 'welcome', 'Old', 'sent',
               now() - interval '400 days', null, 1),
              ('00000000-0000-4000-8000-000000000022', 'a@example.com', 'welcome', 'Retrying', 'failed',
               now() - interval '400 days', now() + interval '1 hour', 2),
              ('00000000-0000-4000-8000-000000000023', 'a@example.com', 'welcome', 'Young', 'sent',
               now() - interval '100 days', null, 1)`,
    );
    await db.pool.query(
      `insert into public.contact_ceiling_hits (window_started_at, ceiling, reached_at, window_ends_at)
       values (now() - interval '101 days', 5, now() - interval '101 days', now() - interval '100 days'),
              (now() - interval '11 days', 5, now() - interval '11 days', now() - interval '10 days')`,
    );

    const first = await runHousekeeping(ctx());
    assert.ok(!("skipped" in first));
    assert.equal(first.failed, 0);
    assert.equal(first.counts.jobRuns, 3);
    assert.equal(first.counts.priceAlertRuns, 2);
    assert.equal(first.counts.dailyTaskRuns, 1);
    assert.equal(first.counts.payprocEvents, 1);
    assert.equal(first.counts.emailLogs, 1);
    assert.equal(first.counts.contactCeilingHits, 1);

    assert.deepEqual(
      await ids("select id from public.job_runs where job_name like 'prune-%'"),
      [a100, b10, c200, c300, d300].sort(),
    );
    assert.deepEqual(await ids("select id from public.price_alert_runs"), [
      "00000000-0000-4000-8000-000000000003",
    ]);
    assert.deepEqual(await ids("select id from public.daily_task_runs where slot = 'prune'"), [
      "00000000-0000-4000-8000-000000000012",
      "00000000-0000-4000-8000-000000000013",
    ]);
    assert.deepEqual(await ids("select id from public.payproc_events"), ["evt_prune_young"]);
    assert.deepEqual(await ids("select id from public.email_logs"), [
      "00000000-0000-4000-8000-000000000022",
      "00000000-0000-4000-8000-000000000023",
    ]);
    const { rows: hits } = await db.pool.query(
      "select 1 from public.contact_ceiling_hits where window_ends_at > now() - interval '20 days'",
    );
    assert.equal(hits.length, 1);
    assert.equal(
      (await db.pool.query("select 1 from public.contact_ceiling_hits")).rows.length,
      1,
    );

    const second = await runHousekeeping(ctx());
    assert.ok(!("skipped" in second));
    for (
      const name of [
        "jobRuns",
        "priceAlertRuns",
        "dailyTaskRuns",
        "payprocEvents",
        "emailLogs",
        "contactCeilingHits",
      ]
    ) {
      assert.equal(second.counts[name], 0, name);
    }
  },
);

sqlTest(
  "a backlog larger than a batch is deleted in batches within one run; a prune call deletes at most its limit",
  async () => {
    const n = PRUNE_BATCH * 2 + 7;
    await db.pool.query(
      `insert into public.payproc_events (id, type, created, received_at)
       select 'evt_backlog_' || g, 'invoice.paid', now() - interval '200 days', now() - interval '200 days'
       from generate_series(1, $1) g`,
      [n],
    );
    const { rows: [one] } = await db.pool.query(
      "select public.prune_payproc_events(interval '90 days', 10) as pruned",
    );
    assert.equal(one.pruned, 10);
    const run = await runHousekeeping(ctx());
    assert.ok(!("skipped" in run));
    assert.equal(run.counts.payprocEvents, n - 10);
    const { rows: [left] } = await db.pool.query(
      "select count(*)::int as n from public.payproc_events where id like 'evt_backlog_%'",
    );
    assert.equal(left.n, 0);
  },
);

sqlTest("two housekeeping runs at once, and two prune calls at once, do not fail", async () => {
  await db.pool.query(
    `insert into public.payproc_events (id, type, created, received_at)
     select 'evt_both_' || g, 'invoice.paid', now() - interval '200 days', now() - interval '200 days'
     from generate_series(1, 300) g`,
  );
  const calls = await Promise.all([
    db.pool.query("select public.prune_payproc_events(interval '90 days', 200) as pruned"),
    db.pool.query("select public.prune_payproc_events(interval '90 days', 200) as pruned"),
  ]);
  const pruned = calls.reduce((sum, r) => sum + r.rows[0].pruned, 0);
  const runs = await Promise.all([runHousekeeping(ctx()), runHousekeeping(ctx())]);
  const counted = runs.reduce(
    (sum, r) => sum + ("skipped" in r ? 0 : (r.counts.payprocEvents ?? 0)),
    0,
  );
  assert.equal(pruned + counted, 300);
  const { rows: [left] } = await db.pool.query(
    "select count(*)::int as n from public.payproc_events where id like 'evt_both_%'",
  );
  assert.equal(left.n, 0);
});

sqlTest(
  "the prune functions refuse too short a retention and are the service role's only",
  async () => {
    for (
      const [fn, age] of [
        ["prune_payproc_events", "29 days"],
        ["prune_email_logs", "89 days"],
        ["prune_job_runs", "1 hour"],
        ["prune_daily_task_runs", "1 day"],
        ["prune_price_alert_runs", "1 hour"],
        ["prune_contact_ceiling_hits", "6 days"],
      ] as const
    ) {
      await assert.rejects(
        db.pool.query(`select public.${fn}($1::interval, 10)`, [age]),
        (error: { code?: string; message?: string }) =>
          error.code === "22023" &&
          /^Cannot prune [a-z -]+: keep at least \d+ days?( \(.+\))?, not \S.*$/.test(
            error.message!,
          ),
        fn,
      );
      const { rows: [grants] } = await db.pool.query(
        `select has_function_privilege('anon', $1, 'execute') as anon,
              has_function_privilege('authenticated', $1, 'execute') as authenticated,
              has_function_privilege('service_role', $1, 'execute') as service`,
        [`public.${fn}(interval, integer)`],
      );
      assert.deepEqual(grants, { anon: false, authenticated: false, service: true }, fn);
    }
  },
);
