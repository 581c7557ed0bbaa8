import assert from "node:assert/strict";
import { NOTICE_EMAIL_TYPES } from "../../shared/notice_kinds.ts";
import { EMAIL_TYPES, NOTIFICATION_TYPES } from "../../shared/notifications.ts";
import {
  LOI_NOTICE_BUILDERS,
  type LoiKind,
} from "../../supabase/functions/_shared/deals/loi_notices.ts";
import { formatUtc } from "../../supabase/functions/_shared/lib/format.ts";
import handler from "../../supabase/functions/send-queued-notices/handler.ts";
import { createListing, type TestListing } from "../db/core_fixtures.ts";
import { sqlTest } from "../support/db.ts";
import type { JobAnswerBody } from "../support/jobs.ts";
import {
  emailLogs,
  notificationsOf,
  notificationsSetup,
  type TestNotification,
} from "../support/notifications.ts";
import { counterOffer, dealOf, makeLoiOffer } from "../support/loi.ts";
import { invoke } from "../support/runtime.ts";
import { createUser, type TestUser, valueAs } from "../support/sql.ts";

interface QueueRun extends JobAnswerBody {
  scanned: number;
  changed: number;
  failed: number;
  counts: Record<string, number>;
  items?: Record<string, string[]>;
}

const { db, double, runtime, keys } = await notificationsSetup();

const HOUR = 3_600_000;
const LOI_KINDS = Object.keys(LOI_NOTICE_BUILDERS) as LoiKind[];

/** Runs the drain and asserts it answered 200 without a failed row; answers its body. */
async function drain(): Promise<QueueRun> {
  const res = await invoke<QueueRun>(handler, runtime, { token: keys.schedulerToken });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body.failed, 0, JSON.stringify(res.body));
  return res.body;
}

/** Drains everything already due, so a test sees only its own rows. */
async function drainBacklog(): Promise<void> {
  await drain();
  double.reset();
}

/** Runs `sql` as `user` through RLS and commits, as supabase-js would; answers the first value. */
function rpc<T = unknown>(user: TestUser, sql: string, params: unknown[] = []): Promise<T> {
  return valueAs<T>(db.pool, { role: "authenticated", userId: user.id }, sql, params);
}

/** A new seller with a new approved listing, and a new buyer. */
async function parties(): Promise<{ seller: TestUser; buyer: TestUser; listing: TestListing }> {
  const seller = await createUser(db.pool);
  const buyer = await createUser(db.pool);
  const listing = await createListing(db.pool, seller.id, "approved");
  return { seller, buyer, listing };
}

/** The buyer's first offer on `listing` (terms null: a plain offer); answers its id. */
function offer(
  buyer: TestUser,
  listing: TestListing,
  amount: string,
  terms: Record<string, unknown> | null,
): Promise<string> {
  return makeLoiOffer(db.pool, buyer, listing.id, amount, terms, "Hello");
}

/** `who` counters version `offerId`; answers the new version's id. */
function counter(
  who: TestUser,
  offerId: string,
  amount: string,
  terms: Record<string, unknown> | null,
  message: string | null = null,
): Promise<string> {
  return counterOffer(db.pool, who, offerId, amount, terms, message);
}

/** `who` accepts version `offerId`; answers the deal's id. */
function accept(who: TestUser, offerId: string): Promise<string> {
  return rpc<string>(who, "select public.accept_offer($1)", [offerId]);
}

/** A deal in due diligence on a new listing (the seller accepted the buyer's LOI). */
async function diligenceDeal(exclusivityDays = 14) {
  const { seller, buyer, listing } = await parties();
  const offerId = await offer(buyer, listing, "30000.00", { exclusivity_days: exclusivityDays });
  const dealId = await accept(seller, offerId);
  return { seller, buyer, listing, offerId, dealId };
}

/** The queue rows about `subjectId`, in the order they were queued. */
async function queued(subjectId: string) {
  const { rows } = await db.pool.query<{
    id: string;
    kind: string;
    user_id: string;
    status: string;
    outcome: string | null;
    due_at: Date;
  }>(
    `select id, kind, user_id, status, outcome, due_at from public.notice_queue
     where subject_id = $1 order by created_at, kind, user_id`,
    [subjectId],
  );
  return rows;
}

/** `user`'s in-app notices of type handover. */
async function handoverOf(user: TestUser): Promise<TestNotification[]> {
  return (await notificationsOf(db.pool, user.id)).filter((n) => n.type === "handover");
}

