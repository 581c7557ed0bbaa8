import assert from "node:assert/strict";
import handler from "../../supabase/functions/run-price-alerts/handler.ts";
import { Context } from "../../supabase/functions/_shared/platform/context.ts";
import { runEmailRetry } from "../../supabase/functions/_shared/email/retry.ts";
import { PRICE_ALERT_USERS_PER_RUN } from "../../supabase/functions/_shared/price_alerts/deliver.ts";
import { PRICE_ALERTS_JOB } from "../../supabase/functions/_shared/price_alerts/scan.ts";
import { createListing, setSubscription, type TestListing } from "../db/core_fixtures.ts";
import { sqlTest } from "../support/db.ts";
import { assertOneRanOneSkipped, type JobAnswerBody } from "../support/jobs.ts";
import {
  emailLogs,
  makeEmailsDue,
  notificationsOf,
  notificationsSetup,
  setPreference,
} from "../support/notifications.ts";
import { invoke } from "../support/runtime.ts";
import { createUser, type TestUser } from "../support/sql.ts";
import { accessRequest, makeConfidential } from "../support/listing_access.ts";

interface AlertsRun extends JobAnswerBody {
  scanned: number;
  changed: number;
  failed: number;
  counts: Record<string, number>;
  failures: Array<{ item: string; code: string }>;
}

interface EventRow {
  id: string;
  channel: string;
  price: string;
  status: string;
  error_message: string | null;
  email_log_id: string | null;
  notification_id: string | null;
  delivered: boolean;
}

const { db, double, runtime, captureRuntime, keys } = await notificationsSetup();
const seller = await createUser(db.pool);

async function run(token: string | undefined = keys.schedulerToken, rt = runtime) {
  return await invoke<AlertsRun>(handler, rt, { token });
}

/** Runs the job and asserts it answered a finished run. */
async function ranOk(): Promise<AlertsRun> {
  const res = await run();
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.notEqual(res.body.skipped, true);
  return res.body;
}

/** An approved listing of `category` at `price` (USD), changed now. */
async function listingAt(price: string, category: string, title?: string): Promise<TestListing> {
  const listing = await createListing(db.pool, seller.id, "approved");
  await db.pool.query(
    `update public.listings set asking_price = $2, category = $3, title = coalesce($4, title)
     where id = $1`,
    [listing.id, price, category, title ?? null],
  );
  return { ...listing, asking_price: price, title: title ?? listing.title };
}

/** A listing alert of `user` (saved two hours ago, as the service connection). */
async function watch(
  user: TestUser,
  listingId: string,
  target: string,
  channels = ["email", "in_app"],
): Promise<string> {
  const { rows } = await db.pool.query<{ id: string }>(
    `insert into public.price_alerts (user_id, listing_id, target_price, channels, created_at)
     values ($1, $2, $3, $4, now() - interval '2 hours') returning id`,
    [user.id, listingId, target, channels],
  );
  return rows[0]!.id;
}

/** A saved search of `user` (saved two hours ago). */
async function search(
  user: TestUser,
  category: string,
  maxPrice: string,
  channels = ["email", "in_app"],
): Promise<string> {
  const { rows } = await db.pool.query<{ id: string }>(
    `insert into public.price_alerts (user_id, category, max_price, currency, channels, created_at)
     values ($1, $2, $3, 'USD', $4, now() - interval '2 hours') returning id`,
    [user.id, category, maxPrice, channels],
  );
  return rows[0]!.id;
}

async function eventsOf(alertId: string): Promise<EventRow[]> {
  const { rows } = await db.pool.query<EventRow>(
    `select id, channel, price::text as price, status, error_message, email_log_id,
            notification_id, delivered_at is not null as delivered
     from public.price_alert_events where alert_id = $1 order by created_at, channel`,
    [alertId],
  );
  return rows;
}

async function alertNotices(userId: string) {
  return (await notificationsOf(db.pool, userId)).filter((n) => n.type === "price_alerts");
}

async function alertMails(userId: string) {
  return (await emailLogs(db.pool, "price_alert")).filter((m) => m.user_id === userId);
}

async function lastRunRow() {
  const { rows } = await db.pool.query<{
    job_run_id: string;
    status: string;
    alerts_scanned: number;
    matches: number;
    events_created: number;
    delivered: number;
    failed: number;
    suppressed: number;
    users_notified: number;
    pending_left: number;
    duration_ms: number;
    finished: boolean;
  }>(
    `select job_run_id, status, alerts_scanned, matches, events_created, delivered, failed,
            suppressed, users_notified, pending_left, duration_ms, finished_at is not null as finished
     from public.price_alert_runs order by started_at desc limit 1`,
  );
  return rows[0];
}

