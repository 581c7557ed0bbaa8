import assert from "node:assert/strict";
import handler from "../../supabase/functions/send-sponsored-notifications/handler.ts";
import { createListing, type TestListing } from "../db/core_fixtures.ts";
import { sqlTest } from "../support/db.ts";
import {
  assertOneRanOneSkipped,
  type JobAnswerBody,
  twoStartsWhileLocked,
} from "../support/jobs.ts";
import {
  emailLogs,
  notificationsOf,
  notificationsSetup,
  setPreference,
} from "../support/notifications.ts";
import { invoke } from "../support/runtime.ts";
import { createUser, type TestUser } from "../support/sql.ts";

interface NoticeRun extends JobAnswerBody {
  scanned: number;
  changed: number;
  failed: number;
  counts: Record<string, number>;
  items?: Record<string, string[]>;
  failures: Array<{ item: string; code: string }>;
}

const { db, double, runtime, keys } = await notificationsSetup();

async function run(token: string | undefined = keys.schedulerToken) {
  return await invoke<NoticeRun>(handler, runtime, { token });
}

/**
 * An active placement of a new approved listing of `seller`, from
 * `fromMinutes` to `toMinutes` after now (activated by the real apply).
 */
async function activePlacement(
  seller: TestUser,
  fromMinutes: number,
  toMinutes: number,
): Promise<{ id: string; listing: TestListing }> {
  const listing = await createListing(db.pool, seller.id, "approved");
  const { rows } = await db.pool.query<{ id: string }>(
    `insert into public.sponsored_listings (listing_id, starts_at, ends_at)
     values ($1, now() + make_interval(mins => $2), now() + make_interval(mins => $3))
     returning id`,
    [listing.id, fromMinutes, toMinutes],
  );
  await db.pool.query("select public.apply_sponsored_changes()");
  return { id: rows[0]!.id, listing };
}

/** Marks the started notice of placement `id` as sent earlier. */
async function toldStarted(id: string): Promise<void> {
  await db.pool.query(
    "update public.sponsored_listings set started_notified_at = now() where id = $1",
    [id],
  );
}

async function stamps(id: string) {
  const { rows } = await db.pool.query<
    { started_notified_at: Date | null; ending_notified_at: Date | null }
  >(
    "select started_notified_at, ending_notified_at from public.sponsored_listings where id = $1",
    [id],
  );
  return rows[0]!;
}

async function sponsoredNotices(userId: string) {
  return (await notificationsOf(db.pool, userId)).filter((n) => n.type === "sponsored");
}

async function sponsoredMails(userId: string) {
  return (await emailLogs(db.pool)).filter((m) =>
    m.user_id === userId && m.email_type.startsWith("sponsored_")
  );
}

const seller = await createUser(db.pool);
const started = await activePlacement(seller, -10, 3 * 24 * 60);
const ending = await activePlacement(seller, -10, 6 * 60);
await toldStarted(ending.id);
const later = await createListing(db.pool, seller.id, "approved");
await db.pool.query(
  `insert into public.sponsored_listings (listing_id, starts_at, ends_at)
   values ($1, now() + interval '1 day', now() + interval '2 days')`,
  [later.id],
);

sqlTest(
  "send-sponsored-notifications: tells the seller a placement started, and that one ends soon",
  async () => {
    double.reset();
    const res = await run();
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.job, "send-sponsored-notifications");
    assert.equal(res.body.changed, 2);
    assert.equal(res.body.failed, 0);
    assert.deepEqual(res.body.items, { started: [started.id], ending: [ending.id] });
    assert.deepEqual(res.body.counts, { started: 1, ending: 1, in_app: 2, emails: 2 });

    const notices = await sponsoredNotices(seller.id);
    assert.deepEqual(notices.map((n) => n.dedupe_key).sort(), [
      `sponsored:ending:${ending.id}`,
      `sponsored:started:${started.id}`,
    ]);
    const startNotice = notices.find((n) => n.dedupe_key?.startsWith("sponsored:started"))!;
    assert.equal(startNotice.link, `/listings/${started.listing.id}`);
    assert.match(startNotice.body, new RegExp(started.listing.title));
    assert.equal(startNotice.data.placementId, started.id);

    const mails = await sponsoredMails(seller.id);
    assert.deepEqual(mails.map((m) => [m.email_type, m.send_status]).sort(), [
      ["sponsored_ending", "sent"],
      ["sponsored_started", "sent"],
    ]);
    const sent = double.sentTo(seller.email);
    assert.equal(sent.length, 2);
    const startMail = sent.find((m) => m.subject.includes("is now sponsored"));
    assert.ok(startMail?.html?.includes(started.listing.title));
    assert.ok(
      startMail?.html?.includes(`http://localhost:5173/listings/${started.listing.id}`),
    );
    const endMail = sent.find((m) => m.subject.includes("ends soon"));
    assert.ok(endMail?.html?.includes(ending.listing.title));

    assert.ok((await stamps(started.id)).started_notified_at);
    assert.equal((await stamps(started.id)).ending_notified_at, null, "ends in three days");
    assert.ok((await stamps(ending.id)).ending_notified_at);
  },
);

sqlTest("send-sponsored-notifications: a rerun sends nothing", async () => {
  double.reset();
  const before = (await notificationsOf(db.pool, seller.id)).length;
  const res = await run();
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body.scanned, 0);
  assert.equal(res.body.changed, 0);
  assert.deepEqual(res.body.counts, {});
  assert.equal(double.sent.length, 0);
  assert.equal((await notificationsOf(db.pool, seller.id)).length, before);
});

