import assert from "node:assert/strict";
import { NOTICE_ADMIN_EMAIL_TYPES, NOTICE_EMAIL_TYPES } from "../../shared/notice_kinds.ts";
import { EMAIL_TYPES } from "../../shared/notifications.ts";
import {
  CASE_NOTICE_BUILDERS,
  type CaseKind,
} from "../../supabase/functions/_shared/deals/case_notices.ts";
import { renderEmail } from "../../supabase/functions/_shared/email/render.ts";
import {
  type CaseFacts,
  type CaseResolutionFacts,
  caseResolvedNotice,
  type DealSide,
} from "../../supabase/functions/_shared/email/templates/deal_cases.ts";
import { formatUtc } from "../../supabase/functions/_shared/lib/format.ts";
import handler from "../../supabase/functions/send-queued-notices/handler.ts";
import { sqlTest } from "../support/db.ts";
import {
  completeHandover,
  createDeal,
  dealsSetup,
  moveDeal,
  payDeal,
  startHandover,
  type TestDeal,
} from "../support/deals.ts";
import type { JobAnswerBody } from "../support/jobs.ts";
import { createLoiDeal, LOI_TERMS, testDealOf } from "../support/loi.ts";
import {
  emailLogs,
  makeEmailsDue,
  notificationsOf,
  type TestNotification,
} from "../support/notifications.ts";
import { invoke } from "../support/runtime.ts";
import { createUser, type TestUser, valueAs } from "../support/sql.ts";

interface QueueRun extends JobAnswerBody {
  scanned: number;
  changed: number;
  failed: number;
  counts: Record<string, number>;
  items?: Record<string, string[]>;
}

const setup = await dealsSetup();
const { db, keys } = setup;
const mail = setup.email;
const secondAdmin = await createUser(db.pool, { admin: true });
const admins = [setup.admin, secondAdmin];

const CASE_KINDS = Object.keys(CASE_NOTICE_BUILDERS) as CaseKind[];
const DETAILS = 'The MRR was "2,100" & the <b>dashboard</b> says 1,400.\nNo Stripe access either.';

/** Runs the drain and asserts it answered 200 without a failed row; answers its body. */
async function drain(): Promise<QueueRun> {
  const res = await invoke<QueueRun>(handler, setup.runtime, { token: keys.schedulerToken });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body.failed, 0, JSON.stringify(res.body));
  return res.body;
}

/** Drains everything already due, so a test sees only its own rows. */
async function drainBacklog(): Promise<void> {
  await drain();
  mail.reset();
}

/** Runs `sql` as `user` through RLS and commits, as supabase-js would; answers the first value. */
function rpc<T = unknown>(user: TestUser, sql: string, params: unknown[] = []): Promise<T> {
  return valueAs<T>(db.pool, { role: "authenticated", userId: user.id }, sql, params);
}

/** A paid deal (1250.00 USD, no terms) in its handover. */
async function handoverDeal(): Promise<TestDeal & { title: string }> {
  const deal = await createDeal(db.pool);
  await payDeal(setup, deal);
  await startHandover(db.pool, deal.id);
  return { ...deal, title: await titleOf(deal.id) };
}

/** The listing title of deal `dealId`. */
async function titleOf(dealId: string): Promise<string> {
  const { rows } = await db.pool.query<{ title: string }>(
    "select l.title from public.deals d join public.listings l on l.id = d.listing_id where d.id = $1",
    [dealId],
  );
  return rows[0]!.title;
}

/** What `deal_transfer_amount(deal, kind)` answers now. */
async function transferAmount(dealId: string, kind: "payout" | "holdback"): Promise<string | null> {
  const { rows } = await db.pool.query<{ amount: string | null }>(
    "select public.deal_transfer_amount($1, $2)::text as amount",
    [dealId, kind],
  );
  return rows[0]!.amount;
}

