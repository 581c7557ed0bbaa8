import assert from "node:assert/strict";
import handler from "../../supabase/functions/send-admin-message/handler.ts";
import { sqlTest } from "../support/db.ts";
import { notificationsOf, notificationsSetup, setPreference } from "../support/notifications.ts";
import { invoke } from "../support/runtime.ts";
import { createUser } from "../support/sql.ts";

const { db, double, runtime, keys } = await notificationsSetup();
const admin = await createUser(db.pool, { admin: true });

interface Answer {
  results: Array<{ userId: string; inApp: string; email: { status: string } | null }>;
  unknownUserIds: string[];
  error?: { code: string };
}

const send = async (body: unknown, token?: string) =>
  await invoke<Answer>(handler, runtime, { token: token ?? await keys.userToken(admin), body });

sqlTest(
  "send-admin-message: e-mail and in-app to each user, per-recipient results, unknown ids apart",
  async () => {
    double.reset();
    const users = await Promise.all([1, 2, 3].map(() => createUser(db.pool)));
    await setPreference(db.pool, users[2]!.id, "messages", { email: false, inApp: true });
    const stranger = crypto.randomUUID();
    const res = await send({
      userIds: [...users.map((u) => u.id), stranger, users[0]!.id],
      subject: "Maintenance tonight",
      message: "We will be down from 22:00.\n\nThanks for your patience <3",
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body.unknownUserIds, [stranger]);
    assert.equal(res.body.results.length, 3);
    const byUser = new Map(res.body.results.map((r) => [r.userId, r]));
    assert.equal(byUser.get(users[0]!.id)?.email?.status, "sent");
    assert.equal(byUser.get(users[2]!.id)?.email?.status, "suppressed");
    assert.equal(byUser.get(users[2]!.id)?.inApp, "created");
    assert.equal(double.sent.length, 2);
    assert.match(double.sentTo(users[0]!.email)[0]?.html ?? "", /patience &lt;3/);
    for (const user of users) assert.equal((await notificationsOf(db.pool, user.id)).length, 1);

    const repeat = await send({
      userIds: users.map((u) => u.id),
      subject: "Maintenance tonight",
      message: "We will be down from 22:00.\n\nThanks for your patience <3",
    });
    assert.ok(repeat.body.results.every((r) => r.inApp === "duplicate"));
    assert.equal(double.sent.length, 2, "a retried call sends nothing twice");
  },
);

sqlTest("send-admin-message: 1..500 recipients, admins only", async () => {
  double.reset();
  const user = await createUser(db.pool);
  const body = { userIds: [user.id], subject: "Hi", message: "Hello" };
  assert.equal((await send({ ...body, userIds: [] })).status, 400);
  assert.equal(
    (await send({ ...body, userIds: Array.from({ length: 501 }, () => crypto.randomUUID()) }))
      .status,
    400,
  );
  assert.equal((await send(body, await keys.userToken(user))).status, 403);
  assert.equal((await send(body, keys.serviceKey)).status, 403);
  assert.equal((await invoke(handler, runtime, { body })).status, 401);
  assert.equal(double.sent.length, 0);
  assert.equal((await notificationsOf(db.pool, user.id)).length, 0);
});
