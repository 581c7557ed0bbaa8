import assert from "node:assert/strict";
import refund from "../../../../supabase/functions/refund-deal-payment/handler.ts";
import release from "../../../../supabase/functions/release-deal-payout/handler.ts";
import { deliver } from "../../../support/billing.ts";
import { sqlTest } from "../../../support/db.ts";
import {
  createDeal,
  dealEvents,
  dealsSetup,
  dealState,
  moveDeal,
  payableDeal,
  startPayment,
} from "../../../support/deals.ts";
import { emailLogs, notificationsOf } from "../../../support/notifications.ts";
import { payprocClient } from "../../../support/payproc_double.ts";
import { invoke } from "../../../support/runtime.ts";
import { createUser } from "../../../support/sql.ts";

// Requests held by the tests must not time out at the SDK meanwhile.
const setup = await dealsSetup({ PAYPROC_TIMEOUT_MS: "30000" });
const { db, double, runtime, keys } = setup;
const secondAdmin = await createUser(db.pool, { admin: true });
const admins = [setup.admin, secondAdmin];

interface SettlementAnswer {
  status: string;
  payout: { status: string; reversalId: string | null } | null;
  refund: { status: string } | null;
  error?: { code: string; details?: { reason?: string } };
}

async function releasePayout(dealId: string) {
  return await invoke<SettlementAnswer>(release, runtime, {
    token: await keys.userToken(setup.admin),
    body: { dealId },
  });
}

/** A deal paid out to its seller: completed, with its charge. */
async function completedDeal() {
  const deal = await payableDeal(setup);
  const paid = await releasePayout(deal.id);
  assert.equal(paid.status, 200, JSON.stringify(paid.body));
  const charge = (await dealState(db.pool, deal.id)).payproc_charge_id!;
  return { ...deal, charge };
}

/** How many notices with `key` each admin has. */
async function adminNotices(key: string): Promise<number[]> {
  const counts = [];
  for (const admin of admins) {
    counts.push(
      (await notificationsOf(db.pool, admin.id)).filter((n) => n.dedupe_key === key).length,
    );
  }
  return counts;
}

sqlTest(
  "a dispute after the payout is recorded on the deal and told to every admin once per dispute; nothing moves",
  async () => {
    const deal = await completedDeal();
    const dispute = double.disputeCharge(deal.charge, { reason: "product_not_received" });
    const created = double.event("charge.dispute.created", dispute);
    const answers = await Promise.all([
      deliver<{ outcome: string }>(setup, created),
      deliver<{ outcome: string }>(setup, created),
      deliver<{ outcome: string }>(setup, double.event("charge.dispute.updated", dispute)),
    ]);
    assert.deepEqual(answers.map((a) => a.status), [200, 200, 200]);
    assert.equal((await dealState(db.pool, deal.id)).status, "completed");
    assert.deepEqual(await adminNotices(`dispute:${dispute.id}`), [1, 1]);
    const mails = (await emailLogs(db.pool, "admin_dispute_after_payout")).filter((l) =>
      l.idempotency_key?.startsWith(`dispute:${dispute.id}:`)
    );
    assert.equal(mails.length, 2);
    // What the admin reads: the dispute, and what they can do about it.
    const sent = setup.email.sentTo(setup.admin.email).find((m) =>
      m.subject.startsWith("Dispute on") && m.text?.includes(dispute.id)
    );
    assert.match(sent?.text ?? "", /product_not_received/);
    assert.match(sent?.text ?? "", /reverseTransfer: true/);

    const lost = double.event("charge.dispute.closed", double.closeDispute(dispute.id, "lost"));
    await deliver(setup, lost);
    await deliver(setup, lost);
    assert.deepEqual((await dealEvents(db.pool, deal.id)).slice(-2), [
      "completed→completed:dispute_opened_after_payout",
      "completed→completed:dispute_lost_after_payout",
    ]);
    const { rows } = await db.pool.query(
      `select detail from public.deal_events
       where deal_id = $1 and cause = 'dispute_opened_after_payout'`,
      [deal.id],
    );
    assert.equal(rows[0].detail.reason, "product_not_received");
    assert.equal(rows[0].detail.amount, "1250.00");
    assert.deepEqual(await adminNotices(`dispute:${dispute.id}`), [1, 1]);
    // Lost without the payout taken back: the platform bore it; the deal stays completed.
    assert.equal((await dealState(db.pool, deal.id)).status, "completed");
  },
);

sqlTest(
  "a dispute first seen when already decided is still recorded as opened and told once",
  async () => {
    const deal = await completedDeal();
    const dispute = double.disputeCharge(deal.charge);
    const won = double.closeDispute(dispute.id, "won");
    await deliver(setup, double.event("charge.dispute.closed", won));
    assert.deepEqual((await dealEvents(db.pool, deal.id)).slice(-2), [
      "completed→completed:dispute_opened_after_payout",
      "completed→completed:dispute_won_after_payout",
    ]);
    assert.deepEqual(await adminNotices(`dispute:${dispute.id}`), [1, 1]);
  },
);

