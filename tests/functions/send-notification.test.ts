import assert from "node:assert/strict";
import handler from "../../supabase/functions/send-notification/handler.ts";
import type { Runtime } from "../../supabase/functions/_shared/platform/runtime.ts";
import { sqlTest } from "../support/db.ts";
import {
  emailLogs,
  notificationsOf,
  notificationsSetup,
  setPreference,
} from "../support/notifications.ts";
import { invoke } from "../support/runtime.ts";
import { createUser } from "../support/sql.ts";

const { db, double, runtime, keys } = await notificationsSetup();
const admin = await createUser(db.pool, { admin: true });

interface Answer {
  userId: string;
  notificationId: string | null;
  inApp: string;
  email: { id: string; status: string } | null;
  error?: { code: string };
}

async function notify(body: unknown, token?: string, rt: Runtime = runtime) {
  return await invoke<Answer>(handler, rt, { token: token ?? keys.serviceKey, body });
}

sqlTest(
  "send-notification: writes the in-app row, broadcasts it, and e-mails it when asked",
  async () => {
    double.reset();
    const user = await createUser(db.pool);
    const res = await notify({
      userId: user.id,
      type: "payments",
      title: "Payout sent",
      body: "Your payout is on its way.",
      link: "/deals/1",
      data: { dealId: "1" },
      email: true,
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.inApp, "created");
    assert.equal(res.body.email?.status, "sent");
    const [row] = await notificationsOf(db.pool, user.id);
    assert.equal(row?.id, res.body.notificationId);
    assert.equal(row?.title, "Payout sent");
    assert.equal(row?.link, "/deals/1");
    assert.deepEqual(row?.data, { dealId: "1" });
    assert.equal(row?.read_at, null);
    const { rows: broadcasts } = await db.pool.query<{ payload: { record: { id: string } } }>(
      "select payload from realtime.messages where topic = $1 and payload->>'table' = 'notifications'",
      [`user:${user.id}`],
    );
    assert.equal(broadcasts.length, 1);
    assert.equal(broadcasts[0]!.payload.record.id, res.body.notificationId);
    const [sent] = double.sentTo(user.email);
    assert.equal(sent?.subject, "Payout sent");
    assert.match(sent?.html ?? "", /http:\/\/localhost:5173\/deals\/1/, "link made absolute");
  },
);

sqlTest("send-notification: without email it writes only the in-app row", async () => {
  double.reset();
  const user = await createUser(db.pool);
  const res = await notify({ userId: user.id, type: "account", title: "Hi", body: "Hello" });
  assert.equal(res.status, 200);
  assert.equal(res.body.email, null);
  assert.equal(double.sent.length, 0);
  assert.equal((await notificationsOf(db.pool, user.id)).length, 1);
});

sqlTest(
  "send-notification: preferences switch each channel off (in-app not written, e-mail suppressed)",
  async () => {
    double.reset();
    const user = await createUser(db.pool);
    await setPreference(db.pool, user.id, "messages", { email: false, inApp: false });
    const res = await notify({
      userId: user.id,
      type: "messages",
      title: "News",
      body: "Something happened",
      email: true,
    });
    assert.equal(res.status, 200);
    assert.equal(res.body.inApp, "suppressed");
    assert.equal(res.body.notificationId, null);
    assert.equal(res.body.email?.status, "suppressed");
    assert.equal(double.sent.length, 0);
    assert.equal((await notificationsOf(db.pool, user.id)).length, 0);
    const [log] = (await emailLogs(db.pool, "notification")).filter((r) => r.user_id === user.id);
    assert.equal(log?.send_status, "suppressed");
  },
);

sqlTest("send-notification: every interpolated value is escaped in the e-mail", async () => {
  double.reset();
  const user = await createUser(db.pool);
  const res = await notify({
    userId: user.id,
    type: "account",
    title: `<script>alert("t")</script>`,
    body: `<img src=x onerror=alert(1)> & more`,
    email: true,
  });
  assert.equal(res.status, 200);
  const [sent] = double.sentTo(user.email);
  assert.ok(sent?.html);
  assert.ok(!sent.html.includes("<script>"), sent.html);
  assert.ok(!sent.html.includes("<img"), sent.html);
  assert.match(sent.html, /&lt;script&gt;alert\(&quot;t&quot;\)&lt;\/script&gt;/);
  assert.match(sent.html, /&lt;img src=x onerror=alert\(1\)&gt; &amp; more/);
  assert.equal(sent.subject, `<script>alert("t")</script>`, "the subject is text, not HTML");
});

sqlTest(
  "send-notification: unknown user 404, bad input 400, wrong callers 401/403; nothing written",
  async () => {
    double.reset();
    const user = await createUser(db.pool);
    const body = { userId: user.id, type: "account", title: "Hi", body: "Hello", email: true };
    const unknown = await notify({ ...body, userId: crypto.randomUUID() });
    assert.equal(unknown.status, 404);
    assert.equal(unknown.body.error?.code, "not_found");
    for (
      const bad of [
        { ...body, type: "nonsense" },
        { ...body, title: "" },
        { ...body, link: "//evil.example/path" },
        { ...body, link: "javascript:alert(1)" },
        { ...body, userId: "42" },
      ]
    ) {
      const res = await notify(bad);
      assert.equal(res.status, 400, JSON.stringify(bad));
      assert.equal(res.body.error?.code, "invalid_input");
    }
    assert.equal((await notify(body, await keys.userToken(user))).status, 403);
    assert.equal((await notify(body, keys.anonKey)).status, 403);
    assert.equal((await invoke(handler, runtime, { body })).status, 401);
    assert.equal((await notificationsOf(db.pool, user.id)).length, 0);
    assert.equal(double.sent.length, 0);
    const byAdmin = await notify(body, await keys.userToken(admin));
    assert.equal(byAdmin.status, 200);
  },
);

sqlTest(
  "send-notification: data nested 20,000 levels deep, or holding a NUL, is 400 invalid_input; nothing written",
  async () => {
    double.reset();
    const user = await createUser(db.pool);
    const body = { userId: user.id, type: "account", title: "Hi", body: "Hello", email: true };
    const deep = '{"a":'.repeat(20_000) + "1" + "}".repeat(20_000);
    const rawBodies = [
      JSON.stringify({ ...body, data: { x: "__DEEP__" } }).replace('"__DEEP__"', deep),
      JSON.stringify({ ...body, data: { note: "a\u0000b" } }),
      JSON.stringify({ ...body, data: { ["k\uD800"]: 1 } }),
    ];
    for (const rawBody of rawBodies) {
      const res = await invoke<Answer>(handler, runtime, { token: keys.serviceKey, rawBody });
      assert.equal(res.status, 400, JSON.stringify(res.body));
      assert.equal(res.body.error?.code, "invalid_input");
    }
    assert.equal((await notificationsOf(db.pool, user.id)).length, 0);
    assert.equal(double.sent.length, 0);
  },
);
