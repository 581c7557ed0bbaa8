import assert from "node:assert/strict";
import release from "../../../../supabase/functions/release-deal-payout/handler.ts";
import { deliver } from "../../../support/billing.ts";
import { sqlTest } from "../../../support/db.ts";
import {
  createDeal,
  dealEvents,
  dealsSetup,
  dealState,
  payableDeal,
  startPayment,
} from "../../../support/deals.ts";
import { payprocClient } from "../../../support/payproc_double.ts";
import { invoke } from "../../../support/runtime.ts";

const setup = await dealsSetup();
const { db, double, runtime, keys } = setup;
const stripe = payprocClient(double);

interface WebhookAnswer {
  outcome: string;
  detail?: string;
}

function fundings(events: string[]): number {
  return events.filter((e) => e === "pending_payment→funded:payment_succeeded").length;
}

sqlTest(
  "payment_intent.succeeded: replays, concurrent deliveries and a second event about the same intent fund the deal once",
  async () => {
    const deal = await createDeal(db.pool);
    const intentId = await startPayment(setup, deal);
    const intent = double.setPaymentIntentStatus(intentId, "succeeded");
    const event = double.event("payment_intent.succeeded", intent);
    const answers = await Promise.all(
      Array.from({ length: 5 }, () => deliver<WebhookAnswer>(setup, event)),
    );
    assert.deepEqual(answers.map((a) => a.status), [200, 200, 200, 200, 200]);
    assert.equal(answers.filter((a) => a.body.outcome === "applied").length, 1);
    const later = await deliver<WebhookAnswer>(
      setup,
      double.event("payment_intent.succeeded", intent),
    );
    assert.deepEqual(later.body.outcome, "applied");
    assert.equal(later.body.detail, "already up to date");
    const state = await dealState(db.pool, deal.id);
    assert.equal(state.status, "funded");
    assert.equal(state.commission, "125.00");
    assert.equal(state.payproc_charge_id, double.get("payment_intent", intentId)?.latest_charge);
    assert.equal(fundings(await dealEvents(db.pool, deal.id)), 1);
    assert.equal(
      setup.email.sentTo(deal.buyer.email).filter((m) => m.subject === "Payment received").length,
      1,
    );
    assert.equal(
      setup.email.sentTo(deal.seller.email).filter((m) => m.subject === "The buyer has paid")
        .length,
      1,
    );
  },
);

sqlTest(
  "payment_intent.payment_failed: the buyer is told and the deal waits; delivered after the success it changes nothing",
  async () => {
    const deal = await createDeal(db.pool);
    const intentId = await startPayment(setup, deal);
    const failed = double.failPaymentIntent(intentId);
    const res = await deliver<WebhookAnswer>(
      setup,
      double.event("payment_intent.payment_failed", failed),
    );
    assert.equal(res.body.outcome, "applied");
    assert.equal((await dealState(db.pool, deal.id)).status, "pending_payment");
    assert.ok(setup.email.sentTo(deal.buyer.email).some((m) => m.subject === "Payment failed"));
    assert.equal(setup.email.sentTo(deal.seller.email).length, 0);

    // Out of order: the buyer retried and paid; the failure event arrives last.
    const paid = double.setPaymentIntentStatus(intentId, "succeeded");
    const success = double.event("payment_intent.succeeded", paid);
    const stale = double.event("payment_intent.payment_failed", failed);
    await deliver(setup, success);
    const late = await deliver<WebhookAnswer>(setup, stale);
    assert.equal(late.body.detail, "already up to date");
    const row = await db.pool.query(
      "select status, payment_status from public.deals where id = $1",
      [deal.id],
    );
    assert.deepEqual(row.rows[0], { status: "funded", payment_status: "succeeded" });
  },
);

