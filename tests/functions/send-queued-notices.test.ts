import assert from "node:assert/strict";
import handler from "../../supabase/functions/send-queued-notices/handler.ts";
import { createListing } from "../db/core_fixtures.ts";
import { sqlTest } from "../support/db.ts";
import {
  assertOneRanOneSkipped,
  type JobAnswerBody,
  twoStartsWhileLocked,
} from "../support/jobs.ts";
import {
  accessRequest,
  ageConversation,
  lapseRequest,
  makeConfidential,
} from "../support/listing_access.ts";
import {
  emailLogs,
  makeEmailsDue,
  notificationsOf,
  notificationsSetup,
  setPreference,
} from "../support/notifications.ts";
import { invoke } from "../support/runtime.ts";
import { createUser, type SqlIdentity, type TestUser, valueAs } from "../support/sql.ts";

interface QueueRun extends JobAnswerBody {
  scanned: number;
  changed: number;
  failed: number;
  counts: Record<string, number>;
  items?: Record<string, string[]>;
  failures: Array<{ item: string; code: string }>;
}

const { db, double, runtime, keys } = await notificationsSetup();

async function run(token: string | undefined = keys.schedulerToken) {
  return await invoke<QueueRun>(handler, runtime, { token });
}

/** Runs the drain and asserts it answered 200; answers its body. */
async function drain(): Promise<QueueRun> {
  const res = await run();
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body;
}

const seller = await createUser(db.pool);
const admin = await createUser(db.pool, { admin: true });

function as(user: TestUser): SqlIdentity {
  return { role: "authenticated", userId: user.id };
}

/** Runs `sql` as `user` through RLS and commits, as supabase-js would; answers the first value. */
function rpc<T = unknown>(user: TestUser, sql: string, params: unknown[] = []): Promise<T> {
  return valueAs<T>(db.pool, as(user), sql, params);
}

/** The queue row of `kind` for `userId` about `subjectId`, newest first. */
async function rows(subjectId: string) {
  const { rows } = await db.pool.query<{
    id: string;
    kind: string;
    user_id: string;
    status: string;
    outcome: string | null;
    attempts: number;
    due_at: Date;
  }>(
    `select id, kind, user_id, status, outcome, attempts, due_at from public.notice_queue
     where subject_id = $1 order by created_at, id`,
    [subjectId],
  );
  return rows;
}

async function noticesOf(user: TestUser, type: string) {
  return (await notificationsOf(db.pool, user.id)).filter((n) => n.type === type);
}

/** A new buyer with a conversation on a new open listing of the seller. */
async function conversation(): Promise<{ id: string; buyer: TestUser }> {
  const listing = await createListing(db.pool, seller.id, "approved");
  const buyer = await createUser(db.pool);
  const id = await rpc<string>(buyer, "select public.start_conversation($1)", [listing.id]);
  return { id, buyer };
}

const SEND = "select public.send_message($1, $2)";

/** Drains everything already due, so a test sees only its own rows. */
async function drainBacklog(): Promise<void> {
  await drain();
  double.reset();
}

// -----------------------------------------------------------------------------
// Access requests
// -----------------------------------------------------------------------------