sqlTest(
  "send-sponsored-notifications: a placement shorter than a day gets both notices, once each",
  async () => {
    double.reset();
    const short = await activePlacement(seller, -10, 60);
    const res = await run();
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body.items, { started: [short.id], ending: [short.id] });
    assert.equal(double.sentTo(seller.email).length, 2);
    assert.equal((await run()).body.changed, 0);
    assert.equal(double.sentTo(seller.email).length, 2);
  },
);

sqlTest(
  "send-sponsored-notifications: a seller who switched them off is not told, now or later",
  async () => {
    double.reset();
    const quiet = await createUser(db.pool);
    await setPreference(db.pool, quiet.id, "sponsored", { email: false, inApp: false });
    const placement = await activePlacement(quiet, -10, 3 * 24 * 60);
    const res = await run();
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body.items, { started: [placement.id] });
    assert.deepEqual(res.body.counts, {
      started: 1,
      in_app_suppressed: 1,
      emails_suppressed: 1,
    });
    assert.deepEqual(await sponsoredNotices(quiet.id), []);
    assert.deepEqual((await sponsoredMails(quiet.id)).map((m) => m.send_status), ["suppressed"]);
    assert.equal(double.sent.length, 0);
    assert.ok((await stamps(placement.id)).started_notified_at);

    await setPreference(db.pool, quiet.id, "sponsored", { email: true, inApp: true });
    assert.equal((await run()).body.changed, 0);
    assert.equal(double.sent.length, 0);
  },
);

sqlTest(
  "send-sponsored-notifications: a failed delivery is left to the e-mail retry job",
  async () => {
    double.reset();
    const unlucky = await createUser(db.pool);
    const placement = await activePlacement(unlucky, -10, 3 * 24 * 60);
    double.failNext({ method: "POST", path: "/emails", status: 500 });
    const res = await run();
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.failed, 0);
    assert.deepEqual(res.body.items, { started: [placement.id] });
    assert.equal(res.body.counts.emails_failed, 1);
    const [mail, ...more] = await sponsoredMails(unlucky.id);
    assert.equal(more.length, 0);
    assert.equal(mail?.send_status, "failed");
    assert.ok(mail?.next_attempt_at, "due again for the retry job");
    assert.equal((await sponsoredNotices(unlucky.id)).length, 1, "the in-app notice stands");

    const rerun = await run();
    assert.equal(rerun.body.changed, 0);
    assert.equal((await sponsoredMails(unlucky.id)).length, 1);
    assert.equal(double.sentTo(unlucky.email).length, 0);
  },
);

sqlTest(
  "send-sponsored-notifications: a notice that cannot be written fails its item and is retried",
  async () => {
    double.reset();
    const broken = await createUser(db.pool);
    const fine = await createUser(db.pool);
    const bad = await activePlacement(broken, -10, 3 * 24 * 60);
    const good = await activePlacement(fine, -10, 3 * 24 * 60);
    // An address the e-mail log refuses (its format check), so this notice fails.
    await db.pool.query("update public.profiles set email = 'not an address' where id = $1", [
      broken.id,
    ]);
    const res = await run();
    assert.equal(res.status, 500, JSON.stringify(res.body));
    const body = res.body as { error?: { code: string; details?: NoticeRun } };
    assert.equal(body.error?.code, "partial_failure");
    assert.equal(body.error?.details?.failed, 1);
    assert.deepEqual(body.error?.details?.failures.map((f) => f.item), [`started:${bad.id}`]);
    assert.deepEqual(body.error?.details?.items, { started: [good.id] });
    assert.equal((await stamps(bad.id)).started_notified_at, null, "its savepoint rolled back");
    assert.deepEqual(await sponsoredNotices(broken.id), []);
    assert.equal(double.sentTo(fine.email).length, 1);

    await db.pool.query("update public.profiles set email = $2 where id = $1", [
      broken.id,
      broken.email,
    ]);
    const retry = await run();
    assert.equal(retry.status, 200, JSON.stringify(retry.body));
    assert.deepEqual(retry.body.items, { started: [bad.id] });
    assert.equal(double.sentTo(broken.email).length, 1);
    assert.equal(double.sentTo(fine.email).length, 1);
  },
);

sqlTest(
  "send-sponsored-notifications: two runs at once: one runs, one is skipped; one notice each",
  async () => {
    double.reset();
    const busy = await createUser(db.pool);
    const placement = await activePlacement(busy, -10, 3 * 24 * 60);
    // Hold the run at its first in-app insert, so the second start finds it running.
    const answers = await twoStartsWhileLocked(db.pool, "public.notifications", run);
    assertOneRanOneSkipped(answers);
    const ran = answers.find((a) => a.body.skipped !== true)!;
    assert.deepEqual(ran.body.items, { started: [placement.id] });
    assert.equal((await sponsoredNotices(busy.id)).length, 1);
    assert.equal(double.sentTo(busy.email).length, 1);
  },
);

sqlTest("send-sponsored-notifications: who may start it", async () => {
  const user = await createUser(db.pool);
  const admin = await createUser(db.pool, { admin: true });
  const runs = async () =>
    (await db.pool.query("select count(*)::int as n from public.job_runs")).rows[0]!.n;
  const before = await runs();
  assert.equal((await invoke(handler, runtime, {})).status, 401);
  for (
    const [who, token] of [["a user", await keys.userToken(user)], [
      "the anon key",
      keys.anonKey,
    ]] as const
  ) {
    const res = await run(token);
    assert.equal(res.status, 403, who);
    assert.equal(res.body.error?.code, "forbidden", who);
  }
  assert.equal(await runs(), before, "refused starts write no run");
  for (const token of [keys.schedulerToken, keys.serviceKey, await keys.userToken(admin)]) {
    assert.equal((await run(token)).status, 200);
  }
});