/** `user`'s `email_logs` rows of the LOI e-mail types. */
async function loiMailsOf(user: TestUser) {
  const types = new Set<string>(LOI_KINDS.map((k) => NOTICE_EMAIL_TYPES[k]));
  return (await emailLogs(db.pool)).filter((m) => m.user_id === user.id && types.has(m.email_type));
}

/**
 * Asserts `user` has exactly the handover notices of `expected`'s keys and
 * one e-mail of each, of its type and sent; answers the notices by key.
 */
async function assertTold(
  user: TestUser,
  expected: Array<{ key: string; emailType: string }>,
): Promise<Map<string, TestNotification>> {
  const notices = await handoverOf(user);
  assert.deepEqual(
    notices.map((n) => n.dedupe_key).sort(),
    expected.map((e) => e.key).sort(),
    `${user.email}: in-app notices`,
  );
  const mails = await loiMailsOf(user);
  assert.deepEqual(
    mails.map((m) => [m.email_type, m.idempotency_key, m.send_status]).sort(),
    expected.map((e) => [e.emailType, `${e.key}:${user.id}`, "sent"]).sort(),
    `${user.email}: e-mails`,
  );
  return new Map(notices.map((n) => [n.dedupe_key!, n]));
}

/**
 * Moves deal `dealId` (its creation and window end) and its pending queue
 * rows `ms` into the past, as if that much time had gone by. The window only
 * moves later through the deal's guard, so the triggers are set aside for
 * the statements (the test pool is a superuser).
 */
async function ageDeal(dealId: string, ms: number): Promise<void> {
  const client = await db.pool.connect();
  try {
    await client.query("begin");
    await client.query("set local session_replication_role = replica");
    const shift = "make_interval(secs => $2::float8 / 1000)";
    await client.query(
      `update public.deals set created_at = created_at - ${shift},
         exclusive_until = exclusive_until - ${shift}
       where id = $1`,
      [dealId, ms],
    );
    await client.query(
      `update public.notice_queue set due_at = due_at - ${shift}, created_at = created_at - ${shift}
       where subject_id = $1 and status = 'pending'`,
      [dealId, ms],
    );
    await client.query("commit");
  } finally {
    client.release();
  }
}

const inDays = (days: number) => new Date(Date.now() + days * 24 * HOUR).toISOString().slice(0, 10);

// -----------------------------------------------------------------------------

Deno.test(
  "loi notices: every kind writes an e-mail of its own name, under the handover preference",
  () => {
    assert.equal(NOTIFICATION_TYPES.handover.pushed, true);
    assert.match(NOTIFICATION_TYPES.handover.label, /offers and counter-offers, due diligence/);
    for (const kind of LOI_KINDS) {
      assert.equal(NOTICE_EMAIL_TYPES[kind], kind);
      assert.equal(EMAIL_TYPES[NOTICE_EMAIL_TYPES[kind]], "handover", kind);
    }
    assert.equal(LOI_KINDS.length, 7);
  },
);

