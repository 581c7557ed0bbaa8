import assert from "node:assert/strict";
import handler from "../../supabase/functions/cancel-deal/handler.ts";
import createDealCheckout from "../../supabase/functions/create-deal-checkout/handler.ts";
import { deliver } from "../support/billing.ts";
import { sqlTest } from "../support/db.ts";
import {
  createDeal,
  dealEvents,
  dealsSetup,
  dealState,
  payableDeal,
  startCheckout,
  startPayment,
  type TestDeal,
} from "../support/deals.ts";
import { createLoiDeal, testDealOf } from "../support/loi.ts";
import { invoke } from "../support/runtime.ts";
import { asRole, createUser } from "../support/sql.ts";

// Requests held by the tests must not time out at the SDK meanwhile.
const setup = await dealsSetup({ PAYPROC_TIMEOUT_MS: "30000" });
const { db, double, runtime, keys } = setup;

interface CancelAnswer {
  dealId: string;
  status: string;
  alreadyCancelled: boolean;
  payment: { paymentIntent: string; checkoutSession: string };
  error?: { code: string; details?: { reason?: string; status?: string } };
}

async function cancel(deal: TestDeal, as = deal.buyer, body: Record<string, unknown> = {}) {
  return await invoke<CancelAnswer>(handler, runtime, {
    token: await keys.userToken(as),
    body: { dealId: deal.id, ...body },
  });
}

/** Every payment object the processor holds for the deal that could still take money. */
function payableAtProcessor(dealId: string): string[] {
  const intents = double.all("payment_intent").filter((pi) =>
    pi.metadata?.deal_id === dealId && pi.status !== "canceled" && pi.status !== "succeeded"
  );
  const sessions = double.all("checkout.session").filter((s) =>
    s.metadata?.deal_id === dealId && s.status === "open"
  );
  return [...intents.map((pi) => pi.id), ...sessions.map((s) => s.id)];
}

sqlTest(
  "cancel-deal: a deal that never started a payment is cancelled; a repeat says so",
  async () => {
    const deal = await createDeal(db.pool);
    const first = await cancel(deal, deal.seller, { reason: "Buyer went quiet" });
    assert.equal(first.status, 200, JSON.stringify(first.body));
    assert.deepEqual(first.body, {
      dealId: deal.id,
      status: "cancelled",
      alreadyCancelled: false,
      payment: { paymentIntent: "none", checkoutSession: "none" },
    });
    const again = await cancel(deal);
    assert.equal(again.status, 200);
    assert.equal(again.body.alreadyCancelled, true);
    assert.deepEqual(await dealEvents(db.pool, deal.id), [
      "→pending_payment:created",
      "pending_payment→cancelled:cancelled",
    ]);
    const { rows } = await db.pool.query(
      `select actor_id, detail from public.deal_events where deal_id = $1 and cause = 'cancelled'`,
      [deal.id],
    );
    assert.equal(rows[0].actor_id, deal.seller.id);
    assert.equal(rows[0].detail.reason, "Buyer went quiet");
    assert.equal(double.requestsTo("POST", /\/v1\/payment_intents\/.*\/cancel/).length, 0);
  },
);

sqlTest(
  "cancel-deal: the payment intent is cancelled at the processor before the deal, so it can no longer be paid",
  async () => {
    const deal = await createDeal(db.pool);
    const intentId = await startPayment(setup, deal);
    double.setPaymentIntentStatus(intentId, "requires_action"); // waiting for 3-D Secure
    const res = await cancel(deal);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body.payment, { paymentIntent: "cancelled", checkoutSession: "none" });
    assert.equal(double.get("payment_intent", intentId)?.status, "canceled");
    assert.equal((await dealState(db.pool, deal.id)).status, "cancelled");
    assert.deepEqual(payableAtProcessor(deal.id), []);
  },
);

sqlTest("cancel-deal: an open hosted checkout is expired at the processor first", async () => {
  const deal = await createDeal(db.pool);
  const sessionId = await startCheckout(setup, deal);
  const res = await cancel(deal);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.deepEqual(res.body.payment, { paymentIntent: "none", checkoutSession: "expired" });
  assert.equal(double.get("checkout.session", sessionId)?.status, "expired");
  assert.deepEqual(payableAtProcessor(deal.id), []);
  assert.equal((await dealState(db.pool, deal.id)).status, "cancelled");
});

