import assert from "node:assert/strict";
import handler from "../../supabase/functions/send-admin-contact-notification/handler.ts";
import type { Runtime } from "../../supabase/functions/_shared/platform/runtime.ts";
import { sqlTest } from "../support/db.ts";
import {
  emailLogs,
  notificationsOf,
  notificationsSetup,
  setPreference,
} from "../support/notifications.ts";
import { invoke } from "../support/runtime.ts";
import { asRole, createUser } from "../support/sql.ts";

interface DigestBody {
  type: string;
  sent: number;
  items: number;
  lastSentAt: string | null;
  results: Array<{ userId: string; inApp: string; email: { id: string; status: string } | null }>;
  error?: { code: string; message: string };
}

const TYPE = "contact_messages";
const { db, double, runtime, captureRuntime, keys } = await notificationsSetup();
const admins = [
  await createUser(db.pool, { admin: true }),
  await createUser(db.pool, { admin: true }),
];
const adminToken = await keys.userToken(admins[0]!);

async function run(token: string | undefined = adminToken, rt: Runtime = runtime) {
  return await invoke<DigestBody>(handler, rt, { token });
}

/** Writes a contact message as a visitor would (the service pool skips the rate limit). */
async function contact(fields: { name?: string; subject?: string | null; message: string }) {
  await db.pool.query(
    "insert into public.contact_messages (name, email, subject, message) values ($1, $2, $3, $4)",
    [
      fields.name ?? "Ada",
      `visitor-${crypto.randomUUID().slice(0, 8)}@example.test`,
      fields.subject === undefined ? "Question" : fields.subject,
      fields.message,
    ],
  );
}

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

async function newestMessage(): Promise<string> {
  const { rows } = await db.pool.query<{ at: string }>(
    `select to_char(max(created_at) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as at
     from public.contact_messages`,
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
  "send-admin-contact-notification: each admin gets one digest; user input arrives escaped",
  async () => {
    double.reset();
    await contact({
      name: "Ada <b>Lovelace</b>",
      message: "Hi!\n<script>alert(1)</script> & more",
    });
    await contact({ name: "Bob", subject: null, message: "Is <img src=x onerror=alert(2)> ok?" });
    const res = await run();
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const count = await adminCount();
    assert.equal(res.body.type, TYPE);
    assert.equal(res.body.sent, count);
    assert.equal(res.body.items, 2);
    assert.equal(res.body.lastSentAt, await newestMessage());
    assert.ok(res.body.results.every((r) => r.inApp === "created" && r.email?.status === "sent"));
    assert.equal(Number((await digestRow()).total_sent_count), count);

    for (const admin of admins) {
      const [notice, ...more] = await digestsOf(admin.id);
      assert.equal(more.length, 0);
      assert.equal(notice?.link, "/admin/messages");
      assert.match(notice?.body ?? "", /"Ada <b>Lovelace<\/b>" and "Bob"/, "in-app text is plain");
      const mails = (await emailLogs(db.pool, "admin_contact_digest")).filter((m) =>
        m.user_id === admin.id
      );
      assert.deepEqual(mails.map((m) => m.send_status), ["sent"]);
      const [sent, ...others] = double.sentTo(admin.email);
      assert.equal(others.length, 0);
      const html = sent?.html ?? "";
      assert.ok(!html.includes("<script"), html);
      assert.ok(!html.includes("<img"), html);
      assert.ok(!html.includes("<b>Lovelace"), html);
      assert.ok(html.includes("&lt;script&gt;alert(1)&lt;/script&gt; &amp; more"), html);
      assert.ok(html.includes("Ada &lt;b&gt;Lovelace&lt;/b&gt;"), html);
      assert.ok(html.includes("(no subject)"), html);
      assert.match(sent?.text ?? "", /<script>alert\(1\)<\/script>/, "the text part is plain text");
    }
  },
);

sqlTest("send-admin-contact-notification: nothing new → sent 0, nothing written", async () => {
  double.reset();
  const before = await digestRow();
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
  assert.equal(double.sent.length, 0);
});

sqlTest("send-admin-contact-notification: two runs at once send one digest per admin", async () => {
  double.reset();
  await db.pool.query(
    "update public.admin_notification_types set total_sent_count = 0 where type = $1",
    [TYPE],
  );
  const before = new Map<string, number>();
  for (const admin of admins) before.set(admin.id, (await digestsOf(admin.id)).length);
  await contact({ message: "First" });
  await contact({ message: "Second" });
  await contact({ message: "Third" });

  const holder = await db.pool.connect();
  let answers;
  try {
    await holder.query("begin");
    await holder.query(
      "select 1 from public.admin_notification_types where type = $1 for update",
      [TYPE],
    );
    const both = Promise.all([run(keys.schedulerToken), run(keys.schedulerToken)]);
    await new Promise((resolve) => setTimeout(resolve, 300));
    await holder.query("commit");
    answers = await both;
  } finally {
    holder.release();
  }
  assert.deepEqual(answers.map((a) => a.status), [200, 200], JSON.stringify(answers));
  const count = await adminCount();
  assert.deepEqual(answers.map((a) => a.body.sent).sort(), [0, count]);
  assert.deepEqual(answers.map((a) => a.body.items).sort(), [0, 3]);
  const row = await digestRow();
  assert.equal(Number(row.total_sent_count), count);
  assert.equal(row.last_sent_at, await newestMessage());
  for (const admin of admins) {
    assert.equal((await digestsOf(admin.id)).length, before.get(admin.id)! + 1);
    assert.equal(double.sentTo(admin.email).length, 1);
  }
});

sqlTest(
  "send-admin-contact-notification: an admin with digest e-mails off gets it in-app only",
  async () => {
    double.reset();
    const quiet = await createUser(db.pool, { admin: true });
    await setPreference(db.pool, quiet.id, "admin_digest", { email: false, inApp: true });
    await contact({ message: "Hello again" });
    const res = await run();
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.sent, await adminCount(), "an in-app digest counts as sent");
    const mine = res.body.results.find((r) => r.userId === quiet.id);
    assert.equal(mine?.inApp, "created");
    assert.equal(mine?.email?.status, "suppressed");
    assert.equal(double.sentTo(quiet.email).length, 0);
    const rows = (await emailLogs(db.pool, "admin_contact_digest")).filter((m) =>
      m.user_id === quiet.id
    );
    assert.deepEqual(rows.map((m) => m.send_status), ["suppressed"]);
  },
);