sqlTest(
  "loi notices: a counter-offer tells the other side once, with its terms; its acceptance tells its author, and queues the 48-hour reminders",
  async () => {
    await drainBacklog();
    const { seller, buyer, listing } = await parties();
    const first = await offer(buyer, listing, "30000.00", { exclusivity_days: 10 });
    const close = inDays(60);
    const second = await counter(
      seller,
      first,
      "32000.00",
      {
        cash_at_close: "30000.00",
        holdback_days: 30,
        inspection_days: 10,
        exclusivity_days: 14,
        proposed_close_date: close,
        conditions: ["The domain & <b>code</b> transfer first"],
      },
      "Can do 32k <b>with</b> a holdback & the domain",
    );

    const run = await drain();
    const [row] = await queued(second);
    assert.deepEqual(run.items?.offer_countered, [row!.id]);
    assert.equal(row!.user_id, buyer.id);
    const told = await assertTold(buyer, [
      { key: `offer_countered:${second}`, emailType: "offer_countered" },
    ]);
    const notice = told.get(`offer_countered:${second}`)!;
    assert.equal(notice.title, `Counter-offer of $32,000.00 for "${listing.title}"`);
    assert.equal(notice.link, `/offers/${second}`);
    assert.deepEqual(notice.data, {
      offerId: second,
      listingId: listing.id,
      parentOfferId: first,
      proposedBy: "seller",
      status: "pending",
    });
    for (
      const part of [
        `The seller of "${listing.title}" countered with a letter of intent of $32,000.00.`,
        "Cash at close: $30,000.00",
        "Holdback: $2,000.00, released after 30 days",
        "Inspection period: 10 days",
        "Exclusivity for due diligence: 14 days",
        `Proposed close date: ${close}`,
        "Conditions: 1",
        'Their note: "Can do 32k <b>with</b> a holdback & the domain"',
      ]
    ) {
      assert.ok(notice.body.includes(part), `${part} in: ${notice.body}`);
    }
    const [mail] = double.sentTo(buyer.email);
    assert.equal(mail!.subject, `Counter-offer of $32,000.00 for "${listing.title}"`);
    assert.ok(mail!.text?.includes("- Condition 1: The domain & <b>code</b> transfer first"));
    assert.ok(mail!.text?.includes("> Can do 32k <b>with</b> a holdback & the domain"));
    assert.ok(mail!.html?.includes("Can do 32k &lt;b&gt;with&lt;/b&gt; a holdback &amp; the"));
    assert.ok(mail!.html?.includes(`/offers/${second}`));
    await assertTold(seller, []);

    // Handled once: a second run writes nothing.
    assert.equal((await drain()).changed, 0);
    assert.equal(double.sentTo(buyer.email).length, 1);

    // The buyer accepts the seller's counter: the seller (its author) is told.
    const dealId = await accept(buyer, second);
    const deal = await dealOf(db.pool, dealId);
    assert.equal(deal.status, "in_diligence");
    await drain();
    const accepted = (await assertTold(seller, [
      { key: `offer_accepted:${second}`, emailType: "offer_accepted" },
    ])).get(`offer_accepted:${second}`)!;
    assert.equal(accepted.title, `Your counter-offer for "${listing.title}" was accepted`);
    assert.equal(accepted.link, `/deals/${dealId}`);
    assert.deepEqual(accepted.data, {
      offerId: second,
      listingId: listing.id,
      dealId,
      dealStatus: "in_diligence",
      exclusiveUntil: deal.exclusive_until!.toISOString(),
    });
    assert.ok(
      accepted.body.includes(
        `The buyer has exclusivity for due diligence until ${formatUtc(deal.exclusive_until!)}`,
      ),
      accepted.body,
    );
    assert.equal((await handoverOf(buyer)).length, 1, "the buyer is told nothing more");

    // The reminders to both sides, due 48 hours before the window ends.
    const reminders = (await queued(dealId)).filter((r) => r.kind === "deal_exclusivity_ending");
    assert.deepEqual(reminders.map((r) => r.user_id).sort(), [buyer.id, seller.id].sort());
    for (const reminder of reminders) {
      assert.equal(reminder.status, "pending");
      assert.equal(reminder.due_at.getTime(), deal.exclusive_until!.getTime() - 48 * HOUR);
    }
    assert.equal((await drain()).changed, 0);
  },
);

sqlTest(
  "loi notices: a counter answered before anyone heard of it is dropped; the accepted author hears the deal awaits payment",
  async () => {
    await drainBacklog();
    const { seller, buyer, listing } = await parties();
    const first = await offer(buyer, listing, "30000.00", null);
    const second = await counter(seller, first, "34000.00", null);
    const third = await counter(buyer, second, "32000.00", { exclusivity_days: 0 });
    const dealId = await accept(seller, third);
    assert.equal((await dealOf(db.pool, dealId)).status, "pending_payment");

    const run = await drain();
    assert.equal(run.counts.dropped, 2);
    assert.deepEqual((await queued(second)).map((r) => [r.kind, r.status, r.outcome]), [
      ["offer_countered", "dropped", "offer countered"],
    ]);
    assert.deepEqual((await queued(third)).map((r) => [r.kind, r.user_id, r.status, r.outcome]), [
      ["offer_countered", seller.id, "dropped", "offer accepted"],
      ["offer_accepted", buyer.id, "sent", "in-app created; e-mail queued"],
    ]);
    const accepted = (await assertTold(buyer, [
      { key: `offer_accepted:${third}`, emailType: "offer_accepted" },
    ])).get(`offer_accepted:${third}`)!;
    assert.equal(accepted.title, `Your offer for "${listing.title}" was accepted`);
    assert.equal(
      accepted.body,
      `The seller of "${listing.title}" accepted your offer of $32,000.00. The deal awaits your payment into escrow.`,
    );
    assert.equal(accepted.data.dealStatus, "pending_payment");
    assert.equal(accepted.data.exclusiveUntil, null);
    await assertTold(seller, []);
    assert.deepEqual(
      (await queued(dealId)).map((r) => r.kind),
      [],
      "no reminder without a window",
    );
  },
);

