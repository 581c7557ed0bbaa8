import assert from "node:assert/strict";
import type pg from "pg";
import { createTestDatabase, sqlTest } from "../support/db.ts";
import { asRole, createUser } from "../support/sql.ts";
import { rejectsWith } from "./core_fixtures.ts";

const db = await createTestDatabase();
const user = await createUser(db.pool);
const admin = await createUser(db.pool, { admin: true });

const SEND = `insert into public.contact_messages (name, email, subject, message)
  values ($1, $2, $3, $4)`;

const signedIn = (userId: string) => ({ role: "authenticated" as const, userId });

/** Reads as the superuser inside `client`'s transaction (after a client's writes). */
async function asService<T extends pg.QueryResultRow>(
  client: pg.PoolClient,
  sql: string,
  params: unknown[] = [],
): Promise<T[]> {
  await client.query("reset role");
  const { rows } = await client.query<T>(sql, params);
  return rows;
}

async function scheduleOf(client: pg.PoolClient | pg.Pool, functionName: string) {
  const { rows } = await client.query<{ cron: string; enabled: boolean }>(
    "select cron, enabled from public.job_schedules where function_name = $1",
    [functionName],
  );
  return rows[0];
}

sqlTest("contact_messages: visitors and signed-in users may send a message", async () => {
  await asRole(db.pool, { role: "anon" }, async (c) => {
    await c.query(SEND, ["Ada", "ada@example.test", "Hello", "A question about a listing"]);
    // A visitor cannot claim to be a user: user_id is not theirs to write.
    await rejectsWith(
      c,
      "42501",
      "insert into public.contact_messages (user_id, name, email, message) values ($1, 'X', 'x@example.test', 'Hi')",
      [user.id],
    );
    const rows = await asService<{ user_id: string | null }>(
      c,
      "select user_id from public.contact_messages where email = 'ada@example.test'",
    );
    assert.deepEqual(rows, [{ user_id: null }]);
  });
  await asRole(db.pool, signedIn(user.id), async (c) => {
    await c.query(SEND, ["Bea", "bea@example.test", null, "Signed in"]);
    const rows = await asService<{ user_id: string | null }>(
      c,
      "select user_id from public.contact_messages where email = 'bea@example.test'",
    );
    assert.deepEqual(rows, [{ user_id: user.id }], "the sender is recorded");
  });
});

sqlTest("contact_messages: empty, over-long and malformed messages are refused", async () => {
  await asRole(db.pool, { role: "anon" }, async (c) => {
    const ok = ["Ada", "limits@example.test", "Subject", "Message"];
    const cases: Array<[string, unknown[]]> = [
      ["empty message", [ok[0], ok[1], ok[2], ""]],
      ["blank message", [ok[0], ok[1], ok[2], "     "]],
      ["message over 5000", [ok[0], ok[1], ok[2], "x".repeat(5001)]],
      ["blank name", ["  ", ok[1], ok[2], ok[3]]],
      ["name over 200", ["n".repeat(201), ok[1], ok[2], ok[3]]],
      ["subject over 200", [ok[0], ok[1], "s".repeat(201), ok[3]]],
      ["bad address", [ok[0], "not an address", ok[2], ok[3]]],
      ["address with brackets", [ok[0], "<a@b.c>", ok[2], ok[3]]],
    ];
    for (const [label, params] of cases) await rejectsWith(c, "23514", SEND, params, label);
    await c.query(SEND, [ok[0], ok[1], ok[2], "m".repeat(5000)]);
  });
});

sqlTest(
  "contact_messages: the 6th message within an hour from one sender is refused (PT429)",
  async () => {
    await asRole(db.pool, { role: "anon" }, async (c) => {
      const addresses = ["rate@example.test", "RATE@example.test", "Rate@Example.Test"];
      for (let i = 0; i < 5; i++) {
        await c.query(SEND, ["Ada", addresses[i % addresses.length], null, `Message ${i}`]);
      }
      await rejectsWith(c, "PT429", SEND, ["Ada", "rate@example.test", null, "Sixth"]);
      // Another address is counted apart.
      await c.query(SEND, ["Bob", "other-sender@example.test", null, "First"]);
    });
    // A signed-in sender is counted by account, whatever address they type.
    await asRole(db.pool, signedIn(user.id), async (c) => {
      for (let i = 0; i < 5; i++) {
        await c.query(SEND, ["Bea", `bea-${i}@example.test`, null, `Message ${i}`]);
      }
      await rejectsWith(c, "PT429", SEND, ["Bea", "bea-new@example.test", null, "Sixth"]);
    });
  },
);