/** The case as stored. */
async function caseOf(caseId: string) {
  const { rows } = await db.pool.query<{ status: string; negotiate_until: Date; updated_at: Date }>(
    "select status, negotiate_until, updated_at from public.deal_cases where id = $1",
    [caseId],
  );
  return rows[0]!;
}

/** The queue rows about `subjectId` of `kind`, as (user, status, outcome). */
async function queued(subjectId: string, kind: string) {
  const { rows } = await db.pool.query<{ user_id: string; status: string; outcome: string | null }>(
    `select user_id, status, outcome from public.notice_queue
     where subject_id = $1 and kind = $2 order by created_at, user_id`,
    [subjectId, kind],
  );
  return rows;
}

/** `user`'s in-app notices whose key starts with `prefix`. */
async function noticesOf(user: TestUser, prefix: string): Promise<TestNotification[]> {
  return (await notificationsOf(db.pool, user.id)).filter((n) => n.dedupe_key?.startsWith(prefix));
}

/**
 * Asserts `user` has exactly one in-app notice of `key` (of `type`) and one
 * e-mail of it (`emailType`, sent, keyed per user), and that the e-mail
 * double got exactly `mails` messages for them; answers the notice.
 */
async function assertToldOnce(
  user: TestUser,
  key: string,
  options: { type?: string; emailType: string; mails?: number },
): Promise<TestNotification> {
  const notices = (await notificationsOf(db.pool, user.id)).filter((n) => n.dedupe_key === key);
  assert.equal(notices.length, 1, `${user.email}: one in-app notice ${key}`);
  assert.equal(notices[0]!.type, options.type ?? "handover");
  const logs = (await emailLogs(db.pool, options.emailType)).filter((m) => m.user_id === user.id);
  assert.deepEqual(
    logs.filter((m) => m.idempotency_key === `${key}:${user.id}`).map((m) => m.send_status),
    ["sent"],
    `${user.email}: one e-mail ${key}`,
  );
  if (options.mails !== undefined) {
    assert.equal(mail.sentTo(user.email).length, options.mails, `${user.email}: e-mails sent`);
  }
  return notices[0]!;
}

/** Asserts `user` has no in-app notice whose key starts with `prefix`. */
async function assertNotTold(user: TestUser, prefix: string): Promise<void> {
  assert.deepEqual((await noticesOf(user, prefix)).map((n) => n.dedupe_key), [], user.email);
}

/** `who` opens a case on `dealId`; answers its id. */
function openCase(who: TestUser, dealId: string, reason = "not_as_described"): Promise<string> {
  return rpc<string>(who, "select public.open_deal_case($1, $2, $3)", [dealId, reason, DETAILS]);
}

/** `who` proposes `outcome` (with `amount` for a partial refund) on case `caseId`. */
function propose(who: TestUser, caseId: string, outcome: string, amount: number | null = null) {
  return rpc(who, "select (public.settle_deal_case($1, $2, $3)).status", [
    caseId,
    outcome,
    amount,
  ]);
}

/** An admin resolves case `caseId` (what resolve-deal-case does in SQL). */
async function resolve(caseId: string, outcome: string, amount: number | null = null) {
  await db.pool.query("select (public.resolve_deal_case($1, $2, $3, $4)).id", [
    caseId,
    outcome,
    amount,
    setup.admin.id,
  ]);
}

// -----------------------------------------------------------------------------

Deno.test("case notices: every kind writes an e-mail of its own name under the handover preference; an admin's escalation its admin type", () => {
  assert.deepEqual(CASE_KINDS.sort(), [
    "deal_case_escalated",
    "deal_case_opened",
    "deal_case_resolved",
    "deal_case_settlement_proposed",
    "deal_delivery_accepted",
  ]);
  for (const kind of CASE_KINDS) {
    assert.equal(NOTICE_EMAIL_TYPES[kind], kind);
    assert.equal(EMAIL_TYPES[NOTICE_EMAIL_TYPES[kind]], "handover", kind);
  }
  assert.equal(NOTICE_ADMIN_EMAIL_TYPES.deal_case_escalated, "admin_deal_case_escalated");
  assert.equal(EMAIL_TYPES.admin_deal_case_escalated, "admin_alerts");
});

