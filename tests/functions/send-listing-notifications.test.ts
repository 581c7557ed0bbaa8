import assert from "node:assert/strict";
import handler from "../../supabase/functions/send-listing-notifications/handler.ts";
import {
  CONFIDENTIAL_PRICE,
  HIDDEN_PRICE,
} from "../../supabase/functions/_shared/email/templates/listings_digest.ts";
import { formatMoney } from "../../supabase/functions/_shared/lib/format.ts";
import { createListing, setSubscription } from "../db/core_fixtures.ts";
import { sqlTest } from "../support/db.ts";
import { assertOneRanOneSkipped, type JobAnswerBody } from "../support/jobs.ts";
import {
  emailLogs,
  notificationsOf,
  notificationsSetup,
  setPreference,
} from "../support/notifications.ts";
import { invoke } from "../support/runtime.ts";
import { createUser, type TestUser } from "../support/sql.ts";
import { accessRequest, makeConfidential } from "../support/listing_access.ts";

interface DigestRun extends JobAnswerBody {
  scanned: number;
  changed: number;
  failed: number;
  counts: Record<string, number>;
  failures: Array<{ item: string; code: string }>;
}

const { db, double, runtime, keys } = await notificationsSetup();
const today = new Date().toISOString().slice(0, 10);
const KEY = `new_listings:${today}`;

async function run(token: string | undefined = keys.schedulerToken) {
  return await invoke<DigestRun>(handler, runtime, { token });
}

/** A user who opted in to the digest on `channels` (default: both). */
async function subscriber(channels = { email: true, inApp: true }): Promise<TestUser> {
  const user = await createUser(db.pool);
  await setPreference(db.pool, user.id, "new_listings", channels);
  return user;
}

async function digestNotices(userId: string) {
  return (await notificationsOf(db.pool, userId)).filter((n) => n.type === "new_listings");
}

async function digestMails(userId: string) {
  return (await emailLogs(db.pool, "new_listings_digest")).filter((m) => m.user_id === userId);
}

async function reviewedAgo(listingId: string, days: number): Promise<void> {
  await db.pool.query(
    "update public.listings set reviewed_at = now() - make_interval(days => $2) where id = $1",
    [listingId, days],
  );
}

const seller = await createUser(db.pool);
const alice = await subscriber();
const bob = await subscriber({ email: false, inApp: true });
const carol = await createUser(db.pool); // no preference: the digest is opt-in
const dave = await createUser(db.pool);
await setPreference(db.pool, dave.id, "new_listings", { email: false, inApp: false });
const sam = await subscriber(); // a seller who opted in
const samsListing = await createListing(db.pool, sam.id, "approved");
const fresh = await createListing(db.pool, seller.id, "approved");
const pending = await createListing(db.pool, seller.id, "pending_review");
const older = await createListing(db.pool, seller.id, "approved");
await reviewedAgo(older.id, 2);

sqlTest(
  "send-listing-notifications: opted-in users get the listings approved since, not their own",
  async () => {
    double.reset();
    const res = await run();
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.scanned, 3, "alice, bob and sam opted in");
    assert.equal(res.body.changed, 3);
    assert.equal(res.body.failed, 0);
    assert.deepEqual(res.body.counts, { in_app: 3, emails: 2, emails_suppressed: 1 });

    const [notice, ...more] = await digestNotices(alice.id);
    assert.equal(more.length, 0);
    assert.equal(notice?.dedupe_key, KEY);
    assert.equal(notice?.link, "/explore");
    assert.match(notice?.title ?? "", /^2 new listings/);
    assert.deepEqual(notice?.data.listingIds, [fresh.id, samsListing.id], "newest first");
    assert.deepEqual((await digestMails(alice.id)).map((m) => m.send_status), ["sent"]);
    const [mail, ...others] = double.sentTo(alice.email);
    assert.equal(others.length, 0);
    assert.ok(mail?.html?.includes(fresh.title));
    assert.ok(mail?.html?.includes(samsListing.title));
    assert.ok(mail?.html?.includes(`http://localhost:5173/listings/${fresh.id}`));
    assert.ok(!mail?.html?.includes(pending.title), "not approved");
    assert.ok(!mail?.html?.includes(older.title), "approved before the first digest's 24 hours");

    // In-app only: the notice, and the e-mail logged as suppressed (not sent).
    assert.equal((await digestNotices(bob.id)).length, 1);
    const bobsMails = await digestMails(bob.id);
    assert.deepEqual(bobsMails.map((m) => m.send_status), ["suppressed"]);
    assert.match(bobsMails[0]?.error_message ?? "", /new_listings/);
    assert.equal(double.sentTo(bob.email).length, 0);

    // A seller is not told about their own listing.
    const [samsNotice] = await digestNotices(sam.id);
    assert.deepEqual(samsNotice?.data.listingIds, [fresh.id]);
    assert.ok(!double.sentTo(sam.email)[0]?.html?.includes(samsListing.title));

    for (const user of [carol, dave, seller]) {
      assert.equal((await digestNotices(user.id)).length, 0);
      assert.equal((await digestMails(user.id)).length, 0);
    }
  },
);

