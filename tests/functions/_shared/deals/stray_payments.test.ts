import assert from "node:assert/strict";
import runDailyTasks from "../../../../supabase/functions/run-daily-tasks/handler.ts";
import { refundStrayPayment } from "../../../../supabase/functions/_shared/deals/stray_payments.ts";
import { Context } from "../../../../supabase/functions/_shared/platform/context.ts";
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

// ---------------------------------------------------------------------------
// Closed only by a real refund: partial, pending, failed and cancelled refunds
// ---------------------------------------------------------------------------

interface DailyAnswer {
  results: Array<{
    job: string;
    status: string;
    counts?: { changed?: number; items?: Record<string, string[]> };
  }>;
}

/** Runs the daily tasks (forced, so every call runs) and answers the stray-refunds sub-job. */
async function strayRun(slot: string) {
  const run = await invoke<DailyAnswer>(runDailyTasks, runtime, {
    token: keys.schedulerToken,
    body: { slot, force: true },
  });
  assert.equal(run.status, 200, JSON.stringify(run.body));
  const sub = run.body.results.find((r) => r.job === "stray-refunds");
  assert.equal(sub?.status, "succeeded", JSON.stringify(sub));
  return { changed: sub?.counts?.changed ?? 0, items: sub?.counts?.items ?? {} };
}

interface StrayRefundRow {
  status: string;
  payproc_refund_id: string | null;
  payproc_refund_ids: string[];
  refund_round: number;
  last_error: string | null;
}

async function refundStateOf(intentId: string): Promise<StrayRefundRow | undefined> {
  const { rows } = await db.pool.query<StrayRefundRow>(
    `select status, payproc_refund_id, payproc_refund_ids, refund_round, last_error
     from public.deal_stray_payments where payproc_payment_intent_id = $1`,
    [intentId],
  );
  return rows[0];
}

/** The idempotency keys of the refunds the server asked the processor for, about `intentId`. */
function refundKeysOf(intentId: string): string[] {
  return double.requestsTo("POST", "/v1/refunds")
    .map((r) => r.headers.get("idempotency-key") ?? "")
    .filter((key) => key.includes(intentId));
}

/**
 * A stray payment (its deal cancelled) whose refund did not happen when it
 * was found (the processor's refund list was down): `pending`, no refund.
 */
async function unrefundedStray() {
  const deal = await createDeal(db.pool);
  const intentId = await startPayment(setup, deal);
  await moveDeal(db.pool, deal.id, "cancelled");
  const paid = double.setPaymentIntentStatus(intentId, "succeeded");
  double.failNext({ method: "GET", path: "/v1/refunds", status: 500, times: 2 });
  await deliver(setup, double.event("payment_intent.succeeded", paid));
  assert.equal((await strayOf(intentId))?.status, "pending");
  assert.equal(refundsOf(intentId).length, 0);
  return { deal, intentId, chargeId: paid.latest_charge as string };
}

/** A stray payment (its deal cancelled) found by the webhook, which refunded it at once. */
async function strayFound() {
  const deal = await createDeal(db.pool);
  const intentId = await startPayment(setup, deal);
  await moveDeal(db.pool, deal.id, "cancelled");
  const paid = double.setPaymentIntentStatus(intentId, "succeeded");
  await deliver(setup, double.event("payment_intent.succeeded", paid));
  return { deal, intentId, chargeId: paid.latest_charge as string };
}

const ctx = () => new Context(runtime, crypto.randomUUID(), runtime.log);

sqlTest(
  "a partial refund made in the dashboard does not close a stray payment: one refund of the rest does, however many callers race",
  async () => {
    const { deal, intentId, chargeId } = await unrefundedStray();
    const partial = await stripe.refunds.create({ payment_intent: intentId, amount: 50_000 });
    // Its charge.refunded closes nothing: the buyer has not got the whole payment back.
    await deliver(setup, double.event("charge.refunded", double.get("charge", chargeId)!));
    assert.equal((await strayOf(intentId))?.status, "pending");
    assert.deepEqual(await noticesOf([deal.buyer.id], `stray-refund:${intentId}`), [0]);

    const outcomes = await Promise.all(
      Array.from({ length: 10 }, () => refundStrayPayment(ctx(), intentId)),
    );
    assert.equal(outcomes.filter((o) => o.result === "refunded").length, 1);
    assert.ok(outcomes.every((o) => ["refunded", "already_done"].includes(o.result)));
    const refunds = refundsOf(intentId);
    assert.deepEqual(refunds.map((r) => [r.amount, r.status]), [
      [75_000, "succeeded"],
      [50_000, "succeeded"],
    ]);
    // Every caller that asked used the rest's key: the processor made one refund.
    const keys = refundKeysOf(intentId);
    assert.ok(keys.length >= 1);
    assert.deepEqual([...new Set(keys)], [`stray-refund-rest:${intentId}`]);
    const rest = refunds[0]!;
    assert.equal(rest.metadata?.kind, "stray_payment");
    const row = await refundStateOf(intentId);
    assert.equal(row?.status, "refunded");
    assert.equal(row?.payproc_refund_id, rest.id);
    assert.deepEqual([...row!.payproc_refund_ids].sort(), [rest.id, partial.id].sort());
    assert.deepEqual(await noticesOf([deal.buyer.id], `stray-refund:${intentId}`), [1]);
    assert.equal(
      (await dealEvents(db.pool, deal.id)).filter((e) => e.endsWith(":stray_payment_refunded"))
        .length,
      1,
    );
    // Nothing more to do for anyone.
    assert.equal((await refundStrayPayment(ctx(), intentId)).result, "already_done");
    assert.equal(refundsOf(intentId).length, 2);
  },
);

