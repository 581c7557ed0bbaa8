import assert from "node:assert/strict";
import handler from "../../supabase/functions/send-new-user-notification/handler.ts";
import { sqlTest } from "../support/db.ts";
import {
  emailLogs,
  makeEmailsDue,
  notificationsOf,
  notificationsSetup,
} from "../support/notifications.ts";
import { invoke } from "../support/runtime.ts";
import { createUser } from "../support/sql.ts";

const { db, double, runtime, captureRuntime, keys } = await notificationsSetup();
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

/** The answer of a start with no body: the queue drain's job answer. */
interface DrainAnswer {
  job: string;
  runId: string;
  skipped?: true;
  changed: number;
  failed: number;
  counts: Record<string, number>;
  items?: Record<string, string[]>;
  failures: Array<{ item: string; code: string }>;
  error?: { code: string; details?: { failures: Array<{ item: string }> } };
}

/** A start as pg_cron and the local scheduler make it: the scheduler token, no body. */
const drain = (token = keys.schedulerToken, rt = runtime) =>
  invoke<DrainAnswer>(handler, rt, { token });

/** The user's row in the welcome queue (null: none). */
async function queued(userId: string) {
  const { rows } = await db.pool.query<
    { status: string; attempts: number; last_error: string | null; welcomed_at: Date | null }
  >(
    "select status, attempts, last_error, welcomed_at from public.new_user_welcomes where user_id = $1",
    [userId],
  );
  return rows[0] ?? null;
}

/** The "New user" notices about `userId` that `adminId` has. */
async function newUserNotices(adminId: string, userId: string) {
  return (await notificationsOf(db.pool, adminId)).filter((n) =>
    n.dedupe_key === `new_user:${userId}`
  );
}

/** Welcomes whatever earlier tests left in the queue, then forgets the double's messages. */
async function drainBacklog(): Promise<void> {
  const res = await drain();
  assert.equal(res.status, 200, JSON.stringify(res.body));
  double.reset();
}

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

sqlTest(
  "send-new-user-notification: the schedule's start (no body) welcomes a new user of auth.users once, with no call naming them",
  async () => {
    await drainBacklog();
    const user = await createUser(db.pool);
    assert.equal((await queued(user.id))?.status, "pending", "the insert queued the welcome");

    const res = await drain();
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.job, "send-new-user-notification");
    assert.deepEqual(res.body.items?.welcomed, [user.id]);
    assert.equal(res.body.counts.emails, 1);
    assert.equal(res.body.counts.admin_notices, admins.length);
    assert.equal(double.sentTo(user.email).length, 1);
    assert.equal(double.sentTo(user.email)[0]!.subject, "Welcome to the marketplace");
    assert.equal(double.sent.length, 1, "admins get in-app notices, not e-mail");
    assert.equal((await notificationsOf(db.pool, user.id)).length, 1);
    for (const admin of admins) assert.equal((await newUserNotices(admin.id, user.id)).length, 1);
    const row = await queued(user.id);
    assert.equal(row?.status, "welcomed");
    assert.ok(row?.welcomed_at instanceof Date);

    const again = await drain();
    assert.equal(again.status, 200);
    assert.equal(again.body.changed, 0);
    assert.equal(double.sent.length, 1, "a second run sends nothing");
    assert.equal((await notificationsOf(db.pool, user.id)).length, 1);
    for (const admin of admins) assert.equal((await newUserNotices(admin.id, user.id)).length, 1);
  },
);