sqlTest(
  "send-queued-notices: the seller hears of an access request, the buyer of the answer; each once, in-app and by e-mail",
  async () => {
    await drainBacklog();
    const listing = await createListing(db.pool, seller.id, "approved");
    await makeConfidential(db.pool, listing.id);
    const buyer = await createUser(db.pool);
    const request = await rpc<string>(
      buyer,
      "select public.request_listing_access($1, '1', $2)",
      [listing.id, "I run <b>two</b> recipe sites & want to see the traffic."],
    );
    const first = await drain();
    assert.deepEqual(first.items?.listing_access_requested, [(await rows(request))[0]!.id]);
    assert.equal(first.failed, 0);
    const [notice, ...more] = await noticesOf(seller, "listing_access");
    assert.equal(more.length, 0);
    assert.equal(notice!.dedupe_key, `listing_access_requested:${request}`);
    assert.equal(notice!.link, `/seller/access-requests/${request}`);
    assert.match(notice!.body, /accepted NDA version 1/);
    assert.deepEqual(notice!.data, {
      requestId: request,
      listingId: listing.id,
      status: "pending",
    });
    const [mail] = double.sentTo(seller.email);
    assert.equal(mail?.subject, `A buyer asks for access to "${listing.title}"`);
    assert.ok(mail?.text?.includes("I run <b>two</b> recipe sites & want to see the traffic."));
    assert.ok(mail?.html?.includes("I run &lt;b&gt;two&lt;/b&gt; recipe sites &amp; want"));
    assert.deepEqual((await rows(request)).map((r) => [r.status, r.outcome]), [
      ["sent", "in-app created; e-mail queued"],
    ]);

    // A second run finds nothing.
    const second = await drain();
    assert.equal(second.changed, 0);
    assert.equal(double.sentTo(seller.email).length, 1);

    // The answer reaches the buyer, with the seller's note; never anything confidential.
    await rpc(seller, "select public.decide_listing_access($1, true, 'Welcome aboard')", [request]);
    await drain();
    const [approved] = await noticesOf(buyer, "listing_access");
    assert.equal(approved!.title, `You have access to "${listing.title}"`);
    const [buyerMail] = double.sentTo(buyer.email);
    assert.ok(buyerMail?.text?.includes("Welcome aboard"));
    for (const secret of [listing.url, listing.seller_id, seller.email]) {
      assert.ok(!JSON.stringify(buyerMail).includes(secret), `no ${secret} in the buyer's e-mail`);
    }
    await drain();
    assert.equal(double.sentTo(buyer.email).length, 1, "once");
  },
);

sqlTest(
  "send-queued-notices: an e-mail the provider failed is sent by a later run once its backoff has passed; other e-mails wait for the daily retry",
  async () => {
    await drainBacklog();
    const owner = await createUser(db.pool);
    const listing = await createListing(db.pool, owner.id, "approved");
    await makeConfidential(db.pool, listing.id);
    const buyer = await createUser(db.pool);
    // Not the queue's: an e-mail some request left pending (the daily retry's).
    const { rows: [other] } = await db.pool.query<{ id: string }>(
      `insert into public.email_logs (recipient_email, email_type, send_status, subject, html,
         text_body, next_attempt_at)
       values ($1, 'price_alert', 'pending', 'A price alert', '<p>x</p>', 'x', now())
       returning id`,
      [buyer.email],
    );
    await rpc(buyer, "select public.request_listing_access($1, '1')", [listing.id]);
    double.failNext({ path: "/emails", status: 500 });
    const first = await drain();
    assert.equal(first.failed, 0, "an e-mail that failed is not a failed item");
    assert.equal(first.counts.emails_failed, 1);
    assert.equal(double.sentTo(owner.email).length, 0);
    const failed = (await emailLogs(db.pool, "listing_access_requested"))
      .filter((r) => r.user_id === owner.id);
    assert.deepEqual(failed.map((r) => r.send_status), ["failed"]);

    const early = await drain();
    assert.equal(early.counts.emails_retried ?? 0, 0, "not before the backoff");
    await makeEmailsDue(db.pool);
    const later = await drain();
    assert.equal(later.counts.emails_retried, 1);
    assert.equal(later.counts.emails_retry_failed ?? 0, 0);
    assert.equal(double.sentTo(owner.email).length, 1);
    assert.equal((await drain()).counts.emails_retried ?? 0, 0);
    assert.equal(double.sentTo(owner.email).length, 1, "once");
    const { rows: [left] } = await db.pool.query<{ send_status: string }>(
      "select send_status from public.email_logs where id = $1",
      [other!.id],
    );
    assert.equal(left!.send_status, "pending", "the queue retries its own types only");
    assert.equal(double.sentTo(buyer.email).length, 0);
    await db.pool.query("delete from public.email_logs where id = $1", [other!.id]);
  },
);