sqlTest(
  "loi notices: the seller hears the buyer confirmed; the extension notice and the reminders still pending are dropped by the confirm",
  async () => {
    await drainBacklog();
    const { seller, buyer, listing, offerId, dealId } = await diligenceDeal();
    await drain();
    await assertTold(buyer, [{ key: `offer_accepted:${offerId}`, emailType: "offer_accepted" }]);
    double.reset();

    await rpc(seller, "select (public.extend_exclusivity($1, 2)).id", [dealId]);
    await rpc(buyer, "select (public.confirm_diligence($1)).id", [dealId]);
    const run = await drain();
    assert.deepEqual(
      (await queued(dealId)).filter((r) => r.kind === "deal_exclusivity_extended").map((r) => [
        r.user_id,
        r.status,
        r.outcome,
      ]),
      [[buyer.id, "dropped", "deal pending payment"]],
    );
    assert.equal(run.items?.deal_diligence_confirmed?.length, 1);
    const confirmed = (await assertTold(seller, [
      { key: `deal_diligence_confirmed:${dealId}`, emailType: "deal_diligence_confirmed" },
    ])).get(`deal_diligence_confirmed:${dealId}`)!;
    assert.equal(confirmed.title, "Due diligence confirmed");
    assert.equal(confirmed.link, `/deals/${dealId}`);
    assert.equal(
      confirmed.body,
      `The buyer of "${listing.title}" confirmed due diligence and proceeds to payment of $30,000.00 into escrow. The handover starts once the payment clears.`,
    );
    assert.equal(confirmed.data.dealId, dealId);
    assert.equal(confirmed.data.status, "pending_payment");
    assert.equal(double.sentTo(buyer.email).length, 0, "the buyer is told nothing");

    // The confirm dropped the reminders in its own transaction: no run writes them.
    assert.deepEqual(
      (await queued(dealId)).filter((r) => r.kind === "deal_exclusivity_ending").map((r) => [
        r.status,
        r.outcome,
      ]),
      [["dropped", "deal pending payment"], ["dropped", "deal pending payment"]],
    );
    const later = await drain();
    assert.equal(later.counts.dropped ?? 0, 0);
    assert.equal((await handoverOf(buyer)).length, 1);
    assert.equal((await handoverOf(seller)).length, 1);
  },
);

sqlTest(
  "loi notices: a withdrawal tells the other side, with the reason; the side that withdrew hears nothing",
  async () => {
    await drainBacklog();
    const bySeller = await diligenceDeal();
    const byBuyer = await diligenceDeal();
    await drain();
    double.reset();
    await rpc(bySeller.seller, "select (public.withdraw_from_deal($1, $2)).id", [
      bySeller.dealId,
      "The <b>buyer</b> asked for\nour bank details & more",
    ]);
    await rpc(byBuyer.buyer, "select (public.withdraw_from_deal($1, $2)).id", [
      byBuyer.dealId,
      "Churn is higher than listed",
    ]);
    const run = await drain();
    assert.equal(run.items?.deal_withdrawn?.length, 2);

    const toBuyer = (await assertTold(bySeller.buyer, [
      { key: `offer_accepted:${bySeller.offerId}`, emailType: "offer_accepted" },
      { key: `deal_withdrawn:${bySeller.dealId}`, emailType: "deal_withdrawn" },
    ])).get(`deal_withdrawn:${bySeller.dealId}`)!;
    assert.equal(
      toBuyer.title,
      `The seller withdrew from the deal for "${bySeller.listing.title}"`,
    );
    assert.equal(toBuyer.link, `/deals/${bySeller.dealId}`);
    assert.ok(toBuyer.body.includes("during due diligence: the deal is cancelled."), toBuyer.body);
    assert.ok(toBuyer.body.includes("Your exclusivity has ended."), toBuyer.body);
    assert.ok(
      toBuyer.body.endsWith('The reason: "The <b>buyer</b> asked for\nour bank details & more"'),
      toBuyer.body,
    );
    assert.deepEqual(
      { by: toBuyer.data.by, status: toBuyer.data.status },
      { by: "seller", status: "cancelled" },
    );
    const [mail] = double.sentTo(bySeller.buyer.email);
    assert.ok(mail!.text?.includes("> The <b>buyer</b> asked for\n> our bank details & more"));
    assert.ok(mail!.html?.includes("The &lt;b&gt;buyer&lt;/b&gt; asked for<br>our bank details"));
    assert.deepEqual(
      (await loiMailsOf(bySeller.seller)).filter((m) => m.email_type === "deal_withdrawn"),
      [],
      "the seller withdrew: nothing to them",
    );
    assert.equal(double.sentTo(bySeller.seller.email).length, 0);

    const toSeller = (await handoverOf(byBuyer.seller)).filter((n) =>
      n.dedupe_key === `deal_withdrawn:${byBuyer.dealId}`
    );
    assert.equal(toSeller.length, 1);
    assert.equal(
      toSeller[0]!.title,
      `The buyer withdrew from the deal for "${byBuyer.listing.title}"`,
    );
    assert.ok(toSeller[0]!.body.includes("The listing is back on the market"));
    assert.ok(toSeller[0]!.body.endsWith('The reason: "Churn is higher than listed"'));
    assert.equal(
      (await handoverOf(byBuyer.buyer)).filter((n) => n.dedupe_key?.startsWith("deal_withdrawn"))
        .length,
      0,
    );
    assert.equal((await drain()).changed, 0);
  },
);

