import assert from "node:assert/strict";
import type { z } from "zod";
import type { RunDailyTasksOutput } from "../../shared/scheduled_schemas.ts";
import handler from "../../supabase/functions/run-daily-tasks/handler.ts";
import { utcDay } from "../../supabase/functions/_shared/daily/daily_tasks.ts";
import { createListing } from "../db/core_fixtures.ts";
import { sqlTest } from "../support/db.ts";
import { emailEnv, notificationsSetup } from "../support/notifications.ts";
import { invoke, testRuntime } from "../support/runtime.ts";
import { asRole, createUser, type TestUser } from "../support/sql.ts";
import { viewsSettled } from "../support/views.ts";

type Answer = z.infer<typeof RunDailyTasksOutput> & {
  error?: { code: string; message: string; details?: unknown };
};

const { db, double, runtime, keys } = await notificationsSetup();
const localRuntime = await testRuntime(db, { LOCAL_DEV: "true" });
/** Error lines of a runtime that sends e-mail like `runtime` and records its log. */
const errorLines: Array<Record<string, unknown>> = [];
const loggedRuntime = await testRuntime(db, { ...emailEnv(double), LOG_LEVEL: "error" }, {
  logSink: (_level, line) => errorLines.push(JSON.parse(line)),
});

/** The sub-jobs in the order the orchestrator runs them. */
const ORDER = [
  "process-sponsored-activations",
  "send-sponsored-notifications",
  "update-views-count",
  "stray-refunds",
  "escrow-alerts",
  "email-retry",
  "offer-expiry",
  "access-request-expiry",
  "housekeeping",
];

async function count(sql: string, params: unknown[] = []): Promise<number> {
  const { rows } = await db.pool.query<{ n: number }>(`select (${sql})::int as n`, params);
  return rows[0]!.n;
}

/** One piece of work for every sub-job: a placement due, a view, a due e-mail, a lapsed offer,
 * a lapsed analysis cache entry and an old rate-limit window. */
async function dueWork(): Promise<{
  seller: TestUser;
  listingId: string;
  placementId: string;
  emailId: string;
  offerId: string;
  lapsedUrl: string;
  rateKey: string;
}> {
  const seller = await createUser(db.pool);
  const buyer = await createUser(db.pool);
  const listing = await createListing(db.pool, seller.id, "approved");
  const { rows: [placement] } = await db.pool.query<{ id: string }>(
    `insert into public.sponsored_listings (listing_id, seller_id, starts_at, ends_at)
     values ($1, $2, now() - interval '1 minute', now() + interval '7 days') returning id`,
    [listing.id, seller.id],
  );
  await asRole(db.pool, { role: "anon" }, async (client) => {
    await client.query("select public.record_listing_view($1, 'daily-viewer-1')", [listing.id]);
    await client.query("commit");
  });
  const { rows: [email] } = await db.pool.query<{ id: string }>(
    `insert into public.email_logs (recipient_email, email_type, subject, html, next_attempt_at)
     values ($1, 'notification', 'Left behind by a request that died', '<p>hi</p>',
             now() - interval '1 second')
     returning id`,
    [buyer.email],
  );
  const offerId = await asRole(
    db.pool,
    { role: "authenticated", userId: buyer.id },
    async (client) => {
      const { rows } = await client.query<{ id: string }>(
        `insert into public.offers (listing_id, amount, currency) values ($1, 100, $2)
         returning id`,
        [listing.id, "USD"],
      );
      await client.query("commit");
      return rows[0]!.id;
    },
  );
  await db.pool.query(
    "update public.offers set expires_at = now() - interval '1 minute' where id = $1",
    [offerId],
  );
  const lapsedUrl = `https://lapsed.example/${crypto.randomUUID()}`;
  await db.pool.query(
    `insert into public.project_analysis_cache (url, analysis, model, fetched_at, expires_at)
     values ($1, '{}', 'model', now() - interval '25 hours', now() - interval '1 hour')`,
    [lapsedUrl],
  );
  const rateKey = `daily-test:${crypto.randomUUID()}`;
  await db.pool.query(
    `insert into public.rate_limits (key, window_started_at, window_seconds, hits)
     values ($1, now() - interval '3 days', 60, 1)`,
    [rateKey],
  );
  return {
    seller,
    listingId: listing.id,
    placementId: placement!.id,
    emailId: email!.id,
    offerId,
    lapsedUrl,
    rateKey,
  };
}

