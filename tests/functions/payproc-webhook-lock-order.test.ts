/**
 * The lock order of a deal's money (`_shared/deals/deal_rows.ts`): the
 * webhook event's ledger row, the deal row, its stray payment and settlement
 * rows, then its deal events. Many deliveries of one payment race each other
 * and the paths that settle its stray payment — the refund after the
 * request, the daily `stray-refunds` sub-job, `charge.refunded`, a refusal —
 * through the real `payproc-webhook` handler with signed requests: no
 * delivery may fail (a deadlock is a 500 the processor retries), and the
 * payment is recorded, told and refunded once.
 *
 * Each race runs a few rounds on new deals: a deadlock needs two
 * transactions to meet in a narrow window.
 *
 * @module
 */
import assert from "node:assert/strict";
import runDailyTasks from "../../supabase/functions/run-daily-tasks/handler.ts";
import { refundStrayPayment } from "../../supabase/functions/_shared/deals/stray_payments.ts";
import { Context } from "../../supabase/functions/_shared/platform/context.ts";
import { countRows, deliver, payprocEnv } from "../support/billing.ts";
import { sqlTest } from "../support/db.ts";
import {
  createDeal,
  dealEvents,
  dealsSetup,
  moveDeal,
  startPayment,
  type TestDeal,
} from "../support/deals.ts";
import { emailEnv } from "../support/notifications.ts";
import { payprocClient, type PayprocPaymentIntent } from "../support/payproc_double.ts";
import { type Invocation, invoke, testRuntime } from "../support/runtime.ts";

const setup = await dealsSetup();
const { db, double, keys } = setup;
const stripe = payprocClient(double);

/** The error lines the runtime logs: what a 500 (or a failed task after the request) was. */
const errors: string[] = [];
const runtime = await testRuntime(
  db,
  { ...payprocEnv(double), ...emailEnv(setup.email), LOG_LEVEL: "error" },
  { logSink: (_level, line) => errors.push(line) },
);
const ctx = () => new Context(runtime, crypto.randomUUID(), runtime.log);

/** Rounds of each race. */
const ROUNDS = 3;
/** Deliveries in each race. */
const DELIVERIES = 20;

interface WebhookAnswer {
  outcome?: string;
  detail?: string;
  error?: { code: string; message: string };
}

/** Delivers `event` through payproc-webhook, signed, on the logging runtime. */
function send(event: object): Promise<Invocation<WebhookAnswer>> {
  return deliver<WebhookAnswer>(setup, event, { runtime });
}

/** Every answer 200, and nothing logged as an error (a deadlock in a task after the request too). */
function assertAllAnswered(answers: Invocation<WebhookAnswer>[]): void {
  const failed = answers.filter((a) => a.status !== 200).map((a) => [a.status, a.body]);
  assert.deepEqual(failed, [], errors.join("\n"));
  assert.deepEqual(errors, []);
}

/** A deal pending payment, cancelled, whose payment intent then succeeds at the processor. */
async function cancelledDealPaid(): Promise<{ deal: TestDeal; paid: PayprocPaymentIntent }> {
  const deal = await createDeal(db.pool);
  const intentId = await startPayment(setup, deal);
  await moveDeal(db.pool, deal.id, "cancelled");
  return { deal, paid: double.setPaymentIntentStatus(intentId, "succeeded") };
}

function strayRows(intentId: string): Promise<number> {
  return countRows(db.pool, "public.deal_stray_payments", "payproc_payment_intent_id = $1", [
    intentId,
  ]);
}

async function strayStatus(intentId: string): Promise<string | undefined> {
  const { rows } = await db.pool.query<{ status: string }>(
    "select status from public.deal_stray_payments where payproc_payment_intent_id = $1",
    [intentId],
  );
  return rows[0]?.status;
}

/** How many of the deal's events have cause `cause`. */
async function eventsOf(dealId: string, cause: string): Promise<number> {
  return (await dealEvents(db.pool, dealId)).filter((e) => e.endsWith(`:${cause}`)).length;
}

function refundsOf(intentId: string) {
  return double.all("refund").filter((r) => r.payment_intent === intentId);
}

/**
 * A stray payment whose refund did not happen when it was found (the
 * processor's refund list was down): `pending`, no refund yet.
 */
async function unrefundedStray() {
  const { deal, paid } = await cancelledDealPaid();
  double.failNext({ method: "GET", path: "/v1/refunds", status: 500, times: 2 });
  assert.equal((await deliver(setup, double.event("payment_intent.succeeded", paid))).status, 200);
  assert.equal(await strayStatus(paid.id), "pending");
  errors.length = 0; // the refund after that request failed, as it should
  return { deal, paid };
}