sqlTest(
  "loi notices: each extension tells the buyer its new end and moves the reminders; the reminder reaches both sides once, 48 hours before the end",
  async () => {
    await drainBacklog();
    const { seller, buyer, listing, dealId } = await diligenceDeal();
    await drain();
    double.reset();
    const before = await dealOf(db.pool, dealId);

    await rpc(seller, "select (public.extend_exclusivity($1, 3)).id", [dealId]);
    const once = await dealOf(db.pool, dealId);
    assert.equal(once.exclusive_until!.getTime(), before.exclusive_until!.getTime() + 72 * HOUR);
    const reminders = () =>
      queued(dealId).then((rows) =>
        rows.filter((r) => r.kind === "deal_exclusivity_ending" && r.status === "pending")
      );
    assert.deepEqual(
      (await reminders()).map((r) => r.due_at.getTime()),
      [once.exclusive_until!.getTime() - 48 * HOUR, once.exclusive_until!.getTime() - 48 * HOUR],
      "both reminders moved",
    );
    await drain();
    const firstKey = `deal_exclusivity_extended:${dealId}:${once.exclusive_until!.getTime()}`;
    const extended = (await handoverOf(buyer)).find((n) => n.dedupe_key === firstKey)!;
    assert.equal(extended.title, "Exclusivity extended");
    assert.equal(extended.link, `/deals/${dealId}`);
    assert.ok(extended.body.includes(`it now ends at ${formatUtc(once.exclusive_until!)}`));
    assert.equal(extended.data.exclusiveUntil, once.exclusive_until!.toISOString());
    assert.equal(
      double.sentTo(buyer.email)[0]?.subject,
      `Your exclusivity for "${listing.title}" now ends at ${formatUtc(once.exclusive_until!)}`,
    );

    // A second extension is news again (a new key), and moves the reminders again.
    await rpc(seller, "select (public.extend_exclusivity($1, 2)).id", [dealId]);
    const twice = await dealOf(db.pool, dealId);
    await drain();
    const secondKey = `deal_exclusivity_extended:${dealId}:${twice.exclusive_until!.getTime()}`;
    assert.deepEqual(
      (await handoverOf(buyer)).map((n) => n.dedupe_key).filter((k) =>
        k?.startsWith("deal_exclusivity_extended")
      ),
      [firstKey, secondKey],
    );
    assert.deepEqual(
      (await reminders()).map((r) => r.due_at.getTime()),
      [twice.exclusive_until!.getTime() - 48 * HOUR, twice.exclusive_until!.getTime() - 48 * HOUR],
    );
    assert.equal((await handoverOf(seller)).length, 0, "the seller is told nothing of it");
    double.reset();

    // Time passes: the reminders come due, 48 hours before the end.
    const due = (await reminders())[0]!.due_at.getTime();
    await ageDeal(dealId, due - Date.now() + 60_000);
    const end = (await dealOf(db.pool, dealId)).exclusive_until!;
    const run = await drain();
    assert.equal(run.items?.deal_exclusivity_ending?.length, 2);
    const key = `deal_exclusivity_ending:${dealId}:${end.getTime()}`;
    const toBuyer = (await handoverOf(buyer)).find((n) => n.dedupe_key === key)!;
    const toSeller = (await handoverOf(seller)).find((n) => n.dedupe_key === key)!;
    assert.equal(toBuyer.title, "Exclusivity ends in 48 hours");
    assert.ok(toBuyer.body.includes(`ends at ${formatUtc(end)}`));
    assert.ok(toBuyer.body.includes("confirm_diligence"), toBuyer.body);
    assert.equal(toBuyer.data.side, "buyer");
    assert.ok(toSeller.body.startsWith(`The buyer's exclusivity for due diligence on "`));
    assert.ok(toSeller.body.includes(`ends at ${formatUtc(end)}`));
    assert.equal(toSeller.data.side, "seller");
    assert.equal(
      double.sentTo(buyer.email)[0]?.subject,
      `Confirm due diligence on "${listing.title}" by ${formatUtc(end)}`,
    );
    assert.equal(
      double.sentTo(seller.email)[0]?.subject,
      `The exclusivity on "${listing.title}" ends at ${formatUtc(end)}`,
    );
    for (const who of [buyer, seller]) {
      const mails = (await loiMailsOf(who)).filter((m) =>
        m.email_type === "deal_exclusivity_ending"
      );
      assert.deepEqual(mails.map((m) => m.idempotency_key), [`${key}:${who.id}`]);
    }
    assert.equal((await drain()).changed, 0, "once");
    assert.equal(double.sentTo(buyer.email).length, 1);
    assert.equal(double.sentTo(seller.email).length, 1);
  },
);