sqlTest("contact_messages: users cannot read them, admins can", async () => {
  await db.pool.query(SEND, ["Cy", "cy@example.test", "Read me", "Only admins"]);
  await asRole(db.pool, { role: "anon" }, async (c) => {
    await rejectsWith(c, "42501", "select * from public.contact_messages");
  });
  await asRole(db.pool, signedIn(user.id), async (c) => {
    const { rows } = await c.query("select * from public.contact_messages");
    assert.equal(rows.length, 0);
    await rejectsWith(c, "42501", "update public.contact_messages set message = 'changed'");
    await rejectsWith(c, "42501", "delete from public.contact_messages");
  });
  await asRole(db.pool, signedIn(admin.id), async (c) => {
    const { rows } = await c.query<{ subject: string }>(
      "select subject from public.contact_messages where email = 'cy@example.test'",
    );
    assert.deepEqual(rows, [{ subject: "Read me" }]);
  });
});

sqlTest("admin_notification_types: cron_schedule drives the job_schedules row", async () => {
  assert.deepEqual(await scheduleOf(db.pool, "send-admin-listing-notification"), {
    cron: "5 * * * *",
    enabled: true,
  });
  assert.deepEqual(await scheduleOf(db.pool, "send-admin-contact-notification"), {
    cron: "10 * * * *",
    enabled: true,
  });
  await asRole(db.pool, signedIn(admin.id), async (c) => {
    const off = await c.query(
      "update public.admin_notification_types set cron_schedule = null where type = 'contact_messages'",
    );
    assert.equal(off.rowCount, 1);
    await c.query("reset role");
    // Disabled, keeping its last cadence.
    assert.deepEqual(await scheduleOf(c, "send-admin-contact-notification"), {
      cron: "10 * * * *",
      enabled: false,
    });
    await c.query("set local role authenticated");
    await c.query(
      "update public.admin_notification_types set cron_schedule = '*/15 * * * *' where type = 'contact_messages'",
    );
    await c.query("reset role");
    assert.deepEqual(await scheduleOf(c, "send-admin-contact-notification"), {
      cron: "*/15 * * * *",
      enabled: true,
    });
    await c.query("set local role authenticated");
    await rejectsWith(
      c,
      "23514",
      "update public.admin_notification_types set cron_schedule = 'hourly' where type = 'contact_messages'",
    );
    // Only the cadence is the admins' to set.
    await rejectsWith(
      c,
      "42501",
      "update public.admin_notification_types set last_sent_at = now() where type = 'contact_messages'",
    );
  });
  assert.equal(
    (await scheduleOf(db.pool, "send-admin-contact-notification"))?.cron,
    "10 * * * *",
    "rolled back",
  );
});

sqlTest("admin_notification_types: a non-admin can neither read nor change it", async () => {
  await asRole(db.pool, signedIn(user.id), async (c) => {
    const { rows } = await c.query("select * from public.admin_notification_types");
    assert.equal(rows.length, 0);
    const res = await c.query(
      "update public.admin_notification_types set cron_schedule = null where type = 'listing_review'",
    );
    assert.equal(res.rowCount, 0, "RLS hides every row from the update");
    await rejectsWith(
      c,
      "42501",
      "update public.admin_notification_types set total_sent_count = 0",
    );
    await rejectsWith(c, "42501", "delete from public.admin_notification_types");
  });
  await asRole(db.pool, { role: "anon" }, async (c) => {
    await rejectsWith(c, "42501", "select * from public.admin_notification_types");
    await rejectsWith(
      c,
      "42501",
      "update public.admin_notification_types set cron_schedule = null",
    );
  });
  const { rows } = await db.pool.query<{ cron_schedule: string | null }>(
    "select cron_schedule from public.admin_notification_types where type = 'listing_review'",
  );
  assert.deepEqual(rows, [{ cron_schedule: "5 * * * *" }]);
  assert.equal((await scheduleOf(db.pool, "send-admin-listing-notification"))?.enabled, true);
});

sqlTest("the new-listings digest is scheduled daily", async () => {
  assert.deepEqual(await scheduleOf(db.pool, "send-listing-notifications"), {
    cron: "0 8 * * *",
    enabled: true,
  });
});