sqlTest(
  "run-daily-tasks: runs every sub-job in order, once per slot and day; force runs it again",
  async () => {
    const work = await dueWork();
    await viewsSettled(db.pool);
    const slot = "order-test";
    const first = await invoke<Answer>(handler, runtime, {
      token: keys.schedulerToken,
      body: { slot },
    });
    assert.equal(first.status, 200, JSON.stringify(first.body));
    assert.equal(first.body.slot, slot);
    assert.equal(first.body.day, utcDay(new Date()));
    assert.equal(first.body.skipped, false);
    assert.equal(first.body.forced, false);
    assert.deepEqual(first.body.results.map((r) => r.job), ORDER);
    for (const result of first.body.results) {
      assert.equal(result.status, "succeeded", JSON.stringify(result));
      assert.ok(result.durationMs >= 0);
      assert.equal(result.counts?.job, result.job);
    }

    // Each sub-job did its work.
    assert.equal(
      await count(
        "select count(*) from public.sponsored_listings where id = $1 and status = 'active'",
        [
          work.placementId,
        ],
      ),
      1,
    );
    assert.equal(
      await count("select count(*) from public.listings where id = $1 and is_sponsored", [
        work.listingId,
      ]),
      1,
    );
    assert.equal(
      await count("select views_count from public.listings where id = $1", [work.listingId]),
      1,
    );
    assert.equal(
      await count("select count(*) from public.email_logs where id = $1 and send_status = 'sent'", [
        work.emailId,
      ]),
      1,
    );
    assert.equal(
      await count("select count(*) from public.offers where id = $1 and status = 'expired'", [
        work.offerId,
      ]),
      1,
    );
    assert.ok(
      double.sentTo(work.seller.email).length >= 1,
      "the seller heard the placement started",
    );
    assert.equal(
      await count("select count(*) from public.project_analysis_cache where url = $1", [
        work.lapsedUrl,
      ]),
      0,
    );
    assert.equal(
      await count("select count(*) from public.rate_limits where key = $1", [work.rateKey]),
      0,
    );

    // The same slot again today: skipped, naming the run and its results; nothing ran.
    const runsBefore = await count("select count(*) from public.job_runs");
    const again = await invoke<Answer>(handler, runtime, {
      token: keys.schedulerToken,
      body: { slot },
    });
    assert.equal(again.status, 200);
    assert.equal(again.body.skipped, true);
    assert.equal(again.body.reason, "already_ran");
    assert.equal(again.body.runId, first.body.runId);
    assert.deepEqual(again.body.results, first.body.results);
    assert.equal(await count("select count(*) from public.job_runs"), runsBefore);

    // force: runs again (nothing left to do), the same row counts two runs.
    const forced = await invoke<Answer>(handler, runtime, {
      token: keys.schedulerToken,
      body: { slot, force: true },
    });
    assert.equal(forced.status, 200, JSON.stringify(forced.body));
    assert.equal(forced.body.skipped, false);
    assert.equal(forced.body.forced, true);
    assert.equal(forced.body.runId, first.body.runId);
    assert.deepEqual(forced.body.results.map((r) => r.status), ORDER.map(() => "succeeded"));
    for (const result of forced.body.results) {
      const counts = result.counts;
      assert.ok(counts && !("skipped" in counts), result.job);
      assert.equal(counts.changed, 0, result.job);
    }
    const { rows: [row] } = await db.pool.query(
      "select status, runs, forced, finished_at from public.daily_task_runs where slot = $1",
      [slot],
    );
    assert.equal(row.status, "succeeded");
    assert.equal(row.runs, 2);
    assert.equal(row.forced, true);
    assert.ok(row.finished_at);
  },
);