sqlTest(
  "send-admin-contact-notification: who may run it, with and without a schedule",
  async () => {
    const user = await createUser(db.pool);
    const none = await invoke<DigestBody>(handler, runtime, {});
    assert.equal(none.status, 401);
    const plain = await run(await keys.userToken(user));
    assert.equal(plain.status, 403);
    assert.equal(plain.body.error?.code, "forbidden");

    assert.equal((await digestRow()).cron_schedule, "10 * * * *");
    assert.equal((await run(keys.schedulerToken)).status, 200);
    assert.equal((await run(keys.serviceKey)).status, 200);
    // An admin function: the anon key never starts it, LOCAL_DEV or not.
    assert.equal((await run(keys.anonKey, captureRuntime)).status, 403, "anon key with LOCAL_DEV");
    assert.equal((await run(keys.anonKey)).status, 403, "anon key without LOCAL_DEV");

    await db.pool.query(
      "update public.admin_notification_types set cron_schedule = null where type = $1",
      [TYPE],
    );
    try {
      await contact({ message: "Nobody scheduled me" });
      for (
        const [token, rt] of [[keys.schedulerToken, runtime], [
          keys.serviceKey,
          captureRuntime,
        ]] as const
      ) {
        const refused = await run(token, rt);
        assert.equal(refused.status, 403, JSON.stringify(refused.body));
        assert.equal(refused.body.error?.code, "forbidden");
        assert.match(refused.body.error?.message ?? "", /no schedule.*only an admin/);
      }
      const byAdmin = await run();
      assert.equal(byAdmin.status, 200);
      assert.equal(byAdmin.body.items, 1);
    } finally {
      await db.pool.query(
        "update public.admin_notification_types set cron_schedule = '10 * * * *' where type = $1",
        [TYPE],
      );
    }
  },
);

sqlTest(
  "send-admin-contact-notification: the digest after a ceiling hit mentions it, and only that one",
  async () => {
    const mentions = /hourly ceiling/;
    const latestDigest = async (adminId: string) => (await digestsOf(adminId)).at(-1)!;

    // Without a hit: no mention.
    double.reset();
    await contact({ message: "Before the rush" });
    assert.equal((await run()).status, 200);
    assert.doesNotMatch((await latestDigest(admins[0]!.id)).body, mentions);
    const before = double.sentTo(admins[0]!.email)[0]?.text ?? "";
    assert.match(before, /Before the rush/);
    assert.doesNotMatch(before, mentions);

    // Two visitors from two networks fill a ceiling of 2.
    await db.pool.query(
      "update public.client_limits set max_hits = 2 where name = 'contact:ceiling'",
    );
    await db.pool.query("delete from public.rate_limits where key = 'contact:ceiling'");
    try {
      for (const address of ["192.0.2.10", "192.0.2.11"]) {
        await asRole(
          db.pool,
          { role: "anon", headers: { "x-forwarded-for": address } },
          async (c) => {
            await c.query(
              "insert into public.contact_messages (name, email, message) values ('Bot', $1, 'Spam')",
              [`bot-${address}@example.test`],
            );
            await c.query("commit");
          },
        );
      }
    } finally {
      await db.pool.query(
        "update public.client_limits set max_hits = 100 where name = 'contact:ceiling'",
      );
      await db.pool.query("delete from public.rate_limits where key = 'contact:ceiling'");
    }
    const { rows } = await db.pool.query<{ reached: string; until: string }>(
      `select to_char(reached_at at time zone 'UTC', 'YYYY-MM-DD HH24:MI') as reached,
              to_char(window_ends_at at time zone 'UTC', 'YYYY-MM-DD HH24:MI') as until
       from public.contact_ceiling_hits`,
    );
    assert.equal(rows.length, 1);
    const sentence = "The contact form reached its ceiling of 2 messages at " +
      `${rows[0]!.reached} UTC; messages after that were held for review until ${
        rows[0]!.until
      } UTC.`;

    double.reset();
    const res = await run();
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.items, 2);
    assert.deepEqual(Object.keys(res.body).sort(), [
      "items",
      "lastSentAt",
      "results",
      "sent",
      "type",
    ]);
    for (const admin of admins) {
      const notice = await latestDigest(admin.id);
      assert.ok(notice.body.endsWith(` ${sentence}`), notice.body);
      const [mail, ...more] = double.sentTo(admin.email);
      assert.equal(more.length, 0);
      assert.ok(mail?.text?.includes(sentence), mail?.text ?? "no text");
      assert.ok(mail?.html?.includes(sentence), mail?.html ?? "no html");
    }

    // The next digest covers later messages only: no mention.
    double.reset();
    await contact({ message: "After the rush" });
    assert.equal((await run()).status, 200);
    for (const admin of admins) {
      assert.doesNotMatch((await latestDigest(admin.id)).body, mentions);
      const after = double.sentTo(admin.email)[0]?.text ?? "";
      assert.match(after, /After the rush/);
      assert.doesNotMatch(after, mentions);
    }
  },
);