sqlTest(
  "cancel-deal: a payment that succeeded before its webhook funds the deal and answers 409 already_paid",
  async () => {
    const deal = await createDeal(db.pool);
    const intentId = await startPayment(setup, deal);
    double.setPaymentIntentStatus(intentId, "succeeded");
    const res = await cancel(deal);
    assert.equal(res.status, 409);
    assert.equal(res.body.error?.details?.reason, "already_paid");
    assert.equal(res.body.error?.details?.status, "funded");
    assert.equal((await dealState(db.pool, deal.id)).status, "funded");
    assert.equal(double.requestsTo("POST", `/v1/payment_intents/${intentId}/cancel`).length, 0);
    // The webhook that arrives later changes nothing more.
    const late = await deliver<{ detail?: string }>(
      setup,
      double.event("payment_intent.succeeded", double.get("payment_intent", intentId)!),
    );
    assert.equal(late.body.detail, "already up to date");
    assert.deepEqual((await dealEvents(db.pool, deal.id)).slice(1), [
      "pending_payment→funded:payment_succeeded",
    ]);
  },
);

sqlTest(
  "cancel-deal: a payment that succeeds while the cancel is on its way is refused by the processor → the deal is funded, 409",
  async () => {
    const deal = await createDeal(db.pool);
    const intentId = await startPayment(setup, deal);
    double.setPaymentIntentStatus(intentId, "requires_action");
    const hold = double.holdNext({
      method: "POST",
      path: `/v1/payment_intents/${intentId}/cancel`,
    });
    const pending = cancel(deal);
    await hold.reached;
    // The buyer's 3-D Secure step completes just before the cancel is handled.
    double.setPaymentIntentStatus(intentId, "succeeded");
    hold.release();
    const res = await pending;
    assert.equal(res.status, 409, JSON.stringify(res.body));
    assert.equal(res.body.error?.details?.reason, "already_paid");
    assert.equal((await dealState(db.pool, deal.id)).status, "funded");
  },
);

sqlTest(
  "cancel-deal: a hosted checkout paid while the cancel is on its way funds the deal, 409",
  async () => {
    const deal = await createDeal(db.pool);
    const sessionId = await startCheckout(setup, deal);
    const hold = double.holdNext({
      method: "POST",
      path: `/v1/checkout/sessions/${sessionId}/expire`,
    });
    const pending = cancel(deal);
    await hold.reached;
    double.completeCheckout(sessionId); // the buyer paid in the other tab just then
    hold.release();
    const res = await pending;
    assert.equal(res.status, 409, JSON.stringify(res.body));
    assert.equal(res.body.error?.details?.reason, "already_paid");
    assert.equal((await dealState(db.pool, deal.id)).status, "funded");
  },
);

sqlTest(
  "cancel-deal: a payment still processing that the processor will not cancel is 409 payment_processing; nothing changes",
  async () => {
    const deal = await createDeal(db.pool);
    const intentId = await startPayment(setup, deal);
    double.setPaymentIntentStatus(intentId, "processing");
    double.failNext({
      method: "POST",
      path: `/v1/payment_intents/${intentId}/cancel`,
      status: 400,
      body: {
        error: {
          type: "invalid_request_error",
          code: "payment_intent_unexpected_state",
          message: "You cannot cancel this PaymentIntent because it has a status of processing.",
        },
      },
    });
    const res = await cancel(deal);
    assert.equal(res.status, 409, JSON.stringify(res.body));
    assert.equal(res.body.error?.details?.reason, "payment_processing");
    assert.equal((await dealState(db.pool, deal.id)).status, "pending_payment");
    assert.equal(double.get("payment_intent", intentId)?.status, "processing");
  },
);

sqlTest("cancel-deal: the processor down → 503 and the deal stays as it was", async () => {
  const deal = await createDeal(db.pool);
  const intentId = await startPayment(setup, deal);
  double.failNext({
    method: "GET",
    path: `/v1/payment_intents/${intentId}`,
    status: 500,
    times: 2,
  });
  const res = await cancel(deal);
  assert.equal(res.status, 503, JSON.stringify(res.body));
  assert.equal(res.body.error?.code, "upstream_unavailable");
  assert.equal((await dealState(db.pool, deal.id)).status, "pending_payment");
  assert.equal(double.get("payment_intent", intentId)?.status, "requires_payment_method");
});