sqlTest(
  "run-daily-tasks: the default slot is the UTC day; manual is a slot of its own",
  async () => {
    const today = utcDay(new Date());
    await db.pool.query("delete from public.daily_task_runs where slot in ($1, 'manual')", [today]);
    const scheduled = await invoke<Answer>(handler, runtime, { token: keys.schedulerToken });
    assert.equal(scheduled.status, 200, JSON.stringify(scheduled.body));
    assert.equal(scheduled.body.slot, today);
    assert.equal(scheduled.body.skipped, false);

    const admin = await createUser(db.pool, { admin: true });
    const manual = await invoke<Answer>(handler, runtime, {
      token: await keys.userToken(admin),
      body: { slot: "manual" },
    });
    assert.equal(manual.status, 200, JSON.stringify(manual.body));
    assert.equal(manual.body.slot, "manual");
    assert.equal(manual.body.skipped, false);
    assert.notEqual(manual.body.runId, scheduled.body.runId);

    const second = await invoke<Answer>(handler, runtime, { token: keys.schedulerToken, body: {} });
    assert.equal(second.status, 200);
    assert.equal(second.body.skipped, true);
    assert.equal(second.body.runId, scheduled.body.runId);
  },
);

sqlTest(
  "run-daily-tasks: two starts at once — one runs, the other answers 200 skipped",
  async () => {
    const slot = "concurrent";
    const answers = await Promise.all(
      [0, 1].map(() =>
        invoke<Answer>(handler, runtime, { token: keys.schedulerToken, body: { slot } })
      ),
    );
    assert.deepEqual(answers.map((a) => a.status), [200, 200], JSON.stringify(answers));
    const ran = answers.filter((a) => !a.body.skipped);
    const skipped = answers.filter((a) => a.body.skipped);
    assert.equal(ran.length, 1);
    assert.equal(skipped.length, 1);
    assert.ok(["already_running", "already_ran"].includes(skipped[0]!.body.reason ?? ""));
    assert.equal(skipped[0]!.body.runId, ran[0]!.body.runId);
    assert.equal(
      await count("select runs from public.daily_task_runs where slot = $1", [slot]),
      1,
    );
  },
);

sqlTest("run-daily-tasks: a run left unfinished past its timeout is taken over", async () => {
  const slot = "stale";
  await db.pool.query(
    `insert into public.daily_task_runs (slot, day, started_at)
     values ($1, $2::date, now() - interval '2 hours')`,
    [slot, utcDay(new Date())],
  );
  const answer = await invoke<Answer>(handler, runtime, {
    token: keys.schedulerToken,
    body: { slot },
  });
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  assert.equal(answer.body.skipped, false);
  assert.equal(await count("select runs from public.daily_task_runs where slot = $1", [slot]), 2);

  // A fresh unfinished one is not: the start is skipped.
  await db.pool.query(
    "update public.daily_task_runs set status = 'running', started_at = now(), finished_at = null where slot = $1",
    [slot],
  );
  const skipped = await invoke<Answer>(handler, runtime, {
    token: keys.schedulerToken,
    body: { slot, force: true },
  });
  assert.equal(skipped.status, 200);
  assert.equal(skipped.body.skipped, true);
  assert.equal(skipped.body.reason, "already_running");
});

sqlTest(
  "run-daily-tasks: a failing sub-job is isolated — the others run, the answer is 500 with the results",
  async () => {
    const work = await dueWork();
    const client = await db.pool.connect();
    try {
      // Break one sub-job for real: its SQL function is gone for this test.
      await client.query("alter function public.expire_offers() rename to expire_offers_away");
      const answer = await invoke<Answer>(handler, loggedRuntime, {
        token: keys.schedulerToken,
        body: { slot: "failing" },
      });
      assert.equal(answer.status, 500, JSON.stringify(answer.body));
      // Logged as an error: the alert trigger `docs/schedulers.md#the-daily-orchestrator` describes.
      const logged = errorLines.find((line) => line.msg === "daily sub-job failed");
      assert.equal(logged?.level, "error");
      assert.equal(logged?.job, "offer-expiry");
      assert.equal(answer.body.error?.code, "partial_failure");
      assert.match(answer.body.error?.message ?? "", /offer-expiry/);
      assert.deepEqual(answer.body.results.map((r) => [r.job, r.status]), [
        ["process-sponsored-activations", "succeeded"],
        ["send-sponsored-notifications", "succeeded"],
        ["update-views-count", "succeeded"],
        ["stray-refunds", "succeeded"],
        ["escrow-alerts", "succeeded"],
        ["email-retry", "succeeded"],
        ["offer-expiry", "failed"],
        ["access-request-expiry", "succeeded"],
        ["housekeeping", "succeeded"],
      ]);
      const failed = answer.body.results[6]!;
      assert.ok(failed.error?.code);
      assert.equal(failed.counts, undefined);
      const { rows: [offer] } = await db.pool.query(
        "select status from public.offers where id = $1",
        [
          work.offerId,
        ],
      );
      assert.equal(offer.status, "pending");
      const { rows: [row] } = await db.pool.query(
        "select status, results from public.daily_task_runs where slot = 'failing'",
      );
      assert.equal(row.status, "failed");
      assert.deepEqual(row.results, answer.body.results);

      // Asked again without force: 200 skipped with the stored (failed) results.
      const again = await invoke<Answer>(handler, runtime, {
        token: keys.schedulerToken,
        body: { slot: "failing" },
      });
      assert.equal(again.status, 200);
      assert.equal(again.body.reason, "already_ran");
    } finally {
      await client.query("alter function public.expire_offers_away() rename to expire_offers");
      client.release();
    }
  },
);

