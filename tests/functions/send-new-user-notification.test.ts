import assert from "node:assert/strict";
import handler from "../../supabase/functions/send-new-user-notification/handler.ts";
import { sqlTest } from "../support/db.ts";
import { emailLogs, notificationsOf, notificationsSetup } from "../support/notifications.ts";
import { invoke } from "../support/runtime.ts";
import { createUser } from "../support/sql.ts";

const { db, double, runtime, keys } = await notificationsSetup();
const admins = [
  await createUser(db.pool, { admin: true }),
  await createUser(db.pool, { admin: true }),
];

interface Answer {
  welcomed: boolean;
  welcome: { inApp: string; email: { status: string } | null };
  admins: Array<{ userId: string; inApp: string; email: unknown }>;
  error?: { code: string };
}

const welcome = (userId: string, token = keys.serviceKey) =>
  invoke<Answer>(handler, runtime, { token, body: { userId } });

sqlTest("send-new-user-notification: welcomes the user and tells each admin once", async () => {
  double.reset();
  const user = await createUser(db.pool);
  const res = await welcome(user.id);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body.welcomed, true);
  assert.equal(res.body.welcome.email?.status, "sent");
  assert.equal(res.body.welcome.inApp, "created");
  assert.deepEqual(res.body.admins.map((a) => a.userId).sort(), admins.map((a) => a.id).sort());
  assert.ok(res.body.admins.every((a) => a.inApp === "created" && a.email === null));
  assert.equal(double.sentTo(user.email).length, 1);
  assert.equal(double.sent.length, 1, "admins get in-app notices, not e-mail");
  for (const admin of admins) {
    const notices = (await notificationsOf(db.pool, admin.id)).filter((n) =>
      n.dedupe_key === `new_user:${user.id}`
    );
    assert.equal(notices.length, 1);
    assert.match(notices[0]!.body, new RegExp(user.email.replace(/[.]/g, "\\.")));
  }
});

sqlTest(
  "send-new-user-notification: a second call (or many at once) sends nothing more",
  async () => {
    double.reset();
    const user = await createUser(db.pool);
    const answers = await Promise.all(Array.from({ length: 6 }, () => welcome(user.id)));
    assert.ok(answers.every((a) => a.status === 200));
    assert.equal(answers.filter((a) => a.body.welcomed).length, 1);
    const again = await welcome(user.id);
    assert.equal(again.body.welcomed, false);
    assert.equal(double.sentTo(user.email).length, 1);
    assert.equal(
      (await emailLogs(db.pool, "welcome")).filter((r) => r.user_id === user.id).length,
      1,
    );
    assert.equal((await notificationsOf(db.pool, user.id)).length, 1);
    assert.equal(
      (await notificationsOf(db.pool, admins[0]!.id)).filter((n) =>
        n.dedupe_key === `new_user:${user.id}`
      ).length,
      1,
    );
  },
);

sqlTest(
  "send-new-user-notification: unknown user 404; a user or the anon key 403; no token 401",
  async () => {
    double.reset();
    const user = await createUser(db.pool);
    assert.equal((await welcome(crypto.randomUUID())).status, 404);
    assert.equal((await welcome(user.id, await keys.userToken(user))).status, 403);
    assert.equal((await welcome(user.id, keys.anonKey)).status, 403);
    assert.equal((await invoke(handler, runtime, { body: { userId: user.id } })).status, 401);
    assert.equal((await welcome("not-a-uuid")).status, 400);
    assert.equal(double.sent.length, 0);
    assert.equal((await notificationsOf(db.pool, user.id)).length, 0);
  },
);
