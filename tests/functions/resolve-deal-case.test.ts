/**
 * `resolve-deal-case` (admin) against the processor double: a case the
 * parties could not settle is escalated by `deal-deadlines` once its 7 days
 * of negotiation pass (every admin told), and the admin's decision moves its
 * money at once — each amount once, however often the decision is sent;
 * who may call it, and what it refuses.
 *
 * @module
 */
import assert from "node:assert/strict";
import handler from "../../supabase/functions/resolve-deal-case/handler.ts";
import deadlines from "../../supabase/functions/deal-deadlines/handler.ts";
import { sqlTest } from "../support/db.ts";
import { dealEvents, dealsSetup, dealState, payableDeal, type TestDeal } from "../support/deals.ts";
import { invoke } from "../support/runtime.ts";
import { createUser, type TestUser, valueAs } from "../support/sql.ts";

const setup = await dealsSetup();
const { db, double, runtime, keys, admin } = setup;

interface CaseAnswer {
  dealId: string;
  status: string;
  payout: { status: string; amount: string } | null;
  refund: { status: string; amount: string } | null;
  partialRefund: { status: string; amount: string } | null;
  case: {
    id: string;
    status: string;
    outcome: string | null;
    refundAmount: string | null;
    phase: string | null;
    resolution: string | null;
    moneyMovedAt: string | null;
  };
  error?: { code: string; message: string; details?: { reason?: string } };
}

function as(user: TestUser) {
  return { role: "authenticated" as const, userId: user.id };
}

async function resolve(body: unknown, who: TestUser = admin) {
  return await invoke<CaseAnswer>(handler, runtime, { token: await keys.userToken(who), body });
}

async function openCase(deal: TestDeal): Promise<string> {
  return await valueAs<string>(
    db.pool,
    as(deal.buyer),
    "select public.open_deal_case($1, 'not_delivered', 'The repository was never transferred')",
    [deal.id],
  );
}

/** Ages the case's negotiation past its deadline, as 7 days would. */
async function negotiationOver(caseId: string): Promise<void> {
  await db.pool.query(
    "update public.deal_cases set negotiate_until = now() - interval '1 minute' where id = $1",
    [caseId],
  );
}

async function runDeadlines() {
  const res = await invoke<{ items?: Record<string, string[]> }>(deadlines, runtime, {
    token: keys.schedulerToken,
  });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body;
}

sqlTest(
  "a case not settled in 7 days is escalated by deal-deadlines once, every admin queued a notice",
  async () => {
    const deal = await payableDeal(setup);
    const caseId = await openCase(deal);
    await runDeadlines();
    assert.equal(
      (await db.pool.query("select status from public.deal_cases where id = $1", [caseId]))
        .rows[0].status,
      "open",
    );
    await negotiationOver(caseId);
    const ran = await runDeadlines();
    assert.deepEqual(ran.items?.cases_escalated?.filter((id) => id === caseId), [caseId]);
    await runDeadlines();
    const { rows } = await db.pool.query(
      "select status, escalated_by from public.deal_cases where id = $1",
      [caseId],
    );
    assert.deepEqual(rows[0], { status: "escalated", escalated_by: "deadline" });
    const events = await dealEvents(db.pool, deal.id);
    assert.equal(events.filter((e) => e.endsWith(":case_escalated")).length, 1);
    const queued = await db.pool.query<{ user_id: string }>(
      "select user_id from public.notice_queue where kind = 'deal_case_escalated' and subject_id = $1",
      [caseId],
    );
    const told = queued.rows.map((r) => r.user_id);
    for (const who of [deal.buyer.id, deal.seller.id, admin.id]) assert.ok(told.includes(who), who);
  },
);