Deno.test("case notices: every outcome, phase and resolution tells each side what happens to the money, with no gap", () => {
  const c: CaseFacts = {
    caseId: "c1",
    dealId: "d1",
    title: "Shop <b>&</b> co",
    amount: "1000.00",
    currency: "USD",
    openedBy: "buyer",
    reason: "not_delivered",
    details: "x",
    negotiateUntil: new Date("2026-03-21T09:30:00Z"),
  };
  const now = new Date("2026-03-14T09:30:00Z");
  const base: CaseResolutionFacts = {
    outcome: "release",
    refundAmount: null,
    resolution: "settled",
    phase: "escrow",
    payoutAmount: "855.00",
    holdbackAmount: "100.00",
    heldBack: "100.00",
    holdbackDays: 30,
    inspectionEndsAt: new Date("2026-03-20T09:30:00Z"),
    holdbackReleaseAt: null,
    now,
  };
  const expected: Array<[Partial<CaseResolutionFacts>, DealSide, string]> = [
    [
      {},
      "seller",
      "the payout of $855.00 is released to you when the inspection period ends (2026-03-20 09:30 UTC), and the holdback of $100.00 30 days after that.",
    ],
    [{ inspectionEndsAt: null }, "buyer", "once the handover is complete"],
    [{ inspectionEndsAt: now }, "buyer", "is released to the seller shortly"],
    [
      { phase: "holdback", holdbackReleaseAt: new Date("2026-04-19T09:30:00Z") },
      "seller",
      "the holdback of $100.00 is paid to you on 2026-04-19 09:30 UTC.",
    ],
    [{ outcome: "refund" }, "buyer", "You get back the whole $1,000.00 shortly"],
    [{ outcome: "refund", phase: "holdback" }, "seller", "the buyer gets back $100.00"],
    [
      { outcome: "partial_refund", refundAmount: "300.00", payoutAmount: "665.00" },
      "seller",
      "The buyer gets back $300.00 shortly; you receive $665.00 (the rest, less our fee on it)",
    ],
    [
      {
        outcome: "partial_refund",
        refundAmount: "40.00",
        phase: "holdback",
        holdbackAmount: "60.00",
      },
      "buyer",
      "You get back $40.00 of the holdback shortly; the seller receives the rest of it, $60.00",
    ],
    [{ resolution: "deal_refunded" }, "buyer", "the deal was refunded to the buyer"],
    [{ resolution: "deal_completed" }, "seller", "the deal completed and the seller was paid"],
  ];
  for (const [change, to, part] of expected) {
    const notice = caseResolvedNotice(c, { ...base, ...change }, to);
    assert.ok(notice.body.includes(part), `${JSON.stringify(change)}: ${notice.body}`);
    const rendered = renderEmail(notice.email, "http://localhost:5173");
    for (const text of [notice.body, rendered.text, rendered.subject]) {
      assert.doesNotMatch(text, /\bundefined\b|\bnull\b|NaN/, text);
    }
    assert.ok(rendered.html.includes("Shop &lt;b&gt;&amp;&lt;/b&gt; co"));
  }
  assert.match(
    caseResolvedNotice(c, { ...base, resolution: "admin", outcome: "refund" }, "buyer").title,
    /An admin decided the case/,
  );
});