sqlTest(
  "cancel-deal: buyer, seller and admins may; a stranger 403, an unknown deal 404, a paid deal 409",
  async () => {
    const deal = await createDeal(db.pool);
    const stranger = await createUser(db.pool);
    const refused = await cancel(deal, stranger);
    assert.equal(refused.status, 403);
    assert.equal((await dealState(db.pool, deal.id)).status, "pending_payment");
    const anon = await invoke<CancelAnswer>(handler, runtime, {
      token: keys.anonKey,
      body: { dealId: deal.id },
    });
    assert.equal(anon.status, 403);
    const missing = await invoke<CancelAnswer>(handler, runtime, {
      token: await keys.userToken(stranger),
      body: { dealId: crypto.randomUUID() },
    });
    assert.equal(missing.status, 404);
    const bad = await invoke<CancelAnswer>(handler, runtime, {
      token: await keys.userToken(stranger),
      body: { dealId: "nope" },
    });
    assert.equal(bad.status, 400);
    const byAdmin = await cancel(deal, setup.admin);
    assert.equal(byAdmin.status, 200);

    const paid = await payableDeal(setup, { handover: false });
    const late = await cancel(paid);
    assert.equal(late.status, 409);
    assert.equal(late.body.error?.details?.reason, "already_paid");
    assert.equal((await dealState(db.pool, paid.id)).status, "funded");
  },
);

sqlTest("cancel-deal: many cancels at once cancel the intent and the deal once", async () => {
  const deal = await createDeal(db.pool);
  const intentId = await startPayment(setup, deal);
  const answers = await Promise.all(Array.from({ length: 8 }, () => cancel(deal)));
  assert.deepEqual(answers.map((a) => a.status), answers.map(() => 200));
  assert.equal(answers.filter((a) => !a.body.alreadyCancelled).length, 1);
  assert.equal(double.get("payment_intent", intentId)?.status, "canceled");
  assert.equal(
    (await dealEvents(db.pool, deal.id)).filter((e) => e.endsWith(":cancelled")).length,
    1,
  );
});

sqlTest(
  "cancel-deal racing create-deal-checkout: whichever wins, nothing the buyer can still pay is left on a cancelled deal",
  async () => {
    for (let round = 0; round < 4; round++) {
      const deal = await createDeal(db.pool);
      await startPayment(setup, deal);
      const [cancelled, checkout] = await Promise.all([
        cancel(deal, deal.seller),
        invoke(createDealCheckout, runtime, {
          token: await keys.userToken(deal.buyer),
          body: { dealId: deal.id },
        }),
      ]);
      const state = (await dealState(db.pool, deal.id)).status;
      if (state === "cancelled") {
        assert.equal(cancelled.status, 200, JSON.stringify(cancelled.body));
        // A checkout made meanwhile was expired too: its url leads nowhere.
        assert.deepEqual(payableAtProcessor(deal.id), [], `round ${round}`);
      } else {
        assert.equal(state, "pending_payment");
        assert.equal(checkout.status, 200);
        assert.equal(cancelled.body.error?.details?.reason, "changed_meanwhile");
      }
    }
  },
);

sqlTest(
  "cancel_deal() RPC: still cancels a deal that never started a payment, refuses (PT409, hint cancel-deal) one that did",
  async () => {
    const fresh = await createDeal(db.pool);
    await asRole(db.pool, { role: "authenticated", userId: fresh.buyer.id }, async (c) => {
      const { rows } = await c.query("select status from public.cancel_deal($1)", [fresh.id]);
      assert.equal(rows[0].status, "cancelled");
    });
    const started = await createDeal(db.pool);
    await startPayment(setup, started);
    await asRole(db.pool, { role: "authenticated", userId: started.buyer.id }, async (c) => {
      await assert.rejects(
        c.query("select public.cancel_deal($1)", [started.id]),
        (error: { code?: string; hint?: string; message?: string }) =>
          error.code === "PT409" && error.hint === "cancel-deal" &&
          /cancel-deal function/.test(error.message ?? ""),
      );
    });
    await assert.rejects(
      db.pool.query("select public.cancel_deal($1)", [started.id]),
      (error: { code?: string }) => error.code === "PT409",
    );
    assert.equal((await dealState(db.pool, started.id)).status, "pending_payment");
  },
);

sqlTest(
  "cancel-deal: a deal in due diligence has no payment to stop and is cancelled; the listing reopens",
  async () => {
    const loi = await createLoiDeal(db.pool);
    const res = await cancel(testDealOf(loi), loi.seller, { reason: "Sold elsewhere" });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body.payment, { paymentIntent: "none", checkoutSession: "none" });
    assert.deepEqual(await dealEvents(db.pool, loi.dealId), [
      "→in_diligence:offer_accepted",
      "in_diligence→cancelled:cancelled",
    ]);
    const { rows } = await db.pool.query("select public.listing_under_loi($1) as held", [
      loi.listingId,
    ]);
    assert.equal(rows[0].held, false);
  },
);