async function rowCounts(): Promise<string> {
  const { rows } = await db.pool.query<{ counts: string }>(
    `select concat_ws(',',
       (select count(*) from public.job_runs where job_name = $1),
       (select count(*) from public.price_alert_runs),
       (select count(*) from public.price_alert_events),
       (select count(*) from public.notifications),
       (select count(*) from public.email_logs)) as counts`,
    [PRICE_ALERTS_JOB],
  );
  return rows[0]!.counts;
}

const alice = await createUser(db.pool);

sqlTest(
  "run-price-alerts: tells a user once about every match, by e-mail and in the app",
  async () => {
    double.reset();
    const cheap = await listingAt("1000.00", "first", "Cheap SaaS");
    const found = await listingAt("250.50", "first", "Found Blog");
    const dear = await listingAt("9000.00", "first", "Dear Shop");
    const watching = await watch(alice, cheap.id, "1200");
    const watchingDear = await watch(alice, dear.id, "8000");
    const searching = await search(alice, "First", "500");

    const body = await ranOk();
    assert.equal(body.changed, 4, "two matches, two channels each");
    assert.equal(body.failed, 0);
    assert.ok(body.scanned >= 3);
    assert.deepEqual(body.counts, {
      matches: 2,
      events_created: 4,
      delivered: 4,
      failed: 0,
      suppressed: 0,
      users_notified: 1,
      pending_left: 0,
    });

    const [notice, ...moreNotices] = await alertNotices(alice.id);
    assert.equal(moreNotices.length, 0, "one notice for both matches");
    assert.equal(notice?.title, "2 listings match your price alerts");
    assert.equal(notice?.link, "/price-alerts");
    assert.deepEqual(
      notice?.data.listingIds,
      [found.id, cheap.id],
      "found together: cheapest first",
    );
    assert.match(notice?.body ?? "", /"Found Blog" at \$250\.50 and "Cheap SaaS" at \$1,000\.00/);

    const [mail, ...moreMails] = double.sentTo(alice.email);
    assert.equal(moreMails.length, 0);
    assert.equal(mail?.subject, "2 listings match your price alerts");
    for (const listing of [cheap, found]) {
      assert.ok(mail?.html?.includes(`http://localhost:5173/listings/${listing.id}`));
      assert.ok(mail?.text?.includes(listing.title));
    }
    assert.ok(mail?.text?.includes("$1,000.00 · at or below your target of $1,200.00"));
    assert.ok(mail?.text?.includes("$250.50 · your search in First, up to $500.00"));
    assert.ok(!mail?.text?.includes(dear.title), "above its target");
    const [logged] = await alertMails(alice.id);
    assert.equal(logged?.send_status, "sent");

    for (const alert of [watching, searching]) {
      const events = await eventsOf(alert);
      assert.deepEqual(events.map((e) => [e.channel, e.status, e.delivered]), [
        ["email", "sent", true],
        ["in_app", "sent", true],
      ]);
      assert.equal(events[0]?.email_log_id, logged?.id);
      assert.equal(events[1]?.notification_id, notice?.id);
    }
    assert.equal((await eventsOf(watchingDear)).length, 0);

    const runRow = await lastRunRow();
    assert.equal(runRow?.job_run_id, body.runId);
    assert.equal(runRow?.status, "succeeded");
    assert.ok(runRow?.finished && runRow.duration_ms >= 0);
    assert.deepEqual(
      [runRow?.matches, runRow?.events_created, runRow?.delivered, runRow?.users_notified],
      [2, 4, 4, 1],
    );
    assert.equal(runRow?.alerts_scanned, body.scanned);
  },
);