/** Writes a held contact message (as one past the ceiling is); answers its id. */
async function held(message: string): Promise<string> {
  const { rows } = await db.pool.query<{ id: string }>(
    `insert into public.contact_messages (name, email, message, review_status)
     values ('Held', $1, $2, 'held') returning id`,
    [`held-${crypto.randomUUID().slice(0, 8)}@example.test`, message],
  );
  return rows[0]!.id;
}

/** review_contact_messages as the first admin, committed as a supabase-js call is. */
async function reviewAs(ids: string[], action: "release" | "discard"): Promise<void> {
  await asRole(db.pool, { role: "authenticated", userId: admins[0]!.id }, async (c) => {
    await c.query("select * from public.review_contact_messages($1, $2)", [ids, action]);
    await c.query("commit");
  });
}

sqlTest(
  "send-admin-contact-notification: held messages are counted, not listed; a released one comes once",
  async () => {
    const admin = admins[0]!;
    const latest = async () => (await digestsOf(admin.id)).at(-1)!;
    const mail = () => double.sentTo(admin.email)[0]?.text ?? "";

    // One received, two held: the digest lists one and counts two.
    double.reset();
    await contact({ message: "A plain question" });
    const first = await held("Held offer one");
    const second = await held("Held offer two");
    let res = await run();
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.items, 3, "one received, two newly held");
    let notice = await latest();
    assert.equal(notice.title, "1 contact message received; 2 held for review");
    assert.match(
      notice.body,
      /2 messages wait for review, held .* \(2 new since the last digest\)/,
    );
    assert.equal((notice.data as { held?: number }).held, 2);
    assert.match(mail(), /A plain question/);
    assert.doesNotMatch(mail(), /Held offer/, "held messages are not delivered as received");
    assert.match(mail(), /2 messages wait for review/);

    // Released: the next digest lists it, once; the other still waits.
    await reviewAs([first], "release");
    double.reset();
    res = await run();
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.items, 1);
    notice = await latest();
    assert.equal(notice.title, "1 contact message received; 1 held for review");
    assert.match(notice.body, /^New through the contact form since the last digest, from "Held"\./);
    assert.match(
      notice.body,
      /1 message waits for review, held .* \(0 new since the last digest\)/,
    );
    assert.match(mail(), /Held offer one/);
    assert.match(mail(), /\(held, released \d{4}-\d\d-\d\d \d\d:\d\d UTC\)/);
    assert.doesNotMatch(mail(), /Held offer two|A plain question/);

    double.reset();
    res = await run();
    assert.deepEqual(
      [res.body.sent, res.body.items],
      [0, 0],
      "the released message is not told twice",
    );
    assert.equal(double.sent.length, 0);

    // Discarded: never listed; nothing to send.
    await reviewAs([second], "discard");
    res = await run();
    assert.deepEqual([res.body.sent, res.body.items], [0, 0]);
    double.reset();
    await contact({ message: "After the review" });
    assert.equal((await run()).status, 200);
    notice = await latest();
    assert.equal(notice.title, "1 contact message received");
    assert.doesNotMatch(notice.body + mail(), /wait for review|waits for review|Held offer two/);

    // Held messages alone send a digest that counts them.
    double.reset();
    await held("Held offer three");
    res = await run();
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.items, 1);
    notice = await latest();
    assert.equal(notice.title, "1 contact message held for review");
    assert.match(
      notice.body,
      /^Nothing new in the contact inbox since the last digest\. 1 message waits/,
    );
    assert.doesNotMatch(mail(), /Held offer three/);
    assert.match(mail(), /1 message waits for review/);
  },
);