sqlTest("send-listing-notifications: a second run the same day sends nothing", async () => {
  double.reset();
  await createListing(db.pool, seller.id, "approved");
  const res = await run();
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body.scanned, 3);
  assert.equal(res.body.changed, 0);
  assert.deepEqual(res.body.counts, { already_sent_today: 3 });
  assert.equal(double.sent.length, 0);
  for (const user of [alice, bob, sam]) assert.equal((await digestNotices(user.id)).length, 1);
});

sqlTest(
  "send-listing-notifications: the digest covers what came after the user's last one",
  async () => {
    double.reset();
    const erin = await subscriber();
    const olderStill = await createListing(db.pool, seller.id, "approved");
    await reviewedAgo(olderStill.id, 4);
    // Erin's last digest e-mail went out three days ago.
    await db.pool.query(
      `insert into public.email_logs (recipient_email, email_type, send_status, user_id, subject,
       idempotency_key, created_at)
     values ($1, 'new_listings_digest', 'sent', $2, 'Earlier digest', $3, now() - interval '3 days')`,
      [erin.email, erin.id, `new_listings:earlier:${erin.id}`],
    );
    const quiet = await subscriber(); // nothing new for someone whose last digest is just now
    await db.pool.query(
      `insert into public.notifications (user_id, type, title, body, dedupe_key)
     values ($1, 'new_listings', 'Earlier', 'Earlier digest', 'new_listings:earlier')`,
      [quiet.id],
    );
    const res = await run();
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.changed, 1);
    assert.equal(res.body.counts.no_new_listings, 1);
    const [notice] = (await digestNotices(erin.id)).filter((n) => n.dedupe_key === KEY);
    const ids = notice?.data.listingIds as string[];
    assert.ok(ids.includes(older.id), "approved two days ago, after her last digest");
    assert.ok(!ids.includes(olderStill.id), "approved before her last digest");
    assert.equal((await digestNotices(quiet.id)).length, 1, "only the earlier one");
  },
);

sqlTest(
  "send-listing-notifications: two runs at once: one runs, one is skipped; one digest each",
  async () => {
    double.reset();
    const users = [await subscriber(), await subscriber()];
    // Hold the run at its first in-app insert, so the second start finds it running.
    const holder = await db.pool.connect();
    let answers;
    try {
      await holder.query("begin");
      await holder.query("lock table public.notifications in exclusive mode");
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
      assert.equal((await digestNotices(user.id)).length, 1);
      assert.equal(double.sentTo(user.email).length, 1);
    }
  },
);

sqlTest("send-listing-notifications: who may start it", async () => {
  const user = await createUser(db.pool);
  const admin = await createUser(db.pool, { admin: true });
  assert.equal((await invoke(handler, runtime, {})).status, 401);
  const plain = await run(await keys.userToken(user));
  assert.equal(plain.status, 403);
  assert.equal(plain.body.error?.code, "forbidden");
  assert.equal((await run(await keys.userToken(admin))).status, 200);
  assert.equal((await run(keys.serviceKey)).status, 200);
});