sqlTest(
  "run-price-alerts: a rerun tells nothing; a further drop in price is told again",
  async () => {
    double.reset();
    const before = await alertNotices(alice.id);
    const rerun = await ranOk();
    assert.equal(rerun.changed, 0);
    assert.equal(rerun.counts.events_created, 0);
    assert.equal(rerun.counts.delivered, 0);
    // Both still match (the search's listing changed within the overlap of
    // the last run's start); the unique key keeps them from being told twice.
    assert.equal(rerun.counts.matches, 2);
    assert.equal(double.sent.length, 0);
    assert.equal((await alertNotices(alice.id)).length, before.length);

    const listing = await listingAt("3000.00", "drop", "Dropping Tool");
    const alert = await watch(alice, listing.id, "2500");
    assert.equal((await ranOk()).changed, 0, "not at the target yet");
    await db.pool.query("update public.listings set asking_price = 2400 where id = $1", [
      listing.id,
    ]);
    assert.equal((await ranOk()).changed, 2);
    await db.pool.query("update public.listings set asking_price = 2000 where id = $1", [
      listing.id,
    ]);
    const dropped = await ranOk();
    assert.equal(dropped.changed, 2);
    assert.equal(dropped.counts.users_notified, 1);
    const notices = await alertNotices(alice.id);
    assert.equal(notices.length, before.length + 2);
    assert.equal(notices.at(-1)?.title, '"Dropping Tool" is now $2,000.00');
    assert.equal(notices.at(-1)?.link, `/listings/${listing.id}`);
    assert.deepEqual(
      (await eventsOf(alert)).map((e) => [e.price, e.status]),
      [["2400.00", "sent"], ["2400.00", "sent"], ["2000.00", "sent"], ["2000.00", "sent"]],
    );
    assert.equal(double.sentTo(alice.email).length, 2);
  },
);

sqlTest(
  "run-price-alerts: the alert's channels and the user's preferences both apply",
  async () => {
    double.reset();
    const listing = await listingAt("100.00", "channels");
    const inAppOnly = await createUser(db.pool);
    const emailOnly = await createUser(db.pool);
    const nothing = await createUser(db.pool);
    const noMail = await createUser(db.pool);
    await setPreference(db.pool, nothing.id, "price_alerts", { email: false, inApp: false });
    await setPreference(db.pool, noMail.id, "price_alerts", { email: false, inApp: true });
    const alerts = {
      inAppOnly: await watch(inAppOnly, listing.id, "100", ["in_app"]),
      emailOnly: await watch(emailOnly, listing.id, "100", ["email"]),
      nothing: await watch(nothing, listing.id, "100"),
      noMail: await watch(noMail, listing.id, "100"),
    };
    const body = await ranOk();
    assert.equal(body.counts.events_created, 6);
    assert.equal(body.counts.delivered, 3);
    assert.equal(body.counts.suppressed, 3);

    assert.deepEqual((await eventsOf(alerts.inAppOnly)).map((e) => [e.channel, e.status]), [
      ["in_app", "sent"],
    ]);
    assert.equal((await alertNotices(inAppOnly.id)).length, 1);
    assert.equal((await alertMails(inAppOnly.id)).length, 0, "no e-mail asked for");

    assert.deepEqual((await eventsOf(alerts.emailOnly)).map((e) => [e.channel, e.status]), [
      ["email", "sent"],
    ]);
    assert.equal((await alertNotices(emailOnly.id)).length, 0, "no in-app notice asked for");
    assert.equal(double.sentTo(emailOnly.email).length, 1);

    const blocked = await eventsOf(alerts.nothing);
    assert.deepEqual(blocked.map((e) => [e.channel, e.status]), [
      ["email", "suppressed"],
      ["in_app", "suppressed"],
    ]);
    assert.match(blocked[0]?.error_message ?? "", /price_alerts/);
    assert.match(blocked[1]?.error_message ?? "", /in-app/);
    assert.equal((await alertNotices(nothing.id)).length, 0);
    assert.deepEqual((await alertMails(nothing.id)).map((m) => m.send_status), ["suppressed"]);
    assert.equal(double.sentTo(nothing.email).length, 0);

    assert.deepEqual((await eventsOf(alerts.noMail)).map((e) => [e.channel, e.status]), [
      ["email", "suppressed"],
      ["in_app", "sent"],
    ]);
    assert.equal(double.sentTo(noMail.email).length, 0);
  },
);