sqlTest(
  "resolve-deal-case refund: the whole payment goes back to the buyer once, the deal refunded; the same decision again answers the same",
  async () => {
    const deal = await payableDeal(setup, { amount: "1000.00" });
    const caseId = await openCase(deal);
    await valueAs(db.pool, as(deal.seller), "select public.escalate_deal_case($1)", [caseId]);
    const decided = await resolve({ caseId, outcome: "refund" });
    assert.equal(decided.status, 200, JSON.stringify(decided.body));
    assert.equal(decided.body.status, "refunded");
    assert.equal(decided.body.refund?.status, "succeeded");
    assert.equal(decided.body.refund?.amount, "1000.00");
    assert.equal(decided.body.case.status, "resolved");
    assert.equal(decided.body.case.resolution, "admin");
    assert.equal(decided.body.case.phase, "escrow");
    assert.ok(decided.body.case.moneyMovedAt);
    const again = await resolve({ caseId, outcome: "refund" });
    assert.equal(again.status, 200);
    assert.deepEqual(again.body, decided.body);
    const refunds = double.all("refund").filter((r) => r.metadata?.deal_id === deal.id);
    assert.equal(refunds.length, 1);
    assert.equal(refunds[0]?.amount, 100_000);
    assert.equal(double.all("transfer").filter((t) => t.metadata?.deal_id === deal.id).length, 0);

    const other = await resolve({ caseId, outcome: "release" });
    assert.equal(other.status, 409);
    assert.equal(other.body.error?.details?.reason, "case_resolved");
  },
);

sqlTest(
  "resolve-deal-case partial_refund: 10 decisions at once refund the amount once and pay the seller the rest less its commission once",
  async () => {
    const deal = await payableDeal(setup, { amount: "2000.00" });
    const caseId = await openCase(deal);
    const token = await keys.userToken(admin);
    const answers = await Promise.all(
      Array.from({ length: 10 }, () =>
        invoke<CaseAnswer>(handler, runtime, {
          token,
          body: { caseId, outcome: "partial_refund", refundAmount: "500.00" },
        })),
    );
    for (const answer of answers) {
      assert.ok(answer.status === 200 || answer.status === 409, JSON.stringify(answer.body));
    }
    // What did not finish within a racing call finishes on the next one.
    const last = await resolve({ caseId, outcome: "partial_refund", refundAmount: "500.00" });
    assert.equal(last.status, 200, JSON.stringify(last.body));
    assert.equal(last.body.status, "completed");
    assert.equal(last.body.partialRefund?.amount, "500.00");
    assert.equal(last.body.payout?.amount, "1350.00"); // 1500.00 less 10 %
    assert.ok(last.body.case.moneyMovedAt);
    assert.deepEqual(
      double.all("refund").filter((r) => r.metadata?.deal_id === deal.id).map((r) => r.amount),
      [50_000],
    );
    assert.deepEqual(
      double.all("transfer").filter((t) => t.metadata?.deal_id === deal.id).map((t) => t.amount),
      [135_000],
    );
    assert.equal((await dealState(db.pool, deal.id)).status, "completed");
  },
);

sqlTest(
  "resolve-deal-case refuses: 403 for a participant, 400 for an amount without partial_refund or too large, 404 for an unknown case",
  async () => {
    const deal = await payableDeal(setup, { amount: "1000.00" });
    const caseId = await openCase(deal);
    const byBuyer = await resolve({ caseId, outcome: "refund" }, deal.buyer);
    assert.equal(byBuyer.status, 403);
    const missing = await resolve({ caseId, outcome: "partial_refund" });
    assert.equal(missing.status, 400);
    const extra = await resolve({ caseId, outcome: "release", refundAmount: "1.00" });
    assert.equal(extra.status, 400);
    const tooMuch = await resolve({ caseId, outcome: "partial_refund", refundAmount: "1000.00" });
    assert.equal(tooMuch.status, 400, JSON.stringify(tooMuch.body));
    assert.match(tooMuch.body.error?.message ?? "", /less than the 1000\.00 USD still held/);
    const unknown = await resolve({ caseId: crypto.randomUUID(), outcome: "release" });
    assert.equal(unknown.status, 404);
    const stranger = await createUser(db.pool);
    assert.equal((await resolve({ caseId, outcome: "release" }, stranger)).status, 403);
    const { rows } = await db.pool.query("select status from public.deal_cases where id = $1", [
      caseId,
    ]);
    assert.equal(rows[0].status, "open", "nothing was written");
  },
);