sqlTest(
  "case notices: the buyer's acceptance of the delivery tells the seller once, with the payout and the holdback",
  async () => {
    const loi = await createLoiDeal(db.pool, { terms: { ...LOI_TERMS, exclusivity_days: 0 } });
    const deal = testDealOf(loi);
    await payDeal(setup, deal);
    await startHandover(db.pool, deal.id);
    await completeHandover(db.pool, deal.id);
    await db.pool.query(
      `update public.deals set inspection_ends_at = coalesce(inspection_ends_at, now() + interval '10 days')
       where id = $1`,
      [deal.id],
    );
    await drainBacklog();

    await rpc(loi.buyer, "select (public.accept_delivery($1)).id", [deal.id]);
    const run = await drain();
    assert.equal(run.items?.deal_delivery_accepted?.length, 1);
    const key = `deal_delivery_accepted:${deal.id}`;
    const notice = await assertToldOnce(loi.seller, key, {
      emailType: "deal_delivery_accepted",
      mails: 1,
    });
    const title = await titleOf(deal.id);
    const payout = await transferAmount(deal.id, "payout");
    assert.ok(
      payout !== null && Number(payout) < 900,
      `payout ${payout}: cash at close less the fee`,
    );
    assert.equal(notice.title, "The buyer accepted the delivery");
    assert.equal(notice.link, `/deals/${deal.id}`);
    for (
      const part of [
        `The buyer of "${title}" accepted the delivery, ending the inspection period.`,
        `Your payout of $${
          Number(payout).toLocaleString("en-US", { minimumFractionDigits: 2 })
        } ($1,000.00 less the holdback and our fee) is released to your payout account shortly.`,
        "$100.00 is held back for 30 days after the release",
      ]
    ) {
      assert.ok(notice.body.includes(part), `${part} in: ${notice.body}`);
    }
    assert.equal(notice.data.dealId, deal.id);
    assert.equal(typeof notice.data.deliveryAcceptedAt, "string");
    assert.equal(
      mail.sentTo(loi.seller.email)[0]?.subject,
      `The buyer accepted the delivery of "${title}"`,
    );
    await assertNotTold(loi.buyer, "deal_delivery_accepted");
    assert.equal(mail.sentTo(loi.buyer.email).length, 0);

    // Accepting again changes nothing and queues nothing; a second run writes nothing.
    await rpc(loi.buyer, "select (public.accept_delivery($1)).id", [deal.id]);
    assert.equal((await drain()).changed, 0);
    assert.equal(mail.sentTo(loi.seller.email).length, 1);
  },
);