sqlTest(
  "run-price-alerts: a failed e-mail is failed, then sent once the e-mail retry delivers it",
  async () => {
    double.reset();
    const user = await createUser(db.pool);
    const listing = await listingAt("50.00", "retry");
    const alert = await watch(user, listing.id, "60");
    double.failNext({ path: "/emails", status: 500 });
    const first = await ranOk();
    assert.equal(first.failed, 0, "a failed e-mail is retried, not a failed item");
    assert.equal(first.counts.failed, 1);
    assert.equal(first.counts.delivered, 1, "the in-app notice");
    let events = await eventsOf(alert);
    assert.deepEqual(events.map((e) => [e.channel, e.status]), [
      ["email", "failed"],
      ["in_app", "sent"],
    ]);
    assert.match(events[0]?.error_message ?? "", /500/);
    assert.equal((await lastRunRow())?.failed, 1);

    // Nothing changed: the failed event stays failed and is not e-mailed again.
    const idle = await ranOk();
    assert.equal(idle.counts.failed, 0);
    assert.equal(idle.counts.delivered, 0);
    assert.equal(double.sentTo(user.email).length, 0);

    await makeEmailsDue(db.pool);
    const retried = await runEmailRetry(new Context(runtime, crypto.randomUUID(), runtime.log));
    assert.ok(!("skipped" in retried));
    assert.equal(double.sentTo(user.email).length, 1);
    const reconciled = await ranOk();
    assert.equal(reconciled.counts.delivered, 1);
    events = await eventsOf(alert);
    assert.deepEqual(events.map((e) => [e.channel, e.status, e.delivered, e.error_message]), [
      ["email", "sent", true, null],
      ["in_app", "sent", true, null],
    ]);
    assert.equal(double.sentTo(user.email).length, 1, "one e-mail in all");
  },
);

sqlTest(
  "run-price-alerts: a match whose alert was switched off before delivery is not told",
  async () => {
    double.reset();
    const user = await createUser(db.pool);
    const listing = await listingAt("10.00", "stale");
    const alert = await watch(user, listing.id, "10");
    // Matched by an earlier run that could not deliver (e.g. beyond its user cap).
    await db.pool.query("select * from public.match_price_alerts(now())");
    await db.pool.query("update public.price_alerts set active = false where id = $1", [alert]);
    const body = await ranOk();
    assert.equal(body.counts.suppressed, 2);
    assert.equal(body.counts.users_notified, 0);
    const events = await eventsOf(alert);
    assert.deepEqual(events.map((e) => e.status), ["suppressed", "suppressed"]);
    assert.match(events[0]?.error_message ?? "", /switched off/);
    assert.equal((await alertNotices(user.id)).length, 0);
    assert.equal(double.sentTo(user.email).length, 0);
  },
);

sqlTest(
  "run-price-alerts: tells at most 500 users per run; the rest the next run",
  async () => {
    double.reset();
    const listing = await listingAt("5.00", "crowd");
    const count = PRICE_ALERT_USERS_PER_RUN + 1;
    await db.pool.query(
      `with users as (
         insert into auth.users (email)
         select 'crowd-' || g || '@example.test' from generate_series(1, $1::int) g
         returning id
       )
       insert into public.price_alerts (user_id, listing_id, target_price, channels)
       select id, $2, 5, '{in_app}' from users`,
      [count, listing.id],
    );
    const first = await ranOk();
    assert.equal(first.counts.events_created, count);
    assert.equal(first.counts.users_notified, PRICE_ALERT_USERS_PER_RUN);
    assert.equal(first.counts.pending_left, 1);
    assert.equal((await lastRunRow())?.pending_left, 1);
    const second = await ranOk();
    assert.equal(second.counts.events_created, 0);
    assert.equal(second.counts.users_notified, 1);
    assert.equal(second.counts.pending_left, 0);
    const { rows } = await db.pool.query<{ n: number }>(
      `select count(distinct user_id)::integer as n from public.notifications
       where type = 'price_alerts' and data->'listingIds' ? $1`,
      [listing.id],
    );
    assert.equal(rows[0]?.n, count, "each user once");
  },
);

sqlTest(
  "run-price-alerts: a user whose notice cannot be written is a failed item; their events wait",
  async () => {
    double.reset();
    const broken = await createUser(db.pool);
    const fine = await createUser(db.pool);
    const listing = await listingAt("20.00", "broken");
    const brokenAlert = await watch(broken, listing.id, "20");
    await watch(fine, listing.id, "20");
    // An address the e-mail log refuses (its format check), so this user's notice fails.
    await db.pool.query("update public.profiles set email = 'not an address' where id = $1", [
      broken.id,
    ]);
    const res = await run();
    assert.equal(res.status, 500, JSON.stringify(res.body));
    const details = (res.body as { error?: { code: string; details?: AlertsRun } }).error;
    assert.equal(details?.code, "partial_failure");
    assert.equal(details?.details?.failures[0]?.item, `user:${broken.id}`);
    assert.equal(details?.details?.counts.pending_left, 2);
    assert.equal((await lastRunRow())?.status, "partial");
    assert.deepEqual((await eventsOf(brokenAlert)).map((e) => e.status), ["pending", "pending"]);
    assert.equal((await alertNotices(broken.id)).length, 0, "its transaction rolled back");
    assert.equal((await alertNotices(fine.id)).length, 1);

    await db.pool.query("update public.profiles set email = $2 where id = $1", [
      broken.id,
      broken.email,
    ]);
    const next = await ranOk();
    assert.equal(next.counts.users_notified, 1);
    assert.deepEqual((await eventsOf(brokenAlert)).map((e) => e.status), ["sent", "sent"]);
  },
);