sqlTest(
  "send-queued-notices: every answer is told — declined, revoked, expired — and a request withdrawn before the seller heard of it is dropped",
  async () => {
    await drainBacklog();
    const listing = await createListing(db.pool, seller.id, "approved");
    await makeConfidential(db.pool, listing.id);
    const withdrawing = await createUser(db.pool);
    const withdrawn = await rpc<string>(
      withdrawing,
      "select public.request_listing_access($1, '1')",
      [
        listing.id,
      ],
    );
    await rpc(withdrawing, "select public.withdraw_listing_access($1)", [withdrawn]);
    const declinedBuyer = await createUser(db.pool);
    const declined = await accessRequest(db.pool, listing.id, declinedBuyer.id, "pending");
    await rpc(seller, "select public.decide_listing_access($1, false, $2)", [
      declined,
      "Only buyers with proof of funds",
    ]);
    const revokedBuyer = await createUser(db.pool);
    const revoked = await accessRequest(db.pool, listing.id, revokedBuyer.id, "approved");
    await rpc(seller, "select public.revoke_listing_access($1)", [revoked]);
    const expiredBuyer = await createUser(db.pool);
    const expired = await accessRequest(db.pool, listing.id, expiredBuyer.id, "pending");
    await lapseRequest(db.pool, expired);
    await db.pool.query("select public.expire_listing_access_requests()");

    const res = await drain();
    assert.equal(res.counts.dropped, 1);
    assert.deepEqual((await rows(withdrawn)).map((r) => [r.status, r.outcome]), [
      ["dropped", "request withdrawn"],
    ]);
    assert.deepEqual(
      await noticesOf(seller, "listing_access").then((n) =>
        n.filter((x) => x.data.requestId === withdrawn)
      ),
      [],
    );
    const told = (user: TestUser) => double.sentTo(user.email).map((m) => m.subject);
    assert.deepEqual(told(declinedBuyer), [
      `Your access request for "${listing.title}" was declined`,
    ]);
    assert.ok(
      double.sentTo(declinedBuyer.email)[0]?.text?.includes("Only buyers with proof of funds"),
    );
    assert.deepEqual(told(revokedBuyer), [`Your access to "${listing.title}" was revoked`]);
    assert.deepEqual(told(expiredBuyer), [
      `Your access request for "${listing.title}" expired`,
    ]);
    assert.deepEqual(told(withdrawing), []);
  },
);

// -----------------------------------------------------------------------------
// Unread messages
// -----------------------------------------------------------------------------