sqlTest(
  "the admin takes the payout back for a dispute: reverseTransfer reverses the transfer and refunds nothing; the lost dispute then refunds the deal",
  async () => {
    const deal = await completedDeal();
    const dispute = double.disputeCharge(deal.charge);
    await deliver(setup, double.event("charge.dispute.created", dispute));

    const plain = await invoke<SettlementAnswer>(refund, runtime, {
      token: await keys.userToken(setup.admin),
      body: { dealId: deal.id },
    });
    assert.equal(plain.status, 409);
    assert.equal(plain.body.error?.details?.reason, "paid_out");

    const refundsBefore = double.requestsTo("POST", "/v1/refunds").length;
    const reversed = await invoke<SettlementAnswer>(refund, runtime, {
      token: await keys.userToken(setup.admin),
      body: { dealId: deal.id, reverseTransfer: true },
    });
    assert.equal(reversed.status, 200, JSON.stringify(reversed.body));
    assert.equal(reversed.body.status, "completed");
    assert.equal(reversed.body.payout?.status, "reversed");
    assert.ok(reversed.body.payout?.reversalId);
    assert.equal(reversed.body.refund, null);
    assert.equal(double.requestsTo("POST", "/v1/refunds").length, refundsBefore);
    assert.ok(
      (await dealEvents(db.pool, deal.id)).includes(
        "completed→completed:payout_reversed_for_dispute",
      ),
    );
    // Asked again: nothing left to take back, and the dispute decides the refund.
    const again = await invoke<SettlementAnswer>(refund, runtime, {
      token: await keys.userToken(setup.admin),
      body: { dealId: deal.id, reverseTransfer: true },
    });
    assert.equal(again.status, 409);
    assert.equal(again.body.error?.details?.reason, "disputed");
    assert.equal(double.all("transfer_reversal").length >= 1, true);

    await deliver(
      setup,
      double.event("charge.dispute.closed", double.closeDispute(dispute.id, "lost")),
    );
    assert.equal((await dealState(db.pool, deal.id)).status, "refunded");
    assert.deepEqual((await dealEvents(db.pool, deal.id)).slice(-1), [
      "completed→refunded:dispute_lost",
    ]);
  },
);

sqlTest(
  "the payout taken back after the dispute was lost refunds the deal too, as in the other order",
  async () => {
    const deal = await completedDeal();
    const dispute = double.disputeCharge(deal.charge);
    await deliver(setup, double.event("charge.dispute.created", dispute));
    await deliver(
      setup,
      double.event("charge.dispute.closed", double.closeDispute(dispute.id, "lost")),
    );
    assert.equal((await dealState(db.pool, deal.id)).status, "completed");

    // What the admins' alert suggests: take the payout back.
    const refundsBefore = double.requestsTo("POST", "/v1/refunds").length;
    const reversed = await invoke<SettlementAnswer>(refund, runtime, {
      token: await keys.userToken(setup.admin),
      body: { dealId: deal.id, reverseTransfer: true },
    });
    assert.equal(reversed.status, 200, JSON.stringify(reversed.body));
    assert.equal(reversed.body.payout?.status, "reversed");
    assert.equal(reversed.body.refund, null);
    assert.equal(double.requestsTo("POST", "/v1/refunds").length, refundsBefore);
    // The bank gave the buyer the money and the seller has it no more.
    assert.equal(reversed.body.status, "refunded");
    assert.equal((await dealState(db.pool, deal.id)).status, "refunded");
    assert.deepEqual((await dealEvents(db.pool, deal.id)).slice(-2), [
      "completed→completed:payout_reversed_for_dispute",
      "completed→refunded:dispute_lost",
    ]);
    // The dispute's events delivered again change nothing.
    await deliver(setup, double.event("charge.dispute.closed", double.get("dispute", dispute.id)!));
    assert.equal((await dealEvents(db.pool, deal.id)).at(-1), "completed→refunded:dispute_lost");
  },
);