sqlTest(
  "send-listing-notifications: a user whose digest cannot be written is a failed item",
  async () => {
    double.reset();
    const broken = await subscriber();
    const fine = await subscriber();
    // An address the e-mail log refuses (its format check), so this user's notice fails.
    await db.pool.query("update public.profiles set email = 'not an address' where id = $1", [
      broken.id,
    ]);
    try {
      const res = await run();
      assert.equal(res.status, 500, JSON.stringify(res.body));
      const body = res.body as { error?: { code: string; details?: DigestRun } };
      assert.equal(body.error?.code, "partial_failure");
      assert.equal(body.error?.details?.failed, 1);
      assert.equal(body.error?.details?.changed, 1);
      assert.equal(body.error?.details?.failures[0]?.item, `user:${broken.id}`);
      assert.equal((await digestNotices(broken.id)).length, 0, "its savepoint rolled back");
      assert.equal((await digestNotices(fine.id)).length, 1);
      assert.equal(double.sentTo(fine.email).length, 1);
    } finally {
      await db.pool.query("delete from public.notification_preferences where user_id = $1", [
        broken.id,
      ]);
    }
  },
);

sqlTest(
  "send-listing-notifications: a recipient whose plan hides the asking price gets the placeholder, not the price",
  async () => {
    double.reset();
    const onFree = await subscriber();
    const onPro = await subscriber();
    await setSubscription(db.pool, onPro.id, "pro");
    const listing = await createListing(db.pool, seller.id, "approved");
    const price = formatMoney(listing.asking_price, "USD");
    await db.pool.query(
      "update public.blurred_fields set free = true where field_key = 'asking_price'",
    );
    let res;
    try {
      res = await run();
    } finally {
      await db.pool.query(
        "update public.blurred_fields set free = false where field_key = 'asking_price'",
      );
    }
    assert.equal(res.status, 200, JSON.stringify(res.body));

    // The free plan: the listing, with the placeholder instead of any price, in
    // the e-mail sent and the in-app notice.
    const [freeMail, ...moreFree] = double.sentTo(onFree.email);
    assert.equal(moreFree.length, 0);
    const [freeLog] = await digestMails(onFree.id);
    const [freeNotice] = await digestNotices(onFree.id);
    assert.ok(freeMail?.text?.includes(listing.title));
    assert.ok(freeMail?.text?.includes(`saas · ${HIDDEN_PRICE}`), String(freeMail?.text));
    assert.equal((freeNotice?.data.listingIds as string[])[0], listing.id, "newest first");
    // (A sent e-mail's log keeps its subject; the body is dropped once sent.)
    assert.equal(freeLog?.send_status, "sent");
    const told = [freeMail?.text, freeMail?.html, freeLog?.subject, JSON.stringify(freeNotice)];
    for (const text of told) {
      assert.ok(text, "every channel has content");
      assert.ok(!text.includes(listing.asking_price), text);
      assert.doesNotMatch(text, /\$\s?\d/, "no price of any listing");
    }

    // The pro plan: the price.
    const [proMail] = double.sentTo(onPro.email);
    assert.ok(proMail?.text?.includes(`saas · ${price}`), String(proMail?.text));
    assert.ok(!proMail?.text?.includes(HIDDEN_PRICE));
  },
);

sqlTest(
  "send-listing-notifications: a confidential listing's price reaches only recipients with approved access; the others read why it is hidden",
  async () => {
    double.reset();
    const withAccess = await subscriber();
    const without = await subscriber();
    await setSubscription(db.pool, withAccess.id, "pro");
    await setSubscription(db.pool, without.id, "pro");
    const listing = await createListing(db.pool, seller.id, "approved");
    await makeConfidential(db.pool, listing.id, ["asking_price", "url"]);
    await accessRequest(db.pool, listing.id, withAccess.id, "approved");
    await accessRequest(db.pool, listing.id, without.id, "pending");
    const price = formatMoney(listing.asking_price, "USD");
    const res = await run();
    assert.equal(res.status, 200, JSON.stringify(res.body));

    const [mail] = double.sentTo(without.email);
    assert.ok(mail?.text?.includes(`saas · ${CONFIDENTIAL_PRICE}`), String(mail?.text));
    const [notice] = await digestNotices(without.id);
    for (const text of [mail?.text, mail?.html, JSON.stringify(notice)]) {
      assert.ok(
        text && !text.includes(listing.asking_price) && !text.includes(listing.url),
        String(text),
      );
    }
    const [told] = double.sentTo(withAccess.email);
    assert.ok(told?.text?.includes(`saas · ${price}`), String(told?.text));
  },
);