sqlTest(
  "send-queued-notices: unread messages are e-mailed once 15 minutes old, not before; later ones wait out the hour",
  async () => {
    await drainBacklog();
    const { id, buyer } = await conversation();
    await rpc(buyer, SEND, [id, "Is the <domain> included?"]);
    await rpc(buyer, SEND, [id, "And the newsletter list?"]);

    // Not yet due: the run leaves it.
    await drain();
    assert.equal(double.sentTo(seller.email).length, 0);
    assert.deepEqual((await rows(id)).map((r) => r.status), ["pending"]);

    await ageConversation(db.pool, id, 16);
    const due = await drain();
    assert.equal(due.items?.conversation_unread?.length, 1);
    const [mail, ...more] = double.sentTo(seller.email);
    assert.equal(more.length, 0, "one e-mail for both messages");
    assert.match(mail!.subject, /^2 new messages from the buyer of "/);
    assert.ok(mail!.text?.includes("Is the <domain> included?"));
    assert.ok(mail!.text?.includes("And the newsletter list?"));
    assert.ok(!mail!.text?.includes(buyer.email), "the buyer's address is not told");
    const [logged] = (await emailLogs(db.pool, "conversation_unread")).filter((m) =>
      m.user_id === seller.id
    );
    assert.equal(logged?.send_status, "sent");
    // No in-app notice from the queue: the conversation's own notice is kept by the database.
    assert.deepEqual(
      (await noticesOf(seller, "conversations")).map((n) => n.dedupe_key),
      [`conversation:${id}`],
    );

    // A third message: 15 minutes later it is still within the hour after the e-mail.
    await rpc(buyer, SEND, [id, "Third question"]);
    await ageConversation(db.pool, id, 16);
    await drain();
    assert.equal(double.sentTo(seller.email).length, 1, "at most one e-mail an hour");
    const [pending] = (await rows(id)).filter((r) => r.status === "pending");
    assert.ok(pending, "the next e-mail waits");
    await ageConversation(db.pool, id, 45);
    await drain();
    const mails = double.sentTo(seller.email);
    assert.equal(mails.length, 2);
    assert.match(mails[1]!.subject, /^1 new message from the buyer of "/);
    assert.ok(mails[1]!.text?.includes("Third question"));
    assert.ok(!mails[1]!.text?.includes("newsletter"), "only what the last e-mail did not tell");
  },
);

sqlTest(
  "send-queued-notices: messages read before their e-mail was due, or in a closed conversation, are not e-mailed; a fresh one waits its 15 minutes",
  async () => {
    await drainBacklog();
    // Read in time.
    const read = await conversation();
    await rpc(read.buyer, SEND, [read.id, "Quick question"]);
    await rpc(seller, "select public.mark_conversation_read($1)", [read.id]);
    await ageConversation(db.pool, read.id, 16);
    // Closed.
    const closed = await conversation();
    await rpc(closed.buyer, SEND, [closed.id, "Hello?"]);
    await rpc(closed.buyer, "select public.block_conversation($1)", [closed.id]);
    await ageConversation(db.pool, closed.id, 16);
    // Read, then a new message: the queued e-mail is due, the message it would tell is not.
    const fresh = await conversation();
    await rpc(fresh.buyer, SEND, [fresh.id, "First"]);
    await rpc(seller, "select public.mark_conversation_read($1)", [fresh.id]);
    await ageConversation(db.pool, fresh.id, 10);
    await rpc(fresh.buyer, SEND, [fresh.id, "Second"]);
    await ageConversation(db.pool, fresh.id, 6);

    const res = await drain();
    assert.equal(res.counts.dropped, 2);
    assert.equal(res.counts.later, 1);
    assert.deepEqual((await rows(read.id)).map((r) => [r.status, r.outcome]), [[
      "dropped",
      "read",
    ]]);
    assert.deepEqual((await rows(closed.id)).map((r) => [r.status, r.outcome]), [[
      "dropped",
      "closed",
    ]]);
    const [later] = await rows(fresh.id);
    assert.equal(later!.status, "pending");
    const inMinutes = (later!.due_at.getTime() - Date.now()) / 60_000;
    assert.ok(inMinutes > 8 && inMinutes < 10, `due in about 9 minutes, not ${inMinutes}`);
    assert.equal(double.sentTo(seller.email).length, 0);

    await ageConversation(db.pool, fresh.id, 10);
    await drain();
    const [mail] = double.sentTo(seller.email);
    assert.ok(mail?.text?.includes("Second"));
    assert.ok(!mail?.text?.includes("First"), "the message read before is not told");
  },
);

sqlTest(
  "send-queued-notices: a recipient who switched conversation e-mails off gets none (logged suppressed), and the hour still counts",
  async () => {
    await drainBacklog();
    const { id, buyer } = await conversation();
    await setPreference(db.pool, buyer.id, "conversations", { email: false, inApp: true });
    await rpc(seller, SEND, [id, "Your offer?"]);
    await ageConversation(db.pool, id, 16);
    const res = await drain();
    assert.equal(res.counts.emails_suppressed, 1);
    assert.equal(double.sentTo(buyer.email).length, 0);
    const [logged] = (await emailLogs(db.pool, "conversation_unread")).filter((m) =>
      m.user_id === buyer.id
    );
    assert.equal(logged?.send_status, "suppressed");
    assert.deepEqual((await rows(id)).map((r) => r.status), ["sent"]);
  },
);

// -----------------------------------------------------------------------------
// Reports, overlap, failures
// -----------------------------------------------------------------------------

sqlTest(
  "send-queued-notices: a reported conversation alerts every admin once, in-app and by e-mail",
  async () => {
    await drainBacklog();
    const otherAdmin = await createUser(db.pool, { admin: true });
    const { id, buyer } = await conversation();
    const report = await rpc<string>(buyer, "select public.report_conversation($1, $2)", [
      id,
      "The seller asked me to pay by wire, off the platform",
    ]);
    await rpc(buyer, "select public.report_conversation($1, 'Again')", [id]);
    const res = await drain();
    const admins = (await db.pool.query<{ user_id: string }>(
      "select user_id from public.user_roles where role = 'admin'",
    )).rows.map((r) => r.user_id);
    assert.equal(res.items?.conversation_reported?.length, admins.length);
    for (const who of [admin, otherAdmin]) {
      const [alert, ...more] = (await notificationsOf(db.pool, who.id)).filter((n) =>
        n.dedupe_key === `conversation_reported:${report}`
      );
      assert.equal(more.length, 0);
      assert.equal(alert!.type, "admin_alerts");
      assert.equal(alert!.link, `/admin/conversations/${id}`);
      const mails = double.sentTo(who.email);
      assert.equal(mails.length, 1);
      assert.match(mails[0]!.subject, /reported by the buyer$/);
      assert.ok(mails[0]!.text?.includes("pay by wire, off the platform"));
    }
    await drain();
    assert.equal(double.sentTo(admin.email).length, 1, "once per report");
  },
);

sqlTest("send-queued-notices: two starts at once — one runs, the other is skipped", async () => {
  await drainBacklog();
  const answers = await twoStartsWhileLocked(db.pool, "public.notice_queue", () => run());
  assertOneRanOneSkipped(answers);
});

sqlTest(
  "send-queued-notices: a notice that cannot be written fails the run (500 partial_failure), is tried again, and gives up after 5 attempts",
  async () => {
    await drainBacklog();
    const listing = await createListing(db.pool, seller.id, "approved");
    await makeConfidential(db.pool, listing.id);
    const buyer = await createUser(db.pool);
    const request = await accessRequest(db.pool, listing.id, buyer.id, "pending");
    await rpc(seller, "select public.decide_listing_access($1, true)", [request]);
    // An address the e-mail log refuses (its format check): the buyer's notice cannot be written.
    await db.pool.query("update public.profiles set email = 'not an address' where id = $1", [
      buyer.id,
    ]);
    try {
      for (let attempt = 1; attempt <= 5; attempt++) {
        const res = await run();
        assert.equal(res.status, 500, JSON.stringify(res.body));
        const body = res.body as { error?: { code: string; details?: QueueRun } };
        assert.equal(body.error?.code, "partial_failure");
        const [row] = (await rows(request)).filter((r) => r.kind === "listing_access_approved");
        assert.equal(row!.attempts, attempt);
        assert.equal(row!.status, attempt < 5 ? "pending" : "failed");
        assert.equal(body.error?.details?.failures[0]?.item, `notice_queue:${row!.id}`);
      }
      assert.deepEqual(await noticesOf(buyer, "listing_access"), [], "its savepoint rolled back");
      const after = await drain();
      assert.equal(after.failed, 0, "a failed row is left for an operator");
    } finally {
      await db.pool.query("update public.profiles set email = $2 where id = $1", [
        buyer.id,
        buyer.email,
      ]);
    }
  },
);

sqlTest(
  "send-queued-notices: only the schedule, the service role and admins start it",
  async () => {
    const user = await createUser(db.pool);
    assert.equal((await run(await keys.userToken(user))).status, 403, "a signed-in user");
    assert.equal((await run(keys.anonKey)).status, 403, "the anon key, outside local development");
    assert.equal((await invoke(handler, runtime, {})).status, 401, "no token");
    assert.equal((await run(keys.serviceKey)).status, 200);
    assert.equal((await run(await keys.userToken(admin))).status, 200, "an admin");
  },
);