sqlTest(
  "a dispute lost while the payout is being taken back refunds the deal once the reversal is recorded",
  async () => {
    const deal = await completedDeal();
    const dispute = double.disputeCharge(deal.charge);
    await deliver(setup, double.event("charge.dispute.created", dispute));
    const hold = double.holdNext({ method: "POST", path: /^\/v1\/transfers\/[^/]+\/reversals$/ });
    const pending = invoke<SettlementAnswer>(refund, runtime, {
      token: await keys.userToken(setup.admin),
      body: { dealId: deal.id, reverseTransfer: true },
    });
    await hold.reached;
    // The bank decides while the reversal is on its way: the payout still
    // looks paid out, so the webhook only records the loss.
    await deliver(
      setup,
      double.event("charge.dispute.closed", double.closeDispute(dispute.id, "lost")),
    );
    assert.equal((await dealState(db.pool, deal.id)).status, "completed");
    hold.release();
    const reversed = await pending;
    assert.equal(reversed.status, 200, JSON.stringify(reversed.body));
    assert.equal(reversed.body.payout?.status, "reversed");
    assert.equal(reversed.body.status, "refunded");
    assert.deepEqual((await dealEvents(db.pool, deal.id)).slice(-3), [
      "completed→completed:dispute_lost_after_payout",
      "completed→completed:payout_reversed_for_dispute",
      "completed→refunded:dispute_lost",
    ]);
  },
);

sqlTest("a dispute after a refund reaches the admins too", async () => {
  const deal = await payableDeal(setup);
  const refunded = await invoke<SettlementAnswer>(refund, runtime, {
    token: await keys.userToken(setup.admin),
    body: { dealId: deal.id },
  });
  assert.equal(refunded.status, 200, JSON.stringify(refunded.body));
  const charge = (await dealState(db.pool, deal.id)).payproc_charge_id!;
  const dispute = double.disputeCharge(charge);
  await deliver(setup, double.event("charge.dispute.created", dispute));
  assert.deepEqual((await dealEvents(db.pool, deal.id)).slice(-1), [
    "refunded→refunded:dispute_opened_after_refund",
  ]);
  assert.deepEqual(await adminNotices(`dispute:${dispute.id}`), [1, 1]);
});

sqlTest(
  "a dispute that opens between the payout's claim and its transfer stops the transfer: 409, no money moves, the claim is released",
  async () => {
    const deal = await payableDeal(setup);
    // A payout claimed by a call that died before its transfer: the next call resumes it.
    await db.pool.query(
      `insert into public.deal_settlements (deal_id, kind, amount, currency, destination_account)
       select id, 'payout', amount - coalesce(commission, 0), currency, $2
       from public.deals where id = $1`,
      [deal.id, deal.accountId],
    );
    // While the resumed call looks for a transfer at the processor, the dispute arrives.
    const transfersBefore = double.requestsTo("POST", "/v1/transfers").length;
    const hold = double.holdNext({ method: "GET", path: "/v1/transfers" });
    const pending = releasePayout(deal.id);
    await hold.reached;
    const charge = (await dealState(db.pool, deal.id)).payproc_charge_id!;
    const opened = await deliver(
      setup,
      double.event("charge.dispute.created", double.disputeCharge(charge)),
    );
    assert.equal(opened.status, 200);
    hold.release();
    const res = await pending;
    assert.equal(res.status, 409, JSON.stringify(res.body));
    assert.equal(res.body.error?.details?.reason, "disputed");
    assert.equal(double.requestsTo("POST", "/v1/transfers").length, transfersBefore);
    assert.equal((await dealState(db.pool, deal.id)).status, "disputed");
    const { rows } = await db.pool.query(
      "select status, last_error from public.deal_settlements where deal_id = $1 and kind = 'payout'",
      [deal.id],
    );
    assert.equal(rows[0].status, "failed");
    assert.match(rows[0].last_error, /dispute/);
  },
);

sqlTest(
  "a payout that reaches the seller as a dispute opens is recorded and told to admins; the won dispute completes the deal",
  async () => {
    const deal = await payableDeal(setup);
    const charge = (await dealState(db.pool, deal.id)).payproc_charge_id!;
    const hold = double.holdNext({ method: "POST", path: "/v1/transfers" });
    const pending = releasePayout(deal.id);
    await hold.reached;
    const dispute = double.disputeCharge(charge);
    await deliver(setup, double.event("charge.dispute.created", dispute));
    hold.release();
    const paid = await pending;
    assert.equal(paid.status, 200, JSON.stringify(paid.body));
    assert.equal(paid.body.payout?.status, "succeeded");
    assert.equal((await dealState(db.pool, deal.id)).status, "disputed");
    assert.ok(
      (await dealEvents(db.pool, deal.id)).includes(
        "disputed→disputed:payout_released_during_dispute",
      ),
    );
    assert.deepEqual(await adminNotices(`payout-during-dispute:${deal.id}`), [1, 1]);

    await deliver(
      setup,
      double.event("charge.dispute.closed", double.closeDispute(dispute.id, "won")),
    );
    assert.equal((await dealState(db.pool, deal.id)).status, "completed");
    assert.deepEqual((await dealEvents(db.pool, deal.id)).slice(-2), [
      "disputed→in_handover:dispute_won",
      "in_handover→completed:payout_released",
    ]);
  },
);

