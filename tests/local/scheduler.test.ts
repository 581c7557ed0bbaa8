import assert from "node:assert/strict";
import { startScheduler } from "../../local/scheduler.ts";
import { FUNCTION_NAMES, type FunctionName, FUNCTIONS } from "../../shared/functions.ts";
import { Logger } from "../../supabase/functions/_shared/platform/log.ts";
import { createTestDatabase, sqlTest } from "../support/db.ts";

const db = await createTestDatabase();

sqlTest(
  "startScheduler() POSTs each enabled job_schedules row with the scheduler token",
  async () => {
    const calls: Array<{ path: string; auth: string | null; body: string }> = [];
    const server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen: () => {} },
      async (req) => {
        calls.push({
          path: new URL(req.url).pathname,
          auth: req.headers.get("authorization"),
          body: await req.text(),
        });
        return Response.json({ ok: true });
      },
    );
    await db.pool.query(
      `insert into public.job_schedules (function_name, cron, body, enabled) values
       ('run-price-alerts', '* * * * * *', '{"slot":"test"}', true),
       ('update-views-count', '* * * * * *', '{}', false)
       on conflict (function_name) do update
       set cron = excluded.cron, body = excluded.body, enabled = excluded.enabled`,
    );
    const scheduler = await startScheduler({
      databaseUrl: db.url,
      functionsUrl: `http://127.0.0.1:${server.addr.port}/functions/v1`,
      token: "scheduler-token-for-this-test",
      log: new Logger("silent"),
    });
    // The migrations' own schedules are enabled too: one due at a minute's
    // turn (send-queued-notices, every minute) may be started meanwhile, so
    // the test looks at its two rows only.
    const priceAlerts = () => calls.filter((c) => c.path === "/functions/v1/run-price-alerts");
    try {
      const deadline = Date.now() + 5_000;
      while (priceAlerts().length === 0 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    } finally {
      scheduler.stop();
      await server.shutdown();
    }
    assert.ok(priceAlerts().length >= 1, "the enabled job ran");
    assert.ok(
      !calls.some((c) => c.path === "/functions/v1/update-views-count"),
      "the disabled one did not",
    );
    for (const call of calls) assert.equal(call.auth, "Bearer scheduler-token-for-this-test");
    assert.deepEqual(JSON.parse(priceAlerts()[0]!.body), { slot: "test" });
  },
);

sqlTest(
  "job_schedules has a row for every function the scheduler starts, and only for those, with a valid cron",
  async () => {
    const { rows } = await db.pool.query<{ function_name: string; cron: string }>(
      "select function_name, cron from public.job_schedules order by 1",
    );
    const names = rows.map((r) => r.function_name);
    // Scheduled functions, and admin functions the schedule starts too
    // (catalog `scheduler: true`): the scheduler token is accepted by these.
    const startable = FUNCTION_NAMES.filter((name) => {
      const entry: { access: string; scheduler?: true } = FUNCTIONS[name];
      return entry.access === "scheduled" || entry.scheduler === true;
    });
    assert.ok(startable.includes("run-daily-tasks") && startable.includes("run-price-alerts"));
    assert.ok(startable.includes("send-admin-listing-notification"));
    for (const job of startable) assert.ok(names.includes(job), `${job} is scheduled`);
    for (const name of names) {
      assert.ok(startable.includes(name as FunctionName), `${name} accepts the scheduler token`);
    }
    assert.equal(
      rows.find((r) => r.function_name === "process-sponsored-activations")?.cron,
      "0 * * * *",
      "sponsored placements start within the hour",
    );
    const { Cron } = await import("croner");
    for (const row of rows) new Cron(row.cron, { paused: true }).stop();
  },
);
