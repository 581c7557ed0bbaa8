import assert from "node:assert/strict";
import runDailyTasks from "../../../../supabase/functions/run-daily-tasks/handler.ts";
import { deliver } from "../../../support/billing.ts";
import { sqlTest } from "../../../support/db.ts";
import {
  createDeal,
  dealEvents,
  dealsSetup,
  dealState,
  moveDeal,
  startCheckout,
  startPayment,
} from "../../../support/deals.ts";
import { emailLogs, notificationsOf } from "../../../support/notifications.ts";
import { payprocClient } from "../../../support/payproc_double.ts";
import { invoke } from "../../../support/runtime.ts";
import { createUser } from "../../../support/sql.ts";

const setup = await dealsSetup();
const { db, double, runtime, keys } = setup;
const stripe = payprocClient(double);
const secondAdmin = await createUser(db.pool, { admin: true });
const admins = [setup.admin, secondAdmin];

interface WebhookAnswer {
  outcome: string;
  detail?: string;
}

interface StrayRow {
  status: string;
  reason: string;
  amount: string;
  payproc_refund_id: string | null;
  attempts: number;
  last_error: string | null;
}

async function strayOf(intentId: string): Promise<StrayRow | undefined> {
  const { rows } = await db.pool.query<StrayRow>(
    `select status, reason, amount::text as amount, payproc_refund_id, attempts, last_error
     from public.deal_stray_payments where payproc_payment_intent_id = $1`,
    [intentId],
  );
  return rows[0];
}

/** Refunds the processor holds for a payment intent. */
function refundsOf(intentId: string) {
  return double.all("refund").filter((r) => r.payment_intent === intentId);
}

/** The notices of `type` each of `users` got with `key` prefix, in-app and by e-mail. */
async function noticesOf(userIds: string[], dedupeKey: string): Promise<number[]> {
  const counts = [];
  for (const userId of userIds) {
    counts.push(
      (await notificationsOf(db.pool, userId)).filter((n) => n.dedupe_key === dedupeKey).length,
    );
  }
  return counts;
}

sqlTest(
  "a payment that succeeds on a cancelled deal is refunded once, however often and however concurrently its event arrives",
  async () => {
    const deal = await createDeal(db.pool);
    const intentId = await startPayment(setup, deal);
    // Cancelled in SQL by the service (the way deals were cancelled before cancel-deal).
    await moveDeal(db.pool, deal.id, "cancelled");
    const paid = double.setPaymentIntentStatus(intentId, "succeeded");
    const event = double.event("payment_intent.succeeded", paid);
    const answers = await Promise.all(
      Array.from({ length: 5 }, () => deliver<WebhookAnswer>(setup, event)),
    );
    assert.deepEqual(answers.map((a) => a.status), [200, 200, 200, 200, 200]);
    assert.equal(answers.filter((a) => a.body.outcome === "applied").length, 1);
    // A new delivery of another event about the same payment, and a replay.
    await deliver(setup, double.event("payment_intent.succeeded", paid));
    await deliver(setup, event);

    assert.equal(refundsOf(intentId).length, 1);
    assert.equal(double.requestsTo("POST", "/v1/refunds").length, 1);
    const row = await strayOf(intentId);
    assert.equal(row?.status, "refunded");
    assert.equal(row?.reason, "deal_cancelled");
    assert.equal(row?.amount, "1250.00");
    assert.equal(row?.payproc_refund_id, refundsOf(intentId)[0]!.id);
    // The deal stays cancelled and keeps no trace of the payment in its own columns.
    const state = await dealState(db.pool, deal.id);
    assert.equal(state.status, "cancelled");
    assert.equal(state.payproc_charge_id, null);
    assert.deepEqual((await dealEvents(db.pool, deal.id)).slice(-2), [
      "cancelled→cancelled:stray_payment_received",
      "cancelled→cancelled:stray_payment_refunded",
    ]);
    // The buyer and every admin are told once, in-app and by e-mail.
    const key = `stray-refund:${intentId}`;
    assert.deepEqual(await noticesOf([deal.buyer.id, ...admins.map((a) => a.id)], key), [1, 1, 1]);
    assert.equal(
      setup.email.sentTo(deal.buyer.email).filter((m) => m.subject.startsWith("Refund of")).length,
      1,
    );
    for (const admin of admins) {
      assert.equal(
        setup.email.sentTo(admin.email).filter((m) => m.subject.startsWith("Payment returned"))
          .length,
        1,
      );
    }
  },
);