sqlTest(
  "case notices: a case opened by the buyer, proposals, an escalation (every admin) and an admin's decision reach each side once",
  async () => {
    const deal = await handoverDeal();
    const { buyer, seller, title } = deal;
    await drainBacklog();

    // Opened: both sides, once each.
    const caseId = await openCase(buyer, deal.id);
    const opened = await caseOf(caseId);
    const until = formatUtc(opened.negotiate_until);
    let run = await drain();
    assert.equal(run.items?.deal_case_opened?.length, 2);
    const openedKey = `deal_case_opened:${caseId}`;
    const toBuyer = await assertToldOnce(buyer, openedKey, {
      emailType: "deal_case_opened",
      mails: 1,
    });
    const toSeller = await assertToldOnce(seller, openedKey, {
      emailType: "deal_case_opened",
      mails: 1,
    });
    assert.equal(toBuyer.title, "You opened a case");
    assert.ok(
      toBuyer.body.startsWith(
        `You opened a case about "${title}": the business is not as described. The seller has until ${until} to settle it with you.`,
      ),
      toBuyer.body,
    );
    assert.equal(toSeller.title, "The buyer opened a case");
    for (
      const part of [
        `The buyer of "${title}" opened a case: the business is not as described. You have until ${until} to settle it with them.`,
        `If you have not settled by ${until}, an admin decides.`,
        "No money is released to the seller while the case is open.",
        `Their details: "${DETAILS}"`,
      ]
    ) {
      assert.ok(toSeller.body.includes(part), `${part} in: ${toSeller.body}`);
    }
    assert.equal(toSeller.link, `/deals/${deal.id}`);
    assert.deepEqual(
      { caseId: toSeller.data.caseId, side: toSeller.data.side, reason: toSeller.data.reason },
      { caseId, side: "seller", reason: "not_as_described" },
    );
    const [sellerMail] = mail.sentTo(seller.email);
    assert.equal(sellerMail!.subject, `The buyer opened a case about "${title}"`);
    assert.ok(sellerMail!.text?.includes('> The MRR was "2,100" & the <b>dashboard</b> says'));
    assert.ok(sellerMail!.html?.includes("the &lt;b&gt;dashboard&lt;/b&gt; says 1,400.<br>No"));
    assert.equal((await drain()).changed, 0, "once");
    mail.reset();

    // The seller proposes a partial refund: the buyer hears it.
    await propose(seller, caseId, "partial_refund", 200);
    const first = await caseOf(caseId);
    run = await drain();
    assert.equal(run.items?.deal_case_settlement_proposed?.length, 1);
    const firstKey = `deal_case_settlement_proposed:${caseId}:${first.updated_at.getTime()}`;
    const proposal = await assertToldOnce(buyer, firstKey, {
      emailType: "deal_case_settlement_proposed",
      mails: 1,
    });
    assert.equal(proposal.title, "The seller proposes a settlement");
    assert.ok(
      proposal.body.startsWith(
        `The seller proposes to settle the case about "${title}" with a partial refund of $200.00 to the buyer (the seller receives the rest).`,
      ),
      proposal.body,
    );
    assert.deepEqual(
      [proposal.data.proposedBy, proposal.data.outcome, proposal.data.refundAmount],
      ["seller", "partial_refund", "200.00"],
    );
    await assertNotTold(seller, "deal_case_settlement_proposed");

    // The buyer answers with a full refund: the seller hears it, with their own proposal.
    await propose(buyer, caseId, "refund");
    const second = await caseOf(caseId);
    await drain();
    const toSellerProposal = await assertToldOnce(
      seller,
      `deal_case_settlement_proposed:${caseId}:${second.updated_at.getTime()}`,
      { emailType: "deal_case_settlement_proposed", mails: 1 },
    );
    assert.ok(
      toSellerProposal.body.includes(
        "with a full refund (the buyer gets back the $1,250.00 still held). Your proposal so far: a partial refund of $200.00",
      ),
      toSellerProposal.body,
    );
    assert.equal((await drain()).changed, 0);
    mail.reset();

    // The seller proposes again, but the buyer escalates before the run: the
    // proposal is dropped; both sides and every admin hear of the escalation.
    await propose(seller, caseId, "release");
    await rpc(buyer, "select (public.escalate_deal_case($1)).status", [caseId]);
    run = await drain();
    assert.deepEqual(
      (await queued(caseId, "deal_case_settlement_proposed")).map((r) => [r.status, r.outcome])
        .at(-1),
      ["dropped", "case escalated"],
    );
    assert.equal(run.items?.deal_case_escalated?.length, 4);
    const escalatedKey = `deal_case_escalated:${caseId}`;
    for (const [who, lead] of [[buyer, "you asked"], [seller, "the buyer asked"]] as const) {
      const notice = await assertToldOnce(who, escalatedKey, {
        emailType: "deal_case_escalated",
        mails: 1,
      });
      assert.equal(notice.title, "An admin will decide the case");
      assert.ok(
        notice.body.startsWith(
          `The case about "${title}" goes to an admin: ${lead} an admin to decide.`,
        ),
        notice.body,
      );
      assert.equal(
        (await noticesOf(who, `deal_case_settlement_proposed:${caseId}`)).length,
        1,
        "the dropped proposal wrote nothing",
      );
    }
    for (const admin of admins) {
      const alert = await assertToldOnce(admin, escalatedKey, {
        type: "admin_alerts",
        emailType: "admin_deal_case_escalated",
        mails: 1,
      });
      assert.equal(alert.title, "A deal case needs a decision");
      assert.equal(alert.link, `/admin/deals/${deal.id}`);
      for (
        const part of [
          `A dispute case on "${title}" ($1,250.00) needs a decision: the buyer asked an admin to decide.`,
          "the business is not as described. $1,250.00 is still held.",
          "Proposals so far: buyer — a full refund",
          "seller — release",
          `Resolve it with resolve-deal-case, body { "caseId": "${caseId}"`,
          `The opener's details: "${DETAILS}"`,
        ]
      ) {
        assert.ok(alert.body.includes(part), `${part} in: ${alert.body}`);
      }
      assert.equal(mail.sentTo(admin.email)[0]?.subject, `Decide the case on "${title}"`);
    }
    assert.equal((await drain()).changed, 0, "once each");
    mail.reset();

    // An admin decides a partial refund: both sides hear the outcome and the money.
    await resolve(caseId, "partial_refund", 300);
    run = await drain();
    assert.equal(run.items?.deal_case_resolved?.length, 2);
    const payout = await transferAmount(deal.id, "payout");
    const resolvedKey = `deal_case_resolved:${caseId}`;
    const resolvedBuyer = await assertToldOnce(buyer, resolvedKey, {
      emailType: "deal_case_resolved",
      mails: 1,
    });
    const resolvedSeller = await assertToldOnce(seller, resolvedKey, {
      emailType: "deal_case_resolved",
      mails: 1,
    });
    const payoutText = `$${Number(payout).toLocaleString("en-US", { minimumFractionDigits: 2 })}`;
    assert.equal(resolvedBuyer.title, "An admin decided the case");
    assert.equal(
      resolvedBuyer.body,
      `An admin decided the case about "${title}": partial refund of $300.00. You get back $300.00 shortly; the seller receives ${payoutText} (the rest, less our fee on it), and the deal completes.`,
    );
    assert.ok(
      resolvedSeller.body.includes(
        `The buyer gets back $300.00 shortly; you receive ${payoutText} (the rest`,
      ),
      resolvedSeller.body,
    );
    assert.deepEqual(
      [resolvedSeller.data.outcome, resolvedSeller.data.resolution, resolvedSeller.data.phase],
      ["partial_refund", "admin", "escrow"],
    );
    assert.equal(
      mail.sentTo(seller.email)[0]?.subject,
      `The case about "${title}" was decided: partial refund of $300.00`,
    );
    for (const admin of admins) await assertNotTold(admin, "deal_case_resolved");
    assert.equal((await drain()).changed, 0, "once");
    assert.equal(mail.sentTo(buyer.email).length, 1);
  },
);