sqlTest(
  "disputes: opened → disputed, won → back in handover, lost → refunded; each replay changes nothing",
  async () => {
    const won = await payableDeal(setup);
    const wonCharge = (await dealState(db.pool, won.id)).payproc_charge_id!;
    const opened = double.disputeCharge(wonCharge);
    const created = double.event("charge.dispute.created", opened);
    assert.equal((await deliver<WebhookAnswer>(setup, created)).body.outcome, "applied");
    assert.equal((await dealState(db.pool, won.id)).status, "disputed");
    const closed = double.event("charge.dispute.closed", double.closeDispute(opened.id, "won"));
    await deliver(setup, closed);
    await deliver(setup, closed);
    // Back where the dispute found it: in the handover.
    assert.equal((await dealState(db.pool, won.id)).status, "in_handover");
    assert.deepEqual((await dealEvents(db.pool, won.id)).slice(-2), [
      "in_handover→disputed:dispute_opened",
      "disputed→in_handover:dispute_won",
    ]);
    // The creation event delivered again: the dispute is closed now, nothing reopens.
    const replay = await deliver<WebhookAnswer>(
      setup,
      double.event("charge.dispute.created", opened),
    );
    assert.equal(replay.body.detail, "already up to date");
    assert.equal((await dealState(db.pool, won.id)).status, "in_handover");

    // Out of order: the closing (lost) arrives before the opening.
    const lost = await payableDeal(setup);
    const lostCharge = (await dealState(db.pool, lost.id)).payproc_charge_id!;
    const dispute = double.disputeCharge(lostCharge);
    const createdLate = double.event("charge.dispute.created", dispute);
    const closedLost = double.event(
      "charge.dispute.closed",
      double.closeDispute(dispute.id, "lost"),
    );
    await deliver(setup, closedLost);
    await deliver(setup, createdLate);
    assert.equal((await dealState(db.pool, lost.id)).status, "refunded");
    assert.deepEqual((await dealEvents(db.pool, lost.id)).slice(-1), [
      "in_handover→refunded:dispute_lost",
    ]);
  },
);

sqlTest(
  "charge.refunded: a refund made at the processor's dashboard refunds the deal once",
  async () => {
    const deal = await payableDeal(setup);
    const made = await stripe.refunds.create({ payment_intent: deal.intentId });
    const charge = double.get("charge", made.charge as string)!;
    const event = double.event("charge.refunded", charge);
    await Promise.all([deliver(setup, event), deliver(setup, event)]);
    assert.equal((await dealState(db.pool, deal.id)).status, "refunded");
    const rows = await db.pool.query(
      "select kind, status, payproc_id from public.deal_settlements where deal_id = $1",
      [deal.id],
    );
    assert.deepEqual(rows.rows, [{ kind: "refund", status: "succeeded", payproc_id: made.id }]);
    assert.equal(
      setup.email.sentTo(deal.buyer.email).filter((m) => m.subject === "Refund issued").length,
      1,
    );
  },
);

sqlTest("transfer.reversed: a payout reversed at the dashboard is marked reversed", async () => {
  const deal = await payableDeal(setup);
  const paid = await invoke<{ payout: { payprocId: string } }>(release, runtime, {
    token: await keys.userToken(setup.admin),
    body: { dealId: deal.id },
  });
  assert.equal(paid.status, 200);
  const { transfer } = double.reverseTransfer(paid.body.payout.payprocId);
  const event = double.event("transfer.reversed", transfer);
  assert.equal((await deliver<WebhookAnswer>(setup, event)).body.detail, "payout reversed");
  const again = await deliver<WebhookAnswer>(setup, double.event("transfer.reversed", transfer));
  assert.equal(again.body.outcome, "applied");
  const row = await db.pool.query(
    "select status, payproc_reversal_id from public.deal_settlements where deal_id = $1",
    [deal.id],
  );
  assert.deepEqual(row.rows[0], {
    status: "reversed",
    payproc_reversal_id: transfer.reversals.data[0]?.id,
  });
});