sqlTest(
  "a pending refund does not close a stray payment: refund_pending until the processor says succeeded, then the daily run closes it once",
  async () => {
    double.setNewRefundStatus("pending");
    let found;
    try {
      found = await strayFound();
    } finally {
      double.setNewRefundStatus("succeeded");
    }
    const { deal, intentId, chargeId } = found;
    const [refund] = refundsOf(intentId);
    assert.equal(refund?.status, "pending");
    const waiting = await refundStateOf(intentId);
    assert.equal(waiting?.status, "refund_pending");
    assert.equal(waiting?.payproc_refund_id, refund!.id);
    assert.deepEqual(refundKeysOf(intentId), [`stray-refund:${intentId}`]);
    // The processor counts a pending refund on its charge (refunded: true): charge.refunded
    // must still not tell the buyer.
    assert.equal(double.get("charge", chargeId)?.refunded, true);
    await deliver(setup, double.event("charge.refunded", double.get("charge", chargeId)!));
    assert.equal((await strayOf(intentId))?.status, "refund_pending");
    assert.deepEqual(await noticesOf([deal.buyer.id], `stray-refund:${intentId}`), [0]);
    assert.ok(
      !(await dealEvents(db.pool, deal.id)).includes("cancelled→cancelled:stray_payment_refunded"),
    );

    // The daily run looks, finds it still pending, and makes no other refund.
    const still = await strayRun(`pending-${intentId}-1`);
    assert.equal(still.items.refunded, undefined);
    assert.equal((await strayOf(intentId))?.status, "refund_pending");
    assert.equal(refundsOf(intentId).length, 1);

    // The processor decides: the next runs (two at once, then another) close it once.
    double.setRefundStatus(refund!.id, "succeeded");
    const runs = await Promise.all([
      invoke<DailyAnswer>(runDailyTasks, runtime, {
        token: keys.schedulerToken,
        body: { slot: `pending-${intentId}-2a`, force: true },
      }),
      invoke<DailyAnswer>(runDailyTasks, runtime, {
        token: keys.schedulerToken,
        body: { slot: `pending-${intentId}-2b`, force: true },
      }),
    ]);
    assert.deepEqual(runs.map((r) => r.status), [200, 200]);
    const closed = runs.flatMap((r) =>
      r.body.results.find((s) => s.job === "stray-refunds")?.counts?.items?.refunded ?? []
    );
    assert.deepEqual(closed, [intentId]);
    const row = await refundStateOf(intentId);
    assert.equal(row?.status, "refunded");
    assert.equal(row?.payproc_refund_id, refund!.id);
    assert.equal((await strayRun(`pending-${intentId}-3`)).changed, 0);
    assert.equal(refundsOf(intentId).length, 1);
    assert.deepEqual(await noticesOf([deal.buyer.id], `stray-refund:${intentId}`), [1]);
    assert.deepEqual(
      await noticesOf(admins.map((a) => a.id), `stray-refund:${intentId}`),
      [1, 1],
    );
  },
);

