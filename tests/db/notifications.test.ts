import assert from "node:assert/strict";
import { NOTIFICATION_TYPE_NAMES, NOTIFICATION_TYPES } from "../../shared/notifications.ts";
import { createTestDatabase, sqlTest } from "../support/db.ts";
import { asRole, createUser } from "../support/sql.ts";
import { rejectsWith } from "./core_fixtures.ts";

const db = await createTestDatabase();

async function notice(userId: string, title = "Hello"): Promise<string> {
  const { rows } = await db.pool.query<{ id: string }>(
    `insert into public.notifications (user_id, type, title, body) values ($1, 'account', $2, 'Body')
     returning id`,
    [userId, title],
  );
  return rows[0]!.id;
}

sqlTest("notifications: a user reads only their own and may change only read_at", async () => {
  const ada = await createUser(db.pool);
  const bob = await createUser(db.pool);
  const mine = await notice(ada.id);
  await notice(bob.id);
  await asRole(db.pool, { role: "authenticated", userId: ada.id }, async (client) => {
    const { rows } = await client.query<{ id: string }>("select id from public.notifications");
    assert.deepEqual(rows.map((r) => r.id), [mine]);
    const marked = await client.query(
      "update public.notifications set read_at = now() where id = $1 returning read_at",
      [mine],
    );
    assert.equal(marked.rowCount, 1);
    await rejectsWith(
      client,
      "42501",
      "update public.notifications set title = 'x' where id = $1",
      [
        mine,
      ],
    );
    await rejectsWith(
      client,
      "42501",
      "insert into public.notifications (user_id, type, title, body) values ($1, 'account', 't', 'b')",
      [ada.id],
    );
    const others = await client.query(
      "update public.notifications set read_at = now() where user_id = $1",
      [bob.id],
    );
    assert.equal(others.rowCount, 0);
    await rejectsWith(client, "42501", "delete from public.notifications where id = $1", [mine]);
  });
  await asRole(db.pool, { role: "anon" }, async (client) => {
    await rejectsWith(client, "42501", "select id from public.notifications");
  });
});

sqlTest(
  "notifications: a dedupe key makes a notice idempotent; links and types are checked",
  async () => {
    const ada = await createUser(db.pool);
    const insert = (key: string | null, link: string | null = null, type = "account") =>
      db.pool.query(
        `insert into public.notifications (user_id, type, title, body, link, dedupe_key)
       values ($1, $4, 't', 'b', $3, $2) on conflict (user_id, dedupe_key) do nothing`,
        [ada.id, key, link, type],
      );
    assert.equal((await insert("k")).rowCount, 1);
    assert.equal((await insert("k")).rowCount, 0);
    assert.equal((await insert(null)).rowCount, 1);
    assert.equal((await insert(null)).rowCount, 1);
    assert.equal((await insert("l", "/deals/1")).rowCount, 1);
    await assert.rejects(insert("m", "//evil.example"), /notifications_link_format/);
    await assert.rejects(insert("n", "javascript:alert(1)"), /notifications_link_format/);
    await assert.rejects(insert("o", null, "nonsense"), /notifications_type_known/);
  },
);

sqlTest(
  "notifications: only critical notices are pushed to the user's private topic; the rest are polled",
  async () => {
    const ada = await createUser(db.pool);
    const pushed: string[] = [];
    for (const type of NOTIFICATION_TYPE_NAMES) {
      const { rows: [row] } = await db.pool.query<{ id: string }>(
        `insert into public.notifications (user_id, type, title, body) values ($1, $2, 'Live', 'Body')
         returning id`,
        [ada.id, type],
      );
      const { rows } = await db.pool.query<{ topic: string }>(
        "select topic from realtime.messages where payload->>'table' = 'notifications' and payload->'record'->>'id' = $1",
        [row!.id],
      );
      assert.ok(rows.length <= 1, type);
      if (rows.length === 1) {
        assert.equal(rows[0]!.topic, `user:${ada.id}`);
        pushed.push(type);
      }
    }
    // The trigger's list and shared/notifications.ts say the same.
    assert.deepEqual(
      pushed,
      NOTIFICATION_TYPE_NAMES.filter((type) => NOTIFICATION_TYPES[type].pushed),
    );
    assert.deepEqual(pushed, ["listing_review", "payments", "handover"]);
    // Polling reads every notice, pushed or not.
    await asRole(db.pool, { role: "authenticated", userId: ada.id }, async (client) => {
      const { rows } = await client.query("select type from public.notifications");
      assert.equal(rows.length, NOTIFICATION_TYPE_NAMES.length);
    });
  },
);