sqlTest(
  "run-daily-tasks: who may start it, and bad input — refused with nothing written",
  async () => {
    const user = await createUser(db.pool);
    const before = await count("select count(*) from public.daily_task_runs");
    const refusals: Array<[string, Parameters<typeof invoke>[2], number, string]> = [
      ["a signed-in user", { token: await keys.userToken(user), body: {} }, 403, "forbidden"],
      ["the anon key without LOCAL_DEV", { token: keys.anonKey, body: {} }, 403, "forbidden"],
      ["no credential", { body: {} }, 401, "unauthorized"],
      [
        "force not a boolean",
        { token: keys.schedulerToken, body: { force: "yes" } },
        400,
        "invalid_input",
      ],
      [
        "a slot with spaces",
        { token: keys.schedulerToken, body: { slot: "a b" } },
        400,
        "invalid_input",
      ],
      [
        "a slot too long",
        { token: keys.schedulerToken, body: { slot: "x".repeat(51) } },
        400,
        "invalid_input",
      ],
    ];
    for (const [label, request, status, code] of refusals) {
      const answer = await invoke<Answer>(handler, runtime, request);
      assert.equal(answer.status, status, `${label}: ${JSON.stringify(answer.body)}`);
      assert.equal(answer.body.error?.code, code, label);
    }
    assert.equal(await count("select count(*) from public.daily_task_runs"), before);

    // Locally (LOCAL_DEV=true) the anon key starts it, as the interface allows.
    const local = await invoke<Answer>(handler, localRuntime, {
      token: keys.anonKey,
      body: { slot: "local-anon" },
    });
    assert.equal(local.status, 200, JSON.stringify(local.body));
    assert.equal(local.body.skipped, false);
  },
);

sqlTest("daily_task_runs and its functions are not for clients; admins read the runs", async () => {
  const admin = await createUser(db.pool, { admin: true });
  const user = await createUser(db.pool);
  await db.pool.query(
    "insert into public.daily_task_runs (slot, day, status) values ('rls', current_date, 'succeeded')",
  );
  for (const role of ["anon", "authenticated"] as const) {
    for (
      const statement of [
        "select * from public.claim_daily_tasks('x', current_date, true)",
        "select public.finish_daily_tasks(gen_random_uuid(), 'succeeded', '[]')",
      ]
    ) {
      await asRole(db.pool, { role, userId: user.id }, async (client) => {
        await assert.rejects(client.query(statement), /permission denied/, `${role}: ${statement}`);
      });
    }
  }
  const seen = (userId: string) =>
    asRole(db.pool, { role: "authenticated", userId }, async (client) => {
      const { rows } = await client.query(
        "select slot from public.daily_task_runs where slot = 'rls'",
      );
      return rows.length;
    });
  assert.equal(await seen(admin.id), 1);
  assert.equal(await seen(user.id), 0);
  await asRole(db.pool, { role: "authenticated", userId: admin.id }, async (client) => {
    await assert.rejects(
      client.query("update public.daily_task_runs set status = 'failed' where slot = 'rls'"),
      /permission denied/,
    );
  });
});