sqlTest("a hosted checkout paid after its deal was cancelled is refunded once", async () => {
  const deal = await createDeal(db.pool);
  const sessionId = await startCheckout(setup, deal);
  await moveDeal(db.pool, deal.id, "cancelled");
  const { session } = double.completeCheckout(sessionId);
  const event = double.event("checkout.session.completed", session);
  await Promise.all([deliver(setup, event), deliver(setup, event)]);
  const intentId = session.payment_intent as string;
  assert.equal(refundsOf(intentId).length, 1);
  assert.equal((await strayOf(intentId))?.status, "refunded");
  assert.equal((await dealState(db.pool, deal.id)).status, "cancelled");
});

sqlTest(
  "a second payment of a funded deal — a checkout and an intent both paid — is refunded; the deal keeps the first",
  async () => {
    const deal = await createDeal(db.pool);
    const sessionId = await startCheckout(setup, deal);
    // The race this guards: the checkout was paid at the processor while the
    // buyer also paid an intent (stored on the deal beside the session).
    const second = await stripe.paymentIntents.create({
      amount: 125000,
      currency: "usd",
      metadata: { deal_id: deal.id },
    });
    await db.pool.query("update public.deals set payproc_payment_intent_id = $2 where id = $1", [
      deal.id,
      second.id,
    ]);
    const first = double.setPaymentIntentStatus(second.id, "succeeded");
    assert.equal(
      (await deliver<WebhookAnswer>(setup, double.event("payment_intent.succeeded", first))).status,
      200,
    );
    assert.equal((await dealState(db.pool, deal.id)).status, "funded");
    const fundedCharge = (await dealState(db.pool, deal.id)).payproc_charge_id;

    const { session } = double.completeCheckout(sessionId);
    const late = await deliver<WebhookAnswer>(
      setup,
      double.event("checkout.session.completed", session),
    );
    assert.equal(late.body.outcome, "applied");
    const intentId = session.payment_intent as string;
    assert.equal((await strayOf(intentId))?.reason, "deal_already_paid");
    assert.equal((await strayOf(intentId))?.status, "refunded");
    assert.equal(refundsOf(intentId).length, 1);
    assert.equal(refundsOf(second.id).length, 0, "the payment that funded the deal stays");
    const state = await dealState(db.pool, deal.id);
    assert.equal(state.status, "funded");
    assert.equal(state.payproc_charge_id, fundedCharge);
  },
);

sqlTest(
  "an intent that is not the deal's (replaced) or not for its amount is refunded when it succeeds, and funds nothing",
  async () => {
    const deal = await createDeal(db.pool);
    await startPayment(setup, deal);
    const stranger = await stripe.paymentIntents.create({
      amount: 125000,
      currency: "usd",
      metadata: { deal_id: deal.id },
    });
    const paid = double.setPaymentIntentStatus(stranger.id, "succeeded");
    await deliver(setup, double.event("payment_intent.succeeded", paid));
    assert.equal((await strayOf(stranger.id))?.reason, "not_the_deal_payment");
    assert.equal(refundsOf(stranger.id).length, 1);

    const other = await createDeal(db.pool);
    const intentId = await startPayment(setup, other);
    await stripe.paymentIntents.update(intentId, { amount: 100 });
    const cheap = double.setPaymentIntentStatus(intentId, "succeeded");
    await deliver(setup, double.event("payment_intent.succeeded", cheap));
    assert.equal((await strayOf(intentId))?.reason, "amount_mismatch");
    assert.equal((await strayOf(intentId))?.amount, "1.00");
    assert.equal((await dealState(db.pool, deal.id)).status, "pending_payment");
    assert.equal((await dealState(db.pool, other.id)).status, "pending_payment");
    // A payment whose deal does not exist here (another environment on the
    // same processor account) is not ours to refund.
    const foreign = await stripe.paymentIntents.create({
      amount: 5000,
      currency: "usd",
      metadata: { deal_id: crypto.randomUUID() },
    });
    const foreignPaid = double.setPaymentIntentStatus(foreign.id, "succeeded");
    const skipped = await deliver<WebhookAnswer>(
      setup,
      double.event("payment_intent.succeeded", foreignPaid),
    );
    assert.equal(skipped.body.outcome, "skipped");
    assert.equal(refundsOf(foreign.id).length, 0);
  },
);