sqlTest(
  "case notices: a case both sides settle tells the settlement and drops the proposal that led to it",
  async () => {
    const deal = await handoverDeal();
    const { buyer, seller, title } = deal;
    await drainBacklog();
    const caseId = await openCase(seller, deal.id, "payment_terms");
    await propose(buyer, caseId, "release");
    await propose(seller, caseId, "release");
    assert.equal((await caseOf(caseId)).status, "resolved");

    const run = await drain();
    assert.equal(run.items?.deal_case_opened?.length, 2);
    assert.deepEqual(
      (await queued(caseId, "deal_case_settlement_proposed")).map((r) => [
        r.user_id,
        r.status,
        r.outcome,
      ]),
      [[seller.id, "dropped", "case resolved"]],
    );
    const opened = await assertToldOnce(buyer, `deal_case_opened:${caseId}`, {
      emailType: "deal_case_opened",
    });
    assert.ok(opened.body.includes("a disagreement about the payment terms"), opened.body);
    assert.equal(opened.title, "The seller opened a case");
    const key = `deal_case_resolved:${caseId}`;
    const payout = await transferAmount(deal.id, "payout");
    const payoutText = `$${Number(payout).toLocaleString("en-US", { minimumFractionDigits: 2 })}`;
    for (const [who, other, to] of [[buyer, "seller", "the seller"], [seller, "buyer", "you"]]) {
      const notice = await assertToldOnce(who as TestUser, key, {
        emailType: "deal_case_resolved",
        mails: 2,
      });
      assert.equal(notice.title, "The case is settled");
      assert.equal(
        notice.body,
        `You and the ${other} settled the case about "${title}": release to the seller. The money goes on to the seller as the terms say: the payout of ${payoutText} is released to ${to} once the handover is complete and the inspection period after it has ended.`,
      );
    }
    await assertNotTold(buyer, "deal_case_settlement_proposed");
    await assertNotTold(seller, "deal_case_settlement_proposed");
    assert.equal((await drain()).changed, 0);
  },
);