sqlTest("notification_preferences: users manage their own choices only", async () => {
  const ada = await createUser(db.pool);
  const bob = await createUser(db.pool);
  await asRole(db.pool, { role: "authenticated", userId: ada.id }, async (client) => {
    await client.query(
      "insert into public.notification_preferences (type, email, in_app) values ('new_listings', true, false)",
    );
    const { rows } = await client.query<{ user_id: string }>(
      "select user_id from public.notification_preferences",
    );
    assert.deepEqual(rows.map((r) => r.user_id), [ada.id]);
    await rejectsWith(
      client,
      "42501",
      "insert into public.notification_preferences (user_id, type, email, in_app) values ($1, 'payments', false, false)",
      [bob.id],
    );
    await rejectsWith(
      client,
      "23514",
      "insert into public.notification_preferences (type, email, in_app) values ('nonsense', true, true)",
    );
  });
});

sqlTest("email_logs: admins read the log; users and anon do not", async () => {
  const admin = await createUser(db.pool, { admin: true });
  const user = await createUser(db.pool);
  await db.pool.query(
    `insert into public.email_logs (recipient_email, email_type, send_status, subject)
     values ($1, 'welcome', 'sent', 'Welcome')`,
    [user.email],
  );
  await asRole(db.pool, { role: "authenticated", userId: admin.id }, async (client) => {
    const { rows } = await client.query("select id from public.email_logs");
    assert.ok(rows.length >= 1);
  });
  await asRole(db.pool, { role: "authenticated", userId: user.id }, async (client) => {
    const { rows } = await client.query("select id from public.email_logs");
    assert.equal(rows.length, 0);
    await rejectsWith(
      client,
      "42501",
      "insert into public.email_logs (recipient_email, email_type, subject) values ('a@b.c', 'x', 'y')",
    );
  });
  await asRole(db.pool, { role: "anon" }, async (client) => {
    await rejectsWith(client, "42501", "select id from public.email_logs");
  });
});

sqlTest("the SQL lists of notification types are the contract's list", async () => {
  const { rows } = await db.pool.query<{ name: string; def: string }>(
    `select conname as name, pg_get_constraintdef(oid) as def from pg_constraint
     where conname in ('notifications_type_known', 'notification_preferences_type_known')`,
  );
  assert.equal(rows.length, 2);
  for (const row of rows) {
    const listed = [...row.def.matchAll(/'([a-z_]+)'::text/g)].map((m) => m[1]).sort();
    assert.deepEqual(listed, [...NOTIFICATION_TYPE_NAMES].sort(), row.name);
  }
});

sqlTest(
  "notify_admins_in_app() writes in-app exactly when the contract's default (or the admin's choice) allows",
  async () => {
    // The SQL writer keeps its own copy of the in-app defaults; this keeps it
    // equal to shared/notifications.ts for every type.
    const admin = await createUser(db.pool, { admin: true });
    const optedOut = await createUser(db.pool, { admin: true });
    for (const type of NOTIFICATION_TYPE_NAMES) {
      await db.pool.query(
        `insert into public.notification_preferences (user_id, type, email, in_app)
         values ($1, $2, true, false)`,
        [optedOut.id, type],
      );
      const key = `default-check:${type}`;
      await db.pool.query(
        "select public.notify_admins_in_app($1, 'Title', 'Body', null, '{}'::jsonb, $2)",
        [type, key],
      );
      const { rows } = await db.pool.query<{ user_id: string }>(
        `select user_id from public.notifications
         where dedupe_key = $1 and user_id in ($2, $3) order by user_id = $2 desc`,
        [key, admin.id, optedOut.id],
      );
      const expected = NOTIFICATION_TYPES[type].inApp ? [admin.id] : [];
      assert.deepEqual(rows.map((r) => r.user_id), expected, type);
    }
  },
);