sqlTest(
  "an admin's refund by hand that is pending waits; charge.refund.updated closes it when it succeeds, however often it arrives",
  async () => {
    const deal = await createDeal(db.pool);
    const intentId = await startPayment(setup, deal);
    await moveDeal(db.pool, deal.id, "cancelled");
    const paid = double.setPaymentIntentStatus(intentId, "succeeded");
    double.failNext({
      method: "POST",
      path: "/v1/refunds",
      status: 400,
      body: { error: { type: "invalid_request_error", message: "Refunds are disabled." } },
    });
    await deliver(setup, double.event("payment_intent.succeeded", paid));
    assert.equal((await strayOf(intentId))?.status, "failed");

    double.setNewRefundStatus("pending");
    const manual = await stripe.refunds.create({ payment_intent: intentId });
    double.setNewRefundStatus("succeeded");
    const charge = double.get("charge", paid.latest_charge as string)!;
    await deliver(setup, double.event("charge.refunded", charge));
    assert.equal((await strayOf(intentId))?.status, "refund_pending");
    assert.deepEqual(await noticesOf([deal.buyer.id], `stray-refund:${intentId}`), [0]);

    // An event saying "succeeded" about a refund that is still pending changes nothing:
    // the handler reads the refund from the processor.
    const lying = await deliver<WebhookAnswer>(
      setup,
      double.event("charge.refund.updated", {
        ...double.get("refund", manual.id)!,
        status: "succeeded",
      }),
    );
    assert.equal(lying.body.outcome, "applied");
    assert.equal((await strayOf(intentId))?.status, "refund_pending");

    const succeeded = double.event(
      "charge.refund.updated",
      double.setRefundStatus(manual.id, "succeeded"),
    );
    const answers = await Promise.all([
      deliver<WebhookAnswer>(setup, succeeded),
      deliver(setup, succeeded),
    ]);
    assert.deepEqual(answers.map((a) => a.status), [200, 200]);
    await deliver(setup, double.event("charge.refund.updated", double.get("refund", manual.id)!));
    const row = await refundStateOf(intentId);
    assert.equal(row?.status, "refunded");
    assert.equal(row?.payproc_refund_id, manual.id);
    assert.deepEqual(await noticesOf([deal.buyer.id], `stray-refund:${intentId}`), [1]);
    assert.equal(refundsOf(intentId).length, 1);
  },
);

sqlTest(
  "a refund that fails after it succeeded reopens the stray payment: the admins are told once, the daily run refunds it again once with a new key",
  async () => {
    const { deal, intentId } = await strayFound();
    const [first] = refundsOf(intentId);
    assert.equal((await strayOf(intentId))?.status, "refunded");
    const before = double.event("charge.refund.updated", double.get("refund", first!.id)!);

    const failed = double.setRefundStatus(first!.id, "failed");
    const event = double.event("refund.failed", failed);
    const updated = double.event("charge.refund.updated", failed);
    const answers = await Promise.all([
      deliver<WebhookAnswer>(setup, event),
      deliver<WebhookAnswer>(setup, updated),
      deliver<WebhookAnswer>(setup, event),
    ]);
    assert.deepEqual(answers.map((a) => a.status), [200, 200, 200]);
    // Out of order: the event of when it had succeeded arrives last, and reopens nothing
    // nor closes it again.
    await deliver(setup, before);

    const reopened = await refundStateOf(intentId);
    assert.equal(reopened?.status, "pending");
    assert.equal(reopened?.refund_round, 2);
    assert.equal(reopened?.payproc_refund_id, null);
    assert.match(reopened?.last_error ?? "", new RegExp(`${first!.id} failed`));
    assert.equal(
      (await dealEvents(db.pool, deal.id)).filter((e) =>
        e.endsWith(":stray_payment_refund_reversed")
      )
        .length,
      1,
    );
    const key = `stray-refund-reversed:${first!.id}`;
    assert.deepEqual(await noticesOf(admins.map((a) => a.id), key), [1, 1]);
    for (const admin of admins) {
      assert.equal(
        setup.email.sentTo(admin.email).filter((m) => m.subject.startsWith("Refund failed:"))
          .length,
        1,
      );
    }
    assert.equal(
      (await emailLogs(db.pool, "admin_payment_return_reversed")).filter((l) =>
        l.subject.startsWith("Refund failed:")
      ).length >= 2,
      true,
    );
    // The webhook does not refund again by itself: the daily run does.
    assert.equal(refundsOf(intentId).length, 1);

    const run = await strayRun(`reopened-${intentId}`);
    assert.deepEqual(run.items.refunded, [intentId]);
    const refunds = refundsOf(intentId);
    assert.equal(refunds.length, 2);
    const second = refunds.find((r) => r.id !== first!.id)!;
    assert.equal(second.status, "succeeded");
    assert.equal(second.amount, 125_000);
    assert.deepEqual(refundKeysOf(intentId), [
      `stray-refund:${intentId}`,
      `stray-refund:${intentId}:2`,
    ]);
    const row = await refundStateOf(intentId);
    assert.equal(row?.status, "refunded");
    assert.equal(row?.payproc_refund_id, second.id);
    // The buyer hears of the new refund once, under the round's key.
    assert.deepEqual(await noticesOf([deal.buyer.id], `stray-refund:${intentId}:2`), [1]);

    // Replays, and another run, change nothing.
    await deliver(setup, event);
    await deliver(setup, double.event("refund.failed", double.get("refund", first!.id)!));
    assert.equal((await strayRun(`reopened-${intentId}-again`)).changed, 0);
    assert.equal(refundsOf(intentId).length, 2);
    assert.equal((await strayOf(intentId))?.status, "refunded");
    assert.deepEqual(await noticesOf(admins.map((a) => a.id), key), [1, 1]);
  },
);