sqlTest(
  "processor down when refunding: the payment stays pending, the daily stray-refunds sub-job refunds it once",
  async () => {
    const deal = await createDeal(db.pool);
    const intentId = await startPayment(setup, deal);
    await moveDeal(db.pool, deal.id, "cancelled");
    const paid = double.setPaymentIntentStatus(intentId, "succeeded");
    double.failNext({ method: "GET", path: "/v1/refunds", status: 500, times: 2 });
    const answer = await deliver<WebhookAnswer>(
      setup,
      double.event("payment_intent.succeeded", paid),
    );
    // The event is recorded; the refund waits for the job.
    assert.equal(answer.status, 200);
    assert.equal(answer.body.outcome, "applied");
    const pending = await strayOf(intentId);
    assert.equal(pending?.status, "pending");
    assert.equal(pending?.attempts, 1);
    assert.ok(pending?.last_error);
    assert.equal(refundsOf(intentId).length, 0);

    const run = await invoke<{ results: Array<{ job: string; status: string; counts?: unknown }> }>(
      runDailyTasks,
      runtime,
      { token: keys.schedulerToken, body: { slot: `stray-${intentId}` } },
    );
    assert.equal(run.status, 200, JSON.stringify(run.body));
    const sub = run.body.results.find((r) => r.job === "stray-refunds");
    assert.equal(sub?.status, "succeeded");
    assert.deepEqual((sub?.counts as { items?: Record<string, string[]> }).items?.refunded, [
      intentId,
    ]);
    assert.equal((await strayOf(intentId))?.status, "refunded");
    assert.equal(refundsOf(intentId).length, 1);

    // A second run finds nothing to do.
    const again = await invoke<{ results: Array<{ job: string; counts?: { changed?: number } }> }>(
      runDailyTasks,
      runtime,
      { token: keys.schedulerToken, body: { slot: `stray-${intentId}`, force: true } },
    );
    assert.equal(again.body.results.find((r) => r.job === "stray-refunds")?.counts?.changed, 0);
    assert.equal(refundsOf(intentId).length, 1);
  },
);

sqlTest(
  "a refund the processor refuses is marked failed and the admins are asked to refund by hand; their refund then completes it",
  async () => {
    const deal = await createDeal(db.pool);
    const intentId = await startPayment(setup, deal);
    await moveDeal(db.pool, deal.id, "cancelled");
    const paid = double.setPaymentIntentStatus(intentId, "succeeded");
    double.failNext({
      method: "POST",
      path: "/v1/refunds",
      status: 400,
      body: {
        error: { type: "invalid_request_error", message: "Refunds are disabled on this account." },
      },
    });
    await deliver(setup, double.event("payment_intent.succeeded", paid));
    const failed = await strayOf(intentId);
    assert.equal(failed?.status, "failed");
    assert.match(failed?.last_error ?? "", /Refunds are disabled/);
    assert.deepEqual(
      await noticesOf(admins.map((a) => a.id), `stray-refund-failed:${intentId}`),
      [1, 1],
    );
    assert.equal(
      (await emailLogs(db.pool, "admin_payment_return_failed")).filter((l) =>
        l.subject.includes("by hand")
      ).length,
      2,
    );
    assert.ok((await dealEvents(db.pool, deal.id)).includes(
      "cancelled→cancelled:stray_payment_refund_failed",
    ));
    // The daily job does not retry a refusal.
    assert.equal(
      (await db.pool.query(
        "select count(*)::int as n from public.deal_stray_payments where status = 'pending'",
      )).rows[0].n,
      0,
    );

    // An admin refunds it in the processor's dashboard: charge.refunded completes it.
    const made = await stripe.refunds.create({ payment_intent: intentId });
    const charge = double.get("charge", made.charge as string)!;
    await deliver(setup, double.event("charge.refunded", charge));
    const done = await strayOf(intentId);
    assert.equal(done?.status, "refunded");
    assert.equal(done?.payproc_refund_id, made.id);
    assert.deepEqual(await noticesOf([deal.buyer.id], `stray-refund:${intentId}`), [1]);
  },
);