sqlTest(
  "case notices: an escalation decided before the run is dropped for everyone; a case the deal's refund closes is told as closed",
  async () => {
    const decided = await handoverDeal();
    const refunded = await handoverDeal();
    await drainBacklog();

    const decidedCase = await openCase(decided.buyer, decided.id);
    await rpc(decided.seller, "select (public.escalate_deal_case($1)).status", [decidedCase]);
    await resolve(decidedCase, "release");
    const closedCase = await openCase(refunded.buyer, refunded.id, "not_delivered");
    await moveDeal(db.pool, refunded.id, "refunded");
    assert.equal((await caseOf(closedCase)).status, "resolved");

    await drain();
    const escalations = await queued(decidedCase, "deal_case_escalated");
    assert.equal(escalations.length, 2 + admins.length);
    assert.deepEqual(
      [...new Set(escalations.map((r) => `${r.status}: ${r.outcome}`))],
      ["dropped: case resolved"],
    );
    for (const who of [decided.buyer, decided.seller, ...admins]) {
      await assertNotTold(who, `deal_case_escalated:${decidedCase}`);
    }
    const decidedNotice = await assertToldOnce(
      decided.seller,
      `deal_case_resolved:${decidedCase}`,
      { emailType: "deal_case_resolved" },
    );
    assert.ok(
      decidedNotice.body.startsWith(
        `An admin decided the case about "${decided.title}": release to the seller.`,
      ),
      decidedNotice.body,
    );

    for (const who of [refunded.buyer, refunded.seller]) {
      await assertToldOnce(who, `deal_case_opened:${closedCase}`, {
        emailType: "deal_case_opened",
      });
      const closed = await assertToldOnce(who, `deal_case_resolved:${closedCase}`, {
        emailType: "deal_case_resolved",
        mails: 2,
      });
      assert.equal(closed.title, "The case is closed");
      assert.equal(
        closed.body,
        `The case about "${refunded.title}" is closed: the deal was refunded to the buyer, so there is nothing left to decide.`,
      );
      assert.equal(closed.data.resolution, "deal_refunded");
    }
    assert.equal((await drain()).changed, 0);
  },
);

sqlTest(
  "case notices: escalation e-mails the provider failed, the admins' included, are sent again by a later run",
  async () => {
    const deal = await handoverDeal();
    await drainBacklog();
    const caseId = await openCase(deal.buyer, deal.id);
    await drain();
    mail.reset();
    await rpc(deal.seller, "select (public.escalate_deal_case($1)).status", [caseId]);
    const recipients = [deal.buyer, deal.seller, ...admins];
    mail.failNext({ path: "/emails", status: 500, times: recipients.length });
    const first = await drain();
    assert.equal(first.counts.emails_failed, recipients.length);
    const failed = async () =>
      (await emailLogs(db.pool)).filter((m) =>
        m.idempotency_key?.startsWith(`deal_case_escalated:${caseId}:`)
      ).map((m) => [m.email_type, m.send_status]).sort();
    assert.deepEqual(await failed(), [
      ["admin_deal_case_escalated", "failed"],
      ["admin_deal_case_escalated", "failed"],
      ["deal_case_escalated", "failed"],
      ["deal_case_escalated", "failed"],
    ]);
    await makeEmailsDue(db.pool);
    const later = await drain();
    assert.equal(later.counts.emails_retried, recipients.length);
    assert.deepEqual(await failed(), [
      ["admin_deal_case_escalated", "sent"],
      ["admin_deal_case_escalated", "sent"],
      ["deal_case_escalated", "sent"],
      ["deal_case_escalated", "sent"],
    ]);
    for (const who of recipients) assert.equal(mail.sentTo(who.email).length, 1, who.email);
  },
);