sqlTest(
  "loi notices: a reminder found due while the window ends more than 49 hours away is dropped",
  async () => {
    await drainBacklog();
    const { seller, buyer, dealId } = await diligenceDeal();
    await db.pool.query(
      `update public.notice_queue set due_at = now()
       where subject_id = $1 and kind = 'deal_exclusivity_ending'`,
      [dealId],
    );
    await drain();
    assert.deepEqual(
      (await queued(dealId)).filter((r) => r.kind === "deal_exclusivity_ending").map((r) => [
        r.status,
        r.outcome,
      ]),
      [["dropped", "exclusivity extended"], ["dropped", "exclusivity extended"]],
    );
    for (const who of [buyer, seller]) {
      assert.equal(
        (await handoverOf(who)).filter((n) => n.dedupe_key?.startsWith("deal_exclusivity_ending"))
          .length,
        0,
      );
    }
  },
);

sqlTest(
  "loi notices: a lapsed window tells both sides the deal is cancelled, once each",
  async () => {
    await drainBacklog();
    const { seller, buyer, listing, dealId } = await diligenceDeal();
    await drain();
    double.reset();
    await ageDeal(dealId, 15 * 24 * HOUR);
    const { rows: [lapse] } = await db.pool.query<{ lapsed: boolean }>(
      "select public.lapse_deal_exclusivity($1) as lapsed",
      [dealId],
    );
    assert.equal(lapse!.lapsed, true);
    const end = (await dealOf(db.pool, dealId)).exclusive_until!;
    assert.equal((await dealOf(db.pool, dealId)).status, "cancelled");

    const run = await drain();
    assert.equal(run.items?.deal_exclusivity_lapsed?.length, 2);
    assert.deepEqual(
      (await queued(dealId)).filter((r) => r.kind === "deal_exclusivity_ending").map((r) =>
        r.outcome
      ),
      ["deal cancelled", "deal cancelled"],
      "the reminders that came due with it are dropped",
    );
    const key = `deal_exclusivity_lapsed:${dealId}`;
    for (
      const [who, after] of [[buyer, "You may make a new offer"], [
        seller,
        "takes offers again",
      ]] as const
    ) {
      const [notice, ...more] = (await handoverOf(who)).filter((n) => n.dedupe_key === key);
      assert.equal(more.length, 0);
      assert.equal(notice!.title, `The deal for "${listing.title}" lapsed`);
      assert.equal(notice!.link, `/deals/${dealId}`);
      assert.ok(notice!.body.includes(`ended at ${formatUtc(end)} without the buyer confirming`));
      assert.ok(notice!.body.includes("the listing is back on the market"));
      assert.ok(notice!.body.includes(after), notice!.body);
      assert.equal(notice!.data.status, "cancelled");
      const mails = (await loiMailsOf(who)).filter((m) =>
        m.email_type === "deal_exclusivity_lapsed"
      );
      assert.deepEqual(mails.map((m) => [m.idempotency_key, m.send_status]), [
        [`${key}:${who.id}`, "sent"],
      ]);
      assert.equal(double.sentTo(who.email).length, 1);
    }
    assert.equal((await drain()).changed, 0);
    assert.equal(double.sentTo(buyer.email).length, 1, "once");
  },
);