sqlTest(
  "run-price-alerts: two runs at once: one runs, one is skipped; one notice each",
  async () => {
    double.reset();
    const users = [await createUser(db.pool), await createUser(db.pool)];
    const listing = await listingAt("30.00", "overlap");
    for (const user of users) await watch(user, listing.id, "30");
    // Hold the run at its price_alert_runs row, so the second start finds it running.
    const holder = await db.pool.connect();
    let answers;
    try {
      await holder.query("begin");
      await holder.query("lock table public.price_alert_runs in exclusive mode");
      let settled = 0;
      const starts = [run(), run()].map((p) => p.finally(() => settled++));
      for (let waited = 0; settled === 0 && waited < 5000; waited += 20) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await holder.query("commit");
      answers = await Promise.all(starts);
    } finally {
      holder.release();
    }
    assertOneRanOneSkipped(answers);
    for (const user of users) {
      assert.equal((await alertNotices(user.id)).length, 1);
      assert.equal(double.sentTo(user.email).length, 1);
    }
    const again = await ranOk();
    assert.equal(again.changed, 0);
  },
);

sqlTest(
  "run-price-alerts: a run that died is recorded failed and does not move the window",
  async () => {
    const { rows: [dead] } = await db.pool.query<{ id: string }>(
      `insert into public.price_alert_runs (since, started_at)
       values (now() - interval '1 day', now() - interval '1 minute') returning id`,
    );
    const { rows: [since] } = await db.pool.query<{ at: Date }>(
      "select public.price_alerts_since() as at",
    );
    await ranOk();
    const { rows } = await db.pool.query<{ status: string; finished: boolean; since: Date }>(
      `select status, finished_at is not null as finished, since
       from public.price_alert_runs where id = $1 or started_at = (
         select max(started_at) from public.price_alert_runs)
       order by started_at`,
      [dead!.id],
    );
    assert.deepEqual(rows.map((r) => [r.status, r.finished]), [
      ["failed", true],
      ["succeeded", true],
    ]);
    assert.equal(rows[1]?.since.getTime(), since!.at.getTime(), "the dead run's start is not used");
  },
);

sqlTest("run-price-alerts: who may start it; refusals write nothing", async () => {
  const user = await createUser(db.pool);
  const admin = await createUser(db.pool, { admin: true });
  const before = await rowCounts();
  const none = await invoke<AlertsRun>(handler, runtime, {});
  assert.equal(none.status, 401);
  const anon = await run(keys.anonKey);
  assert.equal(anon.status, 403, "the anon key only under LOCAL_DEV");
  assert.equal(anon.body.error?.code, "forbidden");
  const plain = await run(await keys.userToken(user));
  assert.equal(plain.status, 403);
  assert.equal(plain.body.error?.code, "forbidden");
  assert.equal(await rowCounts(), before, "refused starts write nothing");

  assert.equal((await run(keys.schedulerToken)).status, 200);
  assert.equal((await run(keys.serviceKey)).status, 200);
  assert.equal((await run(await keys.userToken(admin))).status, 200);
  assert.equal((await run(keys.anonKey, captureRuntime)).status, 200, "LOCAL_DEV=true");
});

/** Runs `fn` with the free plan hiding the asking price, then restores the seeded flag. */
async function withFreeHidingPrice<T>(fn: () => Promise<T>): Promise<T> {
  await db.pool.query(
    "update public.blurred_fields set free = true where field_key = 'asking_price'",
  );
  try {
    return await fn();
  } finally {
    await db.pool.query(
      "update public.blurred_fields set free = false where field_key = 'asking_price'",
    );
  }
}

/** Switches the alerts off, so later runs of this file do not match them. */
async function switchOff(alertIds: string[]): Promise<void> {
  await db.pool.query("update public.price_alerts set active = false where id = any($1::uuid[])", [
    alertIds,
  ]);
}

