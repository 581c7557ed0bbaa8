import assert from "node:assert/strict";
import { createTestDatabase, sqlTest } from "../support/db.ts";
import { asRole } from "../support/sql.ts";
import { rejectsWith, sqlState } from "./core_fixtures.ts";

const db = await createTestDatabase();

const INJECTION = "x'); drop table y; --";

async function command(name: string, body: unknown): Promise<string> {
  const { rows } = await db.pool.query<{ command: string }>(
    "select public.job_schedule_command($1, $2::jsonb) as command",
    [name, JSON.stringify(body)],
  );
  return rows[0]!.command;
}

async function quoteLiteral(value: string): Promise<string> {
  const { rows } = await db.pool.query<{ q: string }>("select quote_literal($1::text) as q", [
    value,
  ]);
  return rows[0]!.q;
}

sqlTest("job_schedules: a function name is lower-case letters, digits and hyphens", async () => {
  for (const name of [INJECTION, "Payproc-Sync", "sync invoices", "a/b", "a?x=1", ""]) {
    await assert.rejects(
      db.pool.query(
        "insert into public.job_schedules (function_name, cron) values ($1, '* * * * *')",
        [
          name,
        ],
      ),
      sqlState("23514"),
      name,
    );
  }
  await db.pool.query(
    "insert into public.job_schedules (function_name, cron) values ('update-views-count-2', '0 * * * *')",
  );
  const { rows } = await db.pool.query(
    `select conname from pg_constraint
     where conrelid = 'public.job_schedules'::regclass and conname = 'job_schedules_function_name_format'`,
  );
  assert.equal(rows.length, 1);
});

sqlTest("job_schedule_command() of a row quotes its URL path and body as literals", async () => {
  const { rows } = await db.pool.query<{ command: string }>(
    `select public.job_schedule_command(function_name, body) as command
     from public.job_schedules where function_name = 'payproc-sync'`,
  );
  const text = rows[0]!.command;
  assert.match(text, /^select net\.http_post\(/);
  assert.ok(text.includes("|| '/functions/v1/payproc-sync',"), text);
  assert.ok(text.includes("body := '{}'::jsonb,"), text);
  assert.ok(text.includes("where name = 'project_url'"), text);
  assert.ok(text.includes("where name = 'scheduler_token'"), text);
  assert.ok(text.includes("timeout_milliseconds := 60000)"), text);
});

sqlTest(
  "job_schedule_command() quotes a body with quotes; it refuses a malformed name",
  async () => {
    const body = { note: 'it\'s a "test"', sql: INJECTION };
    const text = await command("sync-invoices", body);
    const { rows } = await db.pool.query<{ body: string }>("select $1::jsonb::text as body", [
      JSON.stringify(body),
    ]);
    const literal = await quoteLiteral(rows[0]!.body);
    assert.ok(literal.includes("''"), "the body's quote is doubled");
    assert.ok(text.includes(`body := ${literal}::jsonb,`), text);
    assert.ok(text.includes(`|| ${await quoteLiteral("/functions/v1/sync-invoices")},`), text);

    for (const name of [INJECTION, "", "UPPER"]) {
      await assert.rejects(command(name, {}), sqlState("22023"), name);
    }
    await assert.rejects(
      db.pool.query("select public.job_schedule_command('payproc-sync', null)"),
      sqlState("22023"),
    );
  },
);

sqlTest("job_schedule_command() text runs: one POST with the path and the body given", async () => {
  // Stand-ins for pg_net and Vault, in a transaction that is rolled back.
  const client = await db.pool.connect();
  try {
    await client.query("begin");
    await client.query(`
      create schema net;
      create table net.calls (url text, headers jsonb, body jsonb, timeout_milliseconds integer);
      create function net.http_post(
        url text, headers jsonb, body jsonb, timeout_milliseconds integer
      ) returns bigint language sql as $$
        insert into net.calls values (url, headers, body, timeout_milliseconds) returning 1::bigint
      $$;
      create schema vault;
      create table vault.decrypted_secrets (name text, decrypted_secret text);
      insert into vault.decrypted_secrets values
        ('project_url', 'https://ref.supabase.example'), ('scheduler_token', 'tok');
    `);
    const body = { note: "it's", sql: INJECTION };
    const text = await command("payproc-sync", body);
    await client.query(text);
    const { rows } = await client.query("select * from net.calls");
    assert.deepEqual(rows, [{
      url: "https://ref.supabase.example/functions/v1/payproc-sync",
      headers: { "Content-Type": "application/json", Authorization: "Bearer tok" },
      body,
      timeout_milliseconds: 60000,
    }]);
  } finally {
    await client.query("rollback");
    client.release();
  }
});

sqlTest("job_schedule_command() and schedule_jobs() are not for clients", async () => {
  for (const role of ["anon", "authenticated"] as const) {
    await asRole(db.pool, { role }, async (c) => {
      await rejectsWith(c, "42501", "select public.job_schedule_command('payproc-sync', '{}')");
      await rejectsWith(c, "42501", "select public.schedule_jobs()");
    });
  }
  await asRole(db.pool, { role: "service_role" }, async (c) => {
    const { rows } = await c.query(
      "select public.job_schedule_command('payproc-sync', '{}') is not null as ok",
    );
    assert.equal(rows[0].ok, true);
  });
  // Without pg_cron and pg_net (as here) there is nothing to install.
  const { rows } = await db.pool.query("select public.schedule_jobs() as n");
  assert.equal(rows[0].n, 0);
});

sqlTest("job_schedules: admins read the schedule; other users and anon see nothing", async () => {
  const { rows: [admin] } = await db.pool.query<{ id: string }>(
    "insert into auth.users (email) values ('schedule-admin@example.test') returning id",
  );
  await db.pool.query("insert into public.user_roles (user_id, role) values ($1, 'admin')", [
    admin!.id,
  ]);
  const { rows: [user] } = await db.pool.query<{ id: string }>(
    "insert into auth.users (email) values ('schedule-user@example.test') returning id",
  );
  const total = (await db.pool.query("select count(*)::int as n from public.job_schedules"))
    .rows[0].n;
  assert.ok(total > 0);
  const seen = (id: string) =>
    asRole(
      db.pool,
      { role: "authenticated", userId: id },
      async (c) => (await c.query("select count(*)::int as n from public.job_schedules")).rows[0].n,
    );
  assert.equal(await seen(admin!.id), total);
  assert.equal(await seen(user!.id), 0);
  await asRole(db.pool, { role: "anon" }, async (c) => {
    await rejectsWith(c, "42501", "select * from public.job_schedules");
  });
  await asRole(db.pool, { role: "authenticated", userId: admin!.id }, async (c) => {
    await rejectsWith(c, "42501", "update public.job_schedules set enabled = false");
  });
});
