import assert from "node:assert/strict";
import handler from "../../supabase/functions/send-admin-listing-notification/handler.ts";
import { createListing } from "../db/core_fixtures.ts";
import { sqlTest } from "../support/db.ts";
import { emailLogs, notificationsOf, notificationsSetup } from "../support/notifications.ts";
import { invoke } from "../support/runtime.ts";
import { createUser } from "../support/sql.ts";

interface DigestBody {
  type: string;
  sent: number;
  items: number;
  lastSentAt: string | null;
  results: Array<{
    userId: string;
    inApp: string;
    notificationId: string | null;
    email: { id: string; status: string } | null;
  }>;
  error?: { code: string; message: string };
}

const TYPE = "listing_review";
const { db, double, runtime, keys } = await notificationsSetup();
const admins = [
  await createUser(db.pool, { admin: true }),
  await createUser(db.pool, { admin: true }),
];
const seller = await createUser(db.pool);
const adminToken = await keys.userToken(admins[0]!);

async function run(token: string | undefined = adminToken) {
  return await invoke<DigestBody>(handler, runtime, { token });
}

/** The type's row, with last_sent_at as exact ISO text. */
async function digestRow() {
  const { rows } = await db.pool.query<{
    cron_schedule: string | null;
    last_sent_at: string | null;
    total_sent_count: string;
  }>(
    `select cron_schedule,
            to_char(last_sent_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as last_sent_at,
            total_sent_count
     from public.admin_notification_types where type = $1`,
    [TYPE],
  );
  return rows[0]!;
}

/** The newest submitted_at of the pending listings, as exact ISO text. */
async function newestPending(): Promise<string> {
  const { rows } = await db.pool.query<{ at: string }>(
    `select to_char(max(submitted_at) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as at
     from public.listings where review_status = 'pending_review'`,
  );
  return rows[0]!.at;
}

async function adminCount(): Promise<number> {
  const { rows } = await db.pool.query<{ n: number }>(
    "select count(*)::integer as n from public.user_roles where role = 'admin'",
  );
  return rows[0]!.n;
}

async function digestsOf(userId: string) {
  return (await notificationsOf(db.pool, userId)).filter((n) => n.type === "admin_digest");
}

sqlTest(
  "send-admin-listing-notification: each admin gets one e-mail and one in-app digest",
  async () => {
    double.reset();
    const pending = [
      await createListing(db.pool, seller.id, "pending_review"),
      await createListing(db.pool, seller.id, "pending_review"),
      await createListing(db.pool, seller.id, "pending_review"),
    ];
    const draft = await createListing(db.pool, seller.id, "draft");
    const approved = await createListing(db.pool, seller.id, "approved");
    const res = await run();
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const count = await adminCount();
    assert.equal(count, admins.length);
    assert.equal(res.body.type, TYPE);
    assert.equal(res.body.sent, count);
    assert.equal(res.body.items, 3);
    assert.equal(res.body.lastSentAt, await newestPending());
    assert.equal(res.body.results.length, count);
    assert.ok(res.body.results.every((r) => r.inApp === "created" && r.email?.status === "sent"));

    const row = await digestRow();
    assert.equal(row.last_sent_at, res.body.lastSentAt);
    assert.equal(Number(row.total_sent_count), count);

    for (const admin of admins) {
      const [notice, ...more] = await digestsOf(admin.id);
      assert.equal(more.length, 0);
      assert.equal(notice?.link, "/admin/listings");
      assert.equal(notice?.dedupe_key, `admin_digest:${TYPE}:${res.body.lastSentAt}`);
      assert.match(notice?.title ?? "", /3 listings/);
      const mails = (await emailLogs(db.pool, "admin_listing_digest")).filter((m) =>
        m.user_id === admin.id
      );
      assert.deepEqual(mails.map((m) => m.send_status), ["sent"]);
      const [sent, ...others] = double.sentTo(admin.email);
      assert.equal(others.length, 0);
      for (const listing of pending) assert.ok(sent?.html?.includes(listing.title), listing.title);
      assert.ok(!sent?.html?.includes(draft.title));
      assert.ok(!sent?.html?.includes(approved.title));
      assert.match(sent?.html ?? "", /http:\/\/localhost:5173\/admin\/listings/);
      assert.match(sent?.text ?? "", /3 listings were submitted for review/);
    }
  },
);