sqlTest(
  "send-new-user-notification: six starts at once, with calls naming the user among them, welcome once",
  async () => {
    await drainBacklog();
    const user = await createUser(db.pool);
    const [drains, calls] = await Promise.all([
      Promise.all(Array.from({ length: 6 }, () => drain())),
      Promise.all([welcome(user.id), welcome(user.id, await keys.userToken(admins[0]!))]),
    ]);
    assert.ok(drains.every((d) => d.status === 200), JSON.stringify(drains.map((d) => d.body)));
    assert.ok(calls.every((c) => c.status === 200), JSON.stringify(calls.map((c) => c.body)));
    const welcomedBy = drains.filter((d) => d.body.items?.welcomed?.includes(user.id)).length +
      calls.filter((c) => c.body.welcomed).length;
    assert.equal(welcomedBy, 1, "exactly one start or call wrote the welcome");
    assert.equal(double.sentTo(user.email).length, 1);
    assert.equal(
      (await emailLogs(db.pool, "welcome")).filter((r) => r.user_id === user.id).length,
      1,
    );
    assert.equal((await notificationsOf(db.pool, user.id)).length, 1);
    for (const admin of admins) assert.equal((await newUserNotices(admin.id, user.id)).length, 1);
    assert.equal((await queued(user.id))?.status, "welcomed");
  },
);

sqlTest(
  "send-new-user-notification: a sign-up not yet committed when a run starts, or held by another run, is welcomed by the next run",
  async () => {
    await drainBacklog();
    const email = `late-${crypto.randomUUID().slice(0, 8)}@example.test`;
    const signUp = await db.pool.connect();
    try {
      await signUp.query("begin");
      const { rows } = await signUp.query<{ id: string }>(
        "insert into auth.users (email) values ($1) returning id",
        [email],
      );
      const id = rows[0]!.id;
      const during = await drain();
      assert.equal(during.status, 200);
      assert.ok(!during.body.items?.welcomed?.includes(id));
      await signUp.query("commit");
      assert.equal(double.sentTo(email).length, 0);

      // Another run holds the row: this one skips it instead of waiting.
      await signUp.query("begin");
      await signUp.query(
        "select 1 from public.new_user_welcomes where user_id = $1 for update",
        [id],
      );
      const held = await Promise.race([
        drain(),
        new Promise<"waited">((resolve) => setTimeout(() => resolve("waited"), 10_000)),
      ]);
      assert.notEqual(held, "waited", "a run does not wait for a row another run holds");
      if (held !== "waited") {
        assert.equal(held.status, 200);
        assert.ok(!held.body.items?.welcomed?.includes(id));
      }
      await signUp.query("rollback");
      assert.equal(double.sentTo(email).length, 0);

      const next = await drain();
      assert.equal(next.status, 200);
      assert.deepEqual(next.body.items?.welcomed, [id]);
      assert.equal(double.sentTo(email).length, 1);
    } finally {
      await signUp.query("rollback").catch(() => {});
      signUp.release();
    }
  },
);

sqlTest(
  "send-new-user-notification: a call naming a user the queue welcomed sends nothing more, and the queue skips a user a call welcomed",
  async () => {
    await drainBacklog();
    const byQueue = await createUser(db.pool);
    assert.deepEqual((await drain()).body.items?.welcomed, [byQueue.id]);
    const call = await welcome(byQueue.id);
    assert.equal(call.status, 200);
    assert.equal(call.body.welcomed, false);
    assert.equal(double.sentTo(byQueue.email).length, 1);

    const byCall = await createUser(db.pool);
    const first = await welcome(byCall.id);
    assert.equal(first.body.welcomed, true);
    assert.equal((await queued(byCall.id))?.status, "welcomed", "the call marks the queue row");
    const run = await drain();
    assert.equal(run.status, 200);
    assert.equal(run.body.changed, 0);
    assert.equal(double.sentTo(byCall.email).length, 1);
    for (const admin of admins) {
      assert.equal((await newUserNotices(admin.id, byQueue.id)).length, 1);
      assert.equal((await newUserNotices(admin.id, byCall.id)).length, 1);
    }
  },
);