sqlTest(
  `payproc-webhook: ${DELIVERIES} identical deliveries of payment_intent.succeeded for a cancelled deal at once: no 5xx, one stray payment, one deal event, one refund`,
  async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const { deal, paid } = await cancelledDealPaid();
      const event = double.event("payment_intent.succeeded", paid);
      errors.length = 0;
      const answers = await Promise.all(Array.from({ length: DELIVERIES }, () => send(event)));
      assertAllAnswered(answers);
      assert.deepEqual(
        answers.map((a) => a.body.outcome).sort(),
        ["applied", ...Array(DELIVERIES - 1).fill("duplicate")],
      );
      assert.equal(await strayRows(paid.id), 1);
      assert.equal(await eventsOf(deal.id, "stray_payment_received"), 1);
      assert.equal(refundsOf(paid.id).length, 1);
      assert.equal(await strayStatus(paid.id), "refunded");
    }
  },
);

sqlTest(
  `payproc-webhook: ${DELIVERIES} deliveries of one payment at once — copies of one event and events of their own — race its refund without a deadlock`,
  async () => {
    // The deadlock of the report: a delivery holds the deal and waits to
    // insert the stray payment row, which the refund after the first
    // delivery has updated and holds while it records the deal event
    // `stray_payment_refunded`, which waits for the deal. The window is
    // narrow: more rounds.
    for (let round = 0; round < 3 * ROUNDS; round++) {
      const { deal, paid } = await cancelledDealPaid();
      const event = double.event("payment_intent.succeeded", paid);
      errors.length = 0;
      const answers = await Promise.all(
        Array.from(
          { length: DELIVERIES },
          (_, i) => send(i % 2 === 0 ? event : double.event("payment_intent.succeeded", paid)),
        ),
      );
      assertAllAnswered(answers);
      assert.equal(
        answers.filter((a) => a.body.detail?.includes("cannot take this payment")).length,
        1,
      );
      assert.equal(await strayRows(paid.id), 1);
      assert.equal(await eventsOf(deal.id, "stray_payment_received"), 1);
      assert.equal(await eventsOf(deal.id, "stray_payment_refunded"), 1);
      assert.equal(refundsOf(paid.id).length, 1);
      assert.equal(await strayStatus(paid.id), "refunded");
    }
  },
);

sqlTest(
  "payproc-webhook: charge.refunded of a stray payment and the daily stray-refunds sub-job race new deliveries of the payment without a deadlock",
  async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const { deal, paid } = await unrefundedStray();
      // An admin refunds it in the processor's dashboard meanwhile.
      const manual = await stripe.refunds.create({ payment_intent: paid.id });
      const charge = double.get("charge", manual.charge as string)!;
      const [answers, daily, direct] = await Promise.all([
        Promise.all(
          Array.from(
            { length: DELIVERIES },
            (_, i) =>
              send(
                i % 2 === 0
                  ? double.event("charge.refunded", charge)
                  : double.event("payment_intent.succeeded", paid),
              ),
          ),
        ),
        invoke<{ results: Array<{ job: string; status: string }> }>(runDailyTasks, runtime, {
          token: keys.schedulerToken,
          body: { slot: `lock-order-${paid.id}`, force: true },
        }),
        refundStrayPayment(ctx(), paid.id),
      ]);
      assertAllAnswered(answers);
      assert.equal(daily.status, 200, JSON.stringify(daily.body));
      assert.equal(
        daily.body.results.find((r) => r.job === "stray-refunds")?.status,
        "succeeded",
      );
      assert.ok(["refunded", "already_done"].includes(direct.result), direct.result);
      assert.equal(await strayRows(paid.id), 1);
      assert.equal(await strayStatus(paid.id), "refunded");
      assert.equal(await eventsOf(deal.id, "stray_payment_received"), 1);
      assert.equal(await eventsOf(deal.id, "stray_payment_refunded"), 1);
      // The dashboard's refund covered it: the server made none.
      assert.deepEqual(refundsOf(paid.id).map((r) => r.id), [manual.id]);
    }
  },
);

sqlTest(
  "payproc-webhook: a refused refund of a stray payment is recorded while new deliveries of the payment race it, without a deadlock",
  async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const { deal, paid } = await unrefundedStray();
      double.failNext({
        method: "POST",
        path: "/v1/refunds",
        status: 400,
        body: {
          error: {
            type: "invalid_request_error",
            message: "Refunds are disabled on this account.",
          },
        },
      });
      const [answers, attempt] = await Promise.all([
        Promise.all(
          Array.from(
            { length: DELIVERIES },
            () => send(double.event("payment_intent.succeeded", paid)),
          ),
        ),
        refundStrayPayment(ctx(), paid.id),
      ]);
      assertAllAnswered(answers);
      assert.equal(attempt.result, "failed");
      assert.equal(await strayRows(paid.id), 1);
      assert.equal(await strayStatus(paid.id), "failed");
      assert.equal(await eventsOf(deal.id, "stray_payment_received"), 1);
      assert.equal(await eventsOf(deal.id, "stray_payment_refund_failed"), 1);
      assert.equal(refundsOf(paid.id).length, 0);
    }
  },
);