sqlTest("a dispute on a payment the platform already returned reaches the admins", async () => {
  const deal = await createDeal(db.pool);
  const intentId = await startPayment(setup, deal);
  await moveDeal(db.pool, deal.id, "cancelled");
  const paid = double.setPaymentIntentStatus(intentId, "succeeded");
  await deliver(setup, double.event("payment_intent.succeeded", paid));
  const dispute = double.disputeCharge(paid.latest_charge as string);
  await deliver(setup, double.event("charge.dispute.created", dispute));
  assert.deepEqual((await dealEvents(db.pool, deal.id)).slice(-1), [
    "cancelled→cancelled:dispute_opened_on_stray_payment",
  ]);
  assert.deepEqual(await adminNotices(`dispute:${dispute.id}`), [1, 1]);
});

sqlTest(
  "a payout attempt stopped before its transfer while another call made it: the next attempt finds that transfer, never a second",
  async () => {
    const deal = await payableDeal(setup);
    const { rows: [row] } = await db.pool.query(
      `insert into public.deal_settlements
         (deal_id, kind, status, amount, currency, destination_account, last_error)
       select id, 'payout', 'failed', amount - coalesce(commission, 0), currency, $2,
              'Stopped before the transfer: the buyer''s bank opened a dispute'
       from public.deals where id = $1
       returning amount::text as amount`,
      [deal.id, deal.accountId],
    );
    // The call that resumed attempt 1 at that moment made its transfer, then died.
    const charge = (await dealState(db.pool, deal.id)).payproc_charge_id!;
    const made = await payprocClient(double).transfers.create({
      amount: Math.round(Number(row.amount) * 100),
      currency: "usd",
      destination: deal.accountId,
      source_transaction: charge,
      transfer_group: `deal:${deal.id}`,
      metadata: { deal_id: deal.id, kind: "payout" },
    });
    const transfersBefore = double.requestsTo("POST", "/v1/transfers").length;
    const paid = await releasePayout(deal.id);
    assert.equal(paid.status, 200, JSON.stringify(paid.body));
    assert.equal(paid.body.payout?.status, "succeeded");
    assert.equal(double.requestsTo("POST", "/v1/transfers").length, transfersBefore);
    const { rows } = await db.pool.query(
      "select attempt, payproc_id from public.deal_settlements where deal_id = $1 and kind = 'payout'",
      [deal.id],
    );
    assert.deepEqual(rows[0], { attempt: 2, payproc_id: made.id });
    assert.equal((await dealState(db.pool, deal.id)).status, "completed");
  },
);

sqlTest(
  "the payout taken back for a dispute the platform then wins is paid again once, the admins told; the events again change nothing",
  async () => {
    const deal = await completedDeal();
    const dispute = double.disputeCharge(deal.charge);
    await deliver(setup, double.event("charge.dispute.created", dispute));
    const reversed = await invoke<SettlementAnswer>(refund, runtime, {
      token: await keys.userToken(setup.admin),
      body: { dealId: deal.id, reverseTransfer: true },
    });
    assert.equal(reversed.status, 200, JSON.stringify(reversed.body));
    assert.equal(reversed.body.payout?.status, "reversed");

    const won = double.closeDispute(dispute.id, "won");
    const answers = await Promise.all([
      deliver(setup, double.event("charge.dispute.closed", won)),
      deliver(setup, double.event("charge.dispute.closed", won)),
    ]);
    for (const answer of answers) assert.equal(answer.status, 200, JSON.stringify(answer.body));
    await deliver(setup, double.event("charge.dispute.updated", won));

    const repaid = double.all("transfer").filter((t) =>
      t.metadata?.deal_id === deal.id && t.metadata?.kind === "repayout"
    );
    assert.equal(repaid.length, 1);
    assert.equal(repaid[0]?.amount, 112_500);
    assert.equal(repaid[0]?.destination, deal.accountId);
    assert.ok(
      double.requestsTo("POST", "/v1/transfers").some((r) =>
        r.headers.get("idempotency-key") === `repayout:${deal.id}`
      ),
    );
    const { rows } = await db.pool.query(
      `select status, amount::text as amount from public.deal_settlements
       where deal_id = $1 and kind = 'repayout'`,
      [deal.id],
    );
    assert.deepEqual(rows, [{ status: "succeeded", amount: "1125.00" }]);
    assert.equal((await dealState(db.pool, deal.id)).status, "completed");
    const events = await dealEvents(db.pool, deal.id);
    assert.equal(events.filter((e) => e.endsWith(":payout_owed_after_dispute_won")).length, 1);
    assert.equal(events.filter((e) => e.endsWith(":payout_repaid_after_dispute_won")).length, 1);
    assert.deepEqual(await adminNotices(`repayout:${deal.id}`), [1, 1]);
  },
);