sqlTest(
  "send-new-user-notification: the scheduler token and the local anon key start the drain but may not name a user; users may do neither",
  async () => {
    await drainBacklog();
    const user = await createUser(db.pool);
    const named = await welcome(user.id, keys.schedulerToken);
    assert.equal(named.status, 403);
    assert.equal(named.body.error?.code, "forbidden");
    const localAnon = await invoke<Answer>(handler, captureRuntime, {
      token: keys.anonKey,
      body: { userId: user.id },
    });
    assert.equal(localAnon.status, 403);
    assert.equal((await drain(await keys.userToken(user))).status, 403);
    assert.equal((await drain(keys.anonKey)).status, 403, "the anon key only with LOCAL_DEV=true");
    assert.equal(double.sent.length, 0);
    assert.equal((await queued(user.id))?.status, "pending");

    const local = await drain(keys.anonKey, captureRuntime);
    assert.equal(local.status, 200, JSON.stringify(local.body));
    assert.deepEqual(local.body.items?.welcomed, [user.id]);
    const [captured] = (await emailLogs(db.pool, "welcome")).filter((r) => r.user_id === user.id);
    assert.equal(captured?.send_status, "captured");
  },
);

sqlTest(
  "send-new-user-notification: a welcome that cannot be written fails alone, stays queued, and after 5 attempts is failed",
  async () => {
    await drainBacklog();
    const broken = await createUser(db.pool);
    const fine = await createUser(db.pool);
    // A real failure inside the welcome's transaction: the in-app notice of
    // this one user is refused by the database.
    await db.pool.query(
      `create function public.test_refuse_notice() returns trigger
       language plpgsql set search_path = '' as $$
       begin
         raise exception 'notices to % are refused by this test', new.user_id;
       end $$`,
    );
    await db.pool.query(
      `create trigger test_refuse_notice before insert on public.notifications
       for each row when (new.user_id = '${broken.id}'::uuid)
       execute function public.test_refuse_notice()`,
    );
    try {
      const res = await drain();
      assert.equal(res.status, 500);
      assert.equal(res.body.error?.code, "partial_failure");
      assert.deepEqual(
        res.body.error?.details?.failures.map((f) => f.item),
        [`new_user_welcomes:${broken.id}`],
      );
      assert.equal(double.sentTo(fine.email).length, 1, "the other user of the batch is welcomed");
      assert.equal(double.sentTo(broken.email).length, 0);
      for (const admin of admins) {
        assert.equal((await newUserNotices(admin.id, broken.id)).length, 0, "nothing half-written");
      }
      const row = await queued(broken.id);
      assert.equal(row?.status, "pending");
      assert.equal(row?.attempts, 1);
      assert.match(row?.last_error ?? "", /refused by this test/);

      for (let attempt = 2; attempt <= 5; attempt++) assert.equal((await drain()).status, 500);
      assert.equal((await queued(broken.id))?.status, "failed");
      assert.equal((await drain()).status, 200, "a failed row is not tried again");
    } finally {
      await db.pool.query("drop trigger test_refuse_notice on public.notifications");
      await db.pool.query("drop function public.test_refuse_notice()");
    }
    // An operator resets it once the cause is fixed.
    await db.pool.query(
      "update public.new_user_welcomes set status = 'pending', attempts = 0 where user_id = $1",
      [broken.id],
    );
    assert.deepEqual((await drain()).body.items?.welcomed, [broken.id]);
    assert.equal(double.sentTo(broken.email).length, 1);
  },
);

sqlTest(
  "send-new-user-notification: a welcome e-mail that failed to go out is sent by a later run once its backoff has passed",
  async () => {
    await drainBacklog();
    const user = await createUser(db.pool);
    double.failNext({ path: "/emails", status: 500 });
    const first = await drain();
    assert.equal(first.status, 200, "an e-mail that failed is not a failed item");
    assert.equal(first.body.counts.emails_failed, 1);
    assert.equal(double.sentTo(user.email).length, 0);
    const [failed] = (await emailLogs(db.pool, "welcome")).filter((r) => r.user_id === user.id);
    assert.equal(failed?.send_status, "failed");

    const early = await drain();
    assert.equal(early.body.counts.emails_retried ?? 0, 0, "not before the backoff");
    await makeEmailsDue(db.pool);
    const later = await drain();
    assert.equal(later.status, 200);
    assert.equal(later.body.counts.emails_retried, 1);
    assert.equal(double.sentTo(user.email).length, 1);
    assert.equal((await drain()).body.counts.emails_retried ?? 0, 0);
    assert.equal(double.sentTo(user.email).length, 1);
  },
);
