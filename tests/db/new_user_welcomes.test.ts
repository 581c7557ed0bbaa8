import assert from "node:assert/strict";
import pg from "pg";
import { Cron } from "croner";
import { listMigrations, migrate } from "../../local/db/migrate.ts";
import { createTestDatabase, dropDatabase, sqlTest, withDatabase } from "../support/db.ts";
import { withClient } from "../../local/db/pg_client.ts";
import { asRole, createUser } from "../support/sql.ts";
import { rejectsWith } from "./core_fixtures.ts";

const db = await createTestDatabase();

/** The role Supabase Auth inserts users as (the stand-in models its rights: none in public). */
const AUTH_ROLE = "supabase_auth_admin";

/** Inserts a user the way Supabase Auth does: as its own role, committed. */
async function signUpAsAuth(
  pool: pg.Pool,
  options: { email?: string | null; anonymous?: boolean } = {},
): Promise<string> {
  const client = await pool.connect();
  try {
    await client.query("begin");
    await client.query(`set local role ${AUTH_ROLE}`);
    const { rows } = await client.query<{ id: string }>(
      "insert into auth.users (email, is_anonymous) values ($1, $2) returning id",
      [
        options.email === undefined
          ? `auth-${crypto.randomUUID().slice(0, 8)}@example.test`
          : options.email,
        options.anonymous ?? false,
      ],
    );
    await client.query("commit");
    return rows[0]!.id;
  } catch (error) {
    await client.query("rollback").catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}

async function queueRow(pool: pg.Pool, userId: string) {
  const { rows } = await pool.query<{ status: string; attempts: number }>(
    "select status, attempts from public.new_user_welcomes where user_id = $1",
    [userId],
  );
  return rows[0] ?? null;
}

sqlTest(
  "new_user_welcomes: a user inserted by Auth's role (no rights in public) is queued once; an anonymous sign-in is not",
  async () => {
    const { rows: rights } = await db.pool.query<{ may: boolean }>(
      "select has_table_privilege($1, 'public.new_user_welcomes', 'insert') as may",
      [AUTH_ROLE],
    );
    assert.equal(rights[0]!.may, false, "Auth's role cannot write the queue itself");

    const id = await signUpAsAuth(db.pool);
    assert.deepEqual(await queueRow(db.pool, id), { status: "pending", attempts: 0 });
    const phoneOnly = await signUpAsAuth(db.pool, { email: null });
    assert.equal((await queueRow(db.pool, phoneOnly))?.status, "pending", "no address: queued");
    const anonymous = await signUpAsAuth(db.pool, { anonymous: true });
    assert.equal(await queueRow(db.pool, anonymous), null, "an anonymous sign-in is no sign-up");

    // The user's later changes (a sign-in, a new address) queue nothing more.
    await db.pool.query(
      "update auth.users set last_sign_in_at = now(), email = $2 where id = $1",
      [id, `changed-${crypto.randomUUID().slice(0, 8)}@example.test`],
    );
    const { rows } = await db.pool.query<{ n: number }>(
      "select count(*)::int as n from public.new_user_welcomes where user_id = $1",
      [id],
    );
    assert.equal(rows[0]!.n, 1);
    // Deleting the user removes its row.
    await db.pool.query("delete from auth.users where id = $1", [id]);
    assert.equal(await queueRow(db.pool, id), null);
  },
);

sqlTest(
  "new_user_welcomes: admins read the queue; users and anon do not, and nobody writes it",
  async () => {
    const admin = await createUser(db.pool, { admin: true });
    const user = await createUser(db.pool);
    await asRole(db.pool, { role: "authenticated", userId: admin.id }, async (client) => {
      const { rows } = await client.query<{ user_id: string }>(
        "select user_id from public.new_user_welcomes where user_id = any($1::uuid[])",
        [[admin.id, user.id]],
      );
      assert.equal(rows.length, 2);
      await rejectsWith(
        client,
        "42501",
        "update public.new_user_welcomes set status = 'welcomed', welcomed_at = now()",
      );
      await rejectsWith(client, "42501", "delete from public.new_user_welcomes");
    });
    await asRole(db.pool, { role: "authenticated", userId: user.id }, async (client) => {
      const { rows } = await client.query("select user_id from public.new_user_welcomes");
      assert.deepEqual(rows, []);
      await rejectsWith(
        client,
        "42501",
        "insert into public.new_user_welcomes (user_id) values ($1)",
        [user.id],
      );
    });
    await asRole(db.pool, { role: "anon" }, async (client) => {
      await rejectsWith(client, "42501", "select user_id from public.new_user_welcomes");
    });
  },
);

sqlTest("new_user_welcomes: the drain is scheduled every minute", async () => {
  const { rows } = await db.pool.query<{ cron: string; enabled: boolean; body: unknown }>(
    "select cron, enabled, body from public.job_schedules where function_name = 'send-new-user-notification'",
  );
  assert.equal(rows.length, 1);
  assert.equal(rows[0]!.cron, "* * * * *");
  assert.equal(rows[0]!.enabled, true);
  assert.deepEqual(rows[0]!.body, {}, "no body: the start drains the queue");
  const cron = new Cron(rows[0]!.cron, { paused: true, timezone: "UTC" });
  const [first, second] = cron.nextRuns(2, new Date("2026-11-26T12:00:30Z"));
  cron.stop();
  assert.equal(first?.toISOString(), "2026-11-26T12:01:00.000Z");
  assert.equal(second!.getTime() - first!.getTime(), 60_000);
});

sqlTest(
  "landing on a database in use: existing users get no welcome, and sign-in bodies leave email_logs",
  async () => {
    const adminUrl = Deno.env.get("TEST_DATABASE_URL")!;
    const name = `t_${Deno.env.get("TEST_RUN_ID")}_land_${crypto.randomUUID().slice(0, 8)}`;
    const url = withDatabase(adminUrl, name);
    await withClient(adminUrl, (admin) => admin.query(`create database "${name}"`));
    const before = await Deno.makeTempDir();
    const pool = new pg.Pool({ connectionString: url, max: 2 });
    try {
      // The database as it was before the welcome queue and the sign-in bodies.
      for (const m of listMigrations().filter((m) => m.version < "20261126002000")) {
        await Deno.copyFile(m.path, `${before}/${m.version}_${m.name}.sql`);
      }
      await migrate(url, { includePlatform: true, migrationsDir: before });
      const existing = await createUser(pool);
      const mail = async (type: string, status: string, html: string | null) => {
        const { rows } = await pool.query<{ id: string }>(
          `insert into public.email_logs (recipient_email, email_type, send_status, subject, html,
             text_body)
           values ('old@example.test', $1, $2, 'Subject', $3, $3) returning id`,
          [type, status, html],
        );
        return rows[0]!.id;
      };
      const link = "https://project.example/auth/v1/verify?token=old-hash&type=magiclink";
      const captured = await mail("auth_magiclink", "captured", `<a href="${link}">Sign in</a>`);
      const failed = await mail("auth_recovery", "failed", `<a href="${link}">Reset</a>`);
      const welcome = await mail("welcome", "captured", "<p>Welcome</p>");

      await migrate(url);

      assert.equal(await queueRow(pool, existing.id), null, "nobody who existed is queued");
      const { rows } = await pool.query<
        { id: string; html: string | null; text_body: string | null }
      >(
        "select id, html, text_body from public.email_logs order by created_at, id",
      );
      const body = (id: string) => rows.find((r) => r.id === id);
      assert.deepEqual(body(captured), { id: captured, html: null, text_body: null });
      assert.deepEqual(body(failed), { id: failed, html: null, text_body: null });
      assert.equal(body(welcome)?.html, "<p>Welcome</p>", "other e-mails keep their body");
      const { rows: apart } = await pool.query<{ email_log_id: string; html: string }>(
        "select email_log_id, html from public.email_sign_in_bodies",
      );
      assert.deepEqual(
        apart,
        [{ email_log_id: captured, html: `<a href="${link}">Sign in</a>` }],
        "a captured link is kept for the mail viewer; a failed one is deleted",
      );
      // A user who signs up after it landed is queued.
      const newcomer = await createUser(pool);
      assert.equal((await queueRow(pool, newcomer.id))?.status, "pending");
    } finally {
      await pool.end();
      await dropDatabase(adminUrl, name);
      await Deno.remove(before, { recursive: true });
    }
  },
);