sqlTest(
  "a pending refund that fails without its webhook: the daily run notices, tells the admins and refunds again in the same run",
  async () => {
    double.setNewRefundStatus("pending");
    let found;
    try {
      found = await strayFound();
    } finally {
      double.setNewRefundStatus("succeeded");
    }
    const { intentId } = found;
    const [first] = refundsOf(intentId);
    assert.equal((await strayOf(intentId))?.status, "refund_pending");
    double.setRefundStatus(first!.id, "canceled");

    const run = await strayRun(`cancelled-${intentId}`);
    assert.deepEqual(run.items.reversed, [intentId]);
    assert.deepEqual(run.items.refunded, [intentId]);
    assert.deepEqual(
      await noticesOf(admins.map((a) => a.id), `stray-refund-reversed:${first!.id}`),
      [1, 1],
    );
    assert.deepEqual(refundKeysOf(intentId), [
      `stray-refund:${intentId}`,
      `stray-refund:${intentId}:2`,
    ]);
    assert.equal((await refundStateOf(intentId))?.status, "refunded");
    assert.equal((await strayRun(`cancelled-${intentId}-again`)).changed, 0);
    assert.equal(refundsOf(intentId).length, 2);
  },
);

sqlTest(
  "a failed and a cancelled refund at the processor do not count as the stray payment's refund: a new one is made",
  async () => {
    const { deal, intentId } = await unrefundedStray();
    // Two attempts in the dashboard that came to nothing.
    double.setNewRefundStatus("pending");
    const failed = await stripe.refunds.create({ payment_intent: intentId });
    double.setRefundStatus(failed.id, "failed");
    double.setNewRefundStatus("requires_action");
    const cancelled = await stripe.refunds.create({ payment_intent: intentId });
    await stripe.refunds.cancel(cancelled.id);
    double.setNewRefundStatus("succeeded");
    // Their events reach a stray payment that never counted on them: no alert.
    await deliver(setup, double.event("refund.failed", double.get("refund", failed.id)!));
    await deliver(
      setup,
      double.event("charge.refund.updated", double.get("refund", cancelled.id)!),
    );
    assert.equal((await strayOf(intentId))?.status, "pending");

    const run = await strayRun(`dead-refunds-${intentId}`);
    assert.deepEqual(run.items.refunded, [intentId]);
    const made = refundsOf(intentId).filter((r) => r.id !== failed.id && r.id !== cancelled.id);
    assert.equal(made.length, 1);
    assert.equal(made[0]!.status, "succeeded");
    assert.equal(made[0]!.amount, 125_000);
    assert.deepEqual(refundKeysOf(intentId), [`stray-refund:${intentId}`]);
    const row = await refundStateOf(intentId);
    assert.equal(row?.status, "refunded");
    assert.equal(row?.payproc_refund_id, made[0]!.id);
    assert.deepEqual(row?.payproc_refund_ids, [made[0]!.id]);
    assert.ok(
      !(await dealEvents(db.pool, deal.id)).includes(
        "cancelled→cancelled:stray_payment_refund_reversed",
      ),
    );
    for (const id of [failed.id, cancelled.id]) {
      assert.deepEqual(await noticesOf(admins.map((a) => a.id), `stray-refund-reversed:${id}`), [
        0,
        0,
      ]);
    }
  },
);

sqlTest(
  "our refund that failed before it was recorded (the process ended) uses up its key: the next round's key makes a new one",
  async () => {
    const { deal, intentId } = await unrefundedStray();
    // The refund the ended process made, with its key and its metadata, failed since.
    const lost = await stripe.refunds.create(
      {
        payment_intent: intentId,
        reason: "requested_by_customer",
        metadata: { deal_id: deal.id, kind: "stray_payment", reason: "deal_cancelled" },
      },
      { idempotencyKey: `stray-refund:${intentId}` },
    );
    double.setRefundStatus(lost.id, "failed");

    const run = await strayRun(`lost-${intentId}`);
    assert.deepEqual(run.items.reversed, [intentId]);
    assert.deepEqual(run.items.refunded, [intentId]);
    const made = refundsOf(intentId).find((r) => r.id !== lost.id);
    assert.equal(made?.status, "succeeded");
    const row = await refundStateOf(intentId);
    assert.equal(row?.status, "refunded");
    assert.equal(row?.refund_round, 2);
    assert.equal(row?.payproc_refund_id, made!.id);
    assert.deepEqual(
      await noticesOf(admins.map((a) => a.id), `stray-refund-reversed:${lost.id}`),
      [1, 1],
    );
  },
);