sqlTest("send-admin-listing-notification: nothing new → sent 0, nothing written", async () => {
  double.reset();
  const before = await digestRow();
  const mails = (await emailLogs(db.pool)).length;
  const res = await run();
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.deepEqual(res.body, {
    type: TYPE,
    sent: 0,
    items: 0,
    lastSentAt: before.last_sent_at,
    results: [],
  });
  assert.deepEqual(await digestRow(), before);
  assert.equal((await emailLogs(db.pool)).length, mails);
  assert.equal(double.sent.length, 0);
});

sqlTest("send-admin-listing-notification: two runs at once advance last_sent_at once", async () => {
  double.reset();
  await db.pool.query(
    "update public.admin_notification_types set total_sent_count = 0 where type = $1",
    [TYPE],
  );
  const before = new Map<string, number>();
  for (const admin of admins) before.set(admin.id, (await digestsOf(admin.id)).length);
  await createListing(db.pool, seller.id, "pending_review");
  await createListing(db.pool, seller.id, "pending_review");

  // Hold the type's row so both runs queue on its lock, then let them go.
  const holder = await db.pool.connect();
  let answers;
  try {
    await holder.query("begin");
    await holder.query(
      "select 1 from public.admin_notification_types where type = $1 for update",
      [TYPE],
    );
    const both = Promise.all([run(), run(keys.schedulerToken)]);
    await new Promise((resolve) => setTimeout(resolve, 300));
    await holder.query("commit");
    answers = await both;
  } finally {
    holder.release();
  }
  assert.deepEqual(answers.map((a) => a.status), [200, 200], JSON.stringify(answers));
  const count = await adminCount();
  assert.deepEqual(answers.map((a) => a.body.sent).sort(), [0, count]);
  assert.deepEqual(answers.map((a) => a.body.items).sort(), [0, 2]);
  const row = await digestRow();
  assert.equal(Number(row.total_sent_count), count);
  assert.equal(row.last_sent_at, await newestPending());
  assert.ok(answers.every((a) => a.body.lastSentAt === row.last_sent_at));
  for (const admin of admins) {
    assert.equal((await digestsOf(admin.id)).length, before.get(admin.id)! + 1);
    assert.equal(double.sentTo(admin.email).length, 1);
  }
});

sqlTest("send-admin-listing-notification: lists the oldest 50 and counts them all", async () => {
  double.reset();
  for (let i = 0; i < 55; i++) await createListing(db.pool, seller.id, "pending_review");
  const res = await run();
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body.items, 55);
  const sent = double.sentTo(admins[0]!.email)[0];
  assert.equal(sent?.html?.match(/<li /g)?.length, 50);
  assert.match(
    sent?.text ?? "",
    /55 listings were submitted[^\n]*\n\nThe oldest 50 are listed below\./,
  );
});

sqlTest(
  "send-admin-listing-notification: who may run it, with and without a schedule",
  async () => {
    const user = await createUser(db.pool);
    const none = await invoke<DigestBody>(handler, runtime, {});
    assert.equal(none.status, 401);
    const plain = await run(await keys.userToken(user));
    assert.equal(plain.status, 403);
    assert.equal(plain.body.error?.code, "forbidden");

    assert.equal((await digestRow()).cron_schedule, "5 * * * *");
    assert.equal((await run(keys.schedulerToken)).status, 200);
    assert.equal((await run(keys.serviceKey)).status, 200);

    await db.pool.query(
      "update public.admin_notification_types set cron_schedule = null where type = $1",
      [TYPE],
    );
    try {
      await createListing(db.pool, seller.id, "pending_review");
      const before = await digestRow();
      for (const token of [keys.schedulerToken, keys.serviceKey]) {
        const refused = await run(token);
        assert.equal(refused.status, 403, JSON.stringify(refused.body));
        assert.equal(refused.body.error?.code, "forbidden");
        assert.match(refused.body.error?.message ?? "", /no schedule.*only an admin/);
      }
      assert.deepEqual(await digestRow(), before, "a refused run changes nothing");
      const byAdmin = await run();
      assert.equal(byAdmin.status, 200);
      assert.equal(byAdmin.body.items, 1);
    } finally {
      await db.pool.query(
        "update public.admin_notification_types set cron_schedule = '5 * * * *' where type = $1",
        [TYPE],
      );
    }
  },
);