sqlTest(
  "run-price-alerts: a user whose plan hides the asking price is not told it; a plan that shows it is",
  async () => {
    double.reset();
    const free = await createUser(db.pool);
    const pro = await createUser(db.pool);
    await setSubscription(db.pool, pro.id, "pro");
    const listing = await listingAt("4321.00", "hidden-price", "Quiet Price Shop");
    const alerts = [
      await watch(free, listing.id, "5000"),
      await search(free, "hidden-price", "5000"),
      await watch(pro, listing.id, "5000"),
      await search(pro, "hidden-price", "5000"),
    ];
    try {
      const body = await withFreeHidingPrice(() => ranOk());
      assert.equal(body.counts.events_created, 4, "the pro user's two alerts, two channels each");
      assert.equal(body.counts.users_notified, 1);

      // The free user: no event carries the price, nothing tells it.
      for (const alert of alerts.slice(0, 2)) assert.deepEqual(await eventsOf(alert), []);
      assert.deepEqual(await alertNotices(free.id), []);
      assert.deepEqual(await alertMails(free.id), []);
      assert.equal(double.sentTo(free.email).length, 0);

      // The pro user: told, with the price.
      for (const alert of alerts.slice(2)) {
        assert.deepEqual(
          (await eventsOf(alert)).map((e) => [e.channel, e.price, e.status]),
          [["email", "4321.00", "sent"], ["in_app", "4321.00", "sent"]],
        );
      }
      const [notice] = await alertNotices(pro.id);
      assert.equal(notice?.title, '"Quiet Price Shop" is now $4,321.00');
      assert.ok(double.sentTo(pro.email)[0]?.text?.includes("$4,321.00"));
    } finally {
      await switchOff(alerts);
    }
  },
);

sqlTest(
  "run-price-alerts: a match whose price the user's plan hides by delivery is suppressed, not told",
  async () => {
    double.reset();
    const user = await createUser(db.pool);
    const listing = await listingAt("777.00", "hidden-later", "Later Hidden Tool");
    const alert = await watch(user, listing.id, "800");
    try {
      // Matched while the free plan showed the price (an earlier run that could not deliver).
      await db.pool.query("select * from public.match_price_alerts(now())");
      assert.equal((await eventsOf(alert)).length, 2);
      const body = await withFreeHidingPrice(() => ranOk());
      assert.equal(body.counts.suppressed, 2);
      assert.equal(body.counts.users_notified, 0);
      const events = await eventsOf(alert);
      assert.deepEqual(events.map((e) => [e.channel, e.status]), [
        ["email", "suppressed"],
        ["in_app", "suppressed"],
      ]);
      assert.match(
        events[0]?.error_message ?? "",
        /asking price is hidden from the user \(their plan/,
      );
      assert.deepEqual(await alertNotices(user.id), []);
      assert.deepEqual(await alertMails(user.id), []);
      assert.equal(double.sentTo(user.email).length, 0);
    } finally {
      await switchOff([alert]);
    }
  },
);

sqlTest(
  "run-price-alerts: a match on a listing made confidential by delivery is told only to buyers with approved access",
  async () => {
    double.reset();
    const withAccess = await createUser(db.pool);
    const without = await createUser(db.pool);
    const listing = await listingAt("555.00", "gone-confidential", "Soon Confidential Tool");
    const alerts = [
      await watch(withAccess, listing.id, "600"),
      await watch(without, listing.id, "600"),
    ];
    try {
      // Matched while the listing was open.
      await db.pool.query("select * from public.match_price_alerts(now())");
      await makeConfidential(db.pool, listing.id, ["asking_price", "url"]);
      await accessRequest(db.pool, listing.id, withAccess.id, "approved");
      await accessRequest(db.pool, listing.id, without.id, "pending");
      const body = await ranOk();
      assert.equal(body.counts.suppressed, 2, "both events of the buyer without access");
      assert.deepEqual((await eventsOf(alerts[1]!)).map((e) => e.status), [
        "suppressed",
        "suppressed",
      ]);
      assert.equal(double.sentTo(without.email).length, 0);
      assert.deepEqual(await alertNotices(without.id), []);
      const [told] = double.sentTo(withAccess.email);
      assert.ok(told?.text?.includes("Soon Confidential Tool"), String(told?.text));
    } finally {
      await switchOff(alerts);
    }
  },
);
