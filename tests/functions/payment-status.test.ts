import assert from "node:assert/strict";
import handler from "../../supabase/functions/payment-status/handler.ts";
import createDealPayment from "../../supabase/functions/create-deal-payment/handler.ts";
import releaseDealPayout from "../../supabase/functions/release-deal-payout/handler.ts";
import { deliver } from "../support/billing.ts";
import { sqlTest } from "../support/db.ts";
import {
  createDeal,
  dealEvents,
  dealsSetup,
  dealState,
  payableDeal,
  payDeal,
  startCheckout,
  startPayment,
} from "../support/deals.ts";
import { invoke } from "../support/runtime.ts";
import { createUser, type TestUser } from "../support/sql.ts";

// Requests held by the tests must not time out at the SDK meanwhile.
const setup = await dealsSetup({ PAYPROC_TIMEOUT_MS: "30000" });
const { db, double, runtime, keys, admin } = setup;

interface SettlementAnswer {
  status: string;
  amount: string;
  payprocId: string | null;
  reversalId: string | null;
  error: string | null;
  updatedAt: string;
}

interface Status {
  dealId: string;
  status: string;
  amount: string;
  currency: string;
  commission: string;
  commissionFrozen: boolean;
  sellerPayout: string;
  payment: {
    status: string | null;
    paymentIntentId: string | null;
    checkoutSessionId: string | null;
    fundedAt: string | null;
  };
  payout: SettlementAnswer | null;
  refund: SettlementAnswer | null;
  error?: { code: string; message: string };
}

async function status(dealId: unknown, user?: TestUser) {
  return await invoke<Status>(handler, runtime, {
    token: user ? await keys.userToken(user) : undefined,
    body: { dealId },
  });
}

function paymentEvents(events: string[]): string[] {
  return events.filter((e) => e.endsWith(":payment_succeeded"));
}

sqlTest(
  "payment-status: a deal pending payment — amount, commission as it would be now, nothing paid",
  async () => {
    const deal = await createDeal(db.pool, { amount: "1250.00", currency: "USD" });
    const res = await status(deal.id, deal.buyer);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body, {
      dealId: deal.id,
      status: "pending_payment",
      amount: "1250.00",
      currency: "USD",
      commission: "125.00",
      commissionFrozen: false,
      sellerPayout: "1125.00",
      payment: { status: null, paymentIntentId: null, checkoutSessionId: null, fundedAt: null },
      payout: null,
      refund: null,
    });
  },
);

sqlTest(
  "payment-status: both participants get a funded deal's status, commission frozen",
  async () => {
    const deal = await createDeal(db.pool, { amount: "1250.00" });
    const intentId = await payDeal(setup, deal);
    const buyer = await status(deal.id, deal.buyer);
    assert.equal(buyer.status, 200, JSON.stringify(buyer.body));
    const seller = await status(deal.id, deal.seller);
    assert.equal(seller.status, 200, JSON.stringify(seller.body));
    assert.deepEqual(seller.body, buyer.body);

    const body = buyer.body;
    assert.equal(body.dealId, deal.id);
    assert.equal(body.status, "funded");
    assert.equal(body.amount, "1250.00");
    assert.equal(body.currency, "USD");
    assert.equal(body.commission, "125.00");
    assert.equal(body.commissionFrozen, true);
    assert.equal(body.sellerPayout, "1125.00");
    assert.equal(body.payment.status, "succeeded");
    assert.equal(body.payment.paymentIntentId, intentId);
    assert.equal(body.payment.checkoutSessionId, null);
    assert.ok(body.payment.fundedAt && !Number.isNaN(Date.parse(body.payment.fundedAt)));
    assert.equal(body.payout, null);
    assert.equal(body.refund, null);

    // Frozen: a new rate does not change what was agreed.
    await db.pool.query("update public.commission_tiers set rate = 0.5 where plan = 'free'");
    try {
      const later = await status(deal.id, deal.seller);
      assert.equal(later.body.commission, "125.00");
      assert.equal(later.body.sellerPayout, "1125.00");
      const pending = await createDeal(db.pool, { amount: "1250.00" });
      const now = await status(pending.id, pending.seller);
      assert.equal(now.body.commission, "625.00");
      assert.equal(now.body.sellerPayout, "625.00");
      assert.equal(now.body.commissionFrozen, false);
    } finally {
      await db.pool.query("update public.commission_tiers set rate = 0.1 where plan = 'free'");
    }
  },
);

sqlTest("payment-status: a zero-decimal deal reports whole units", async () => {
  const deal = await createDeal(db.pool, { amount: "50000.00", currency: "JPY" });
  await payDeal(setup, deal);
  const res = await status(deal.id, deal.buyer);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body.amount, "50000.00");
  assert.equal(res.body.currency, "JPY");
  assert.equal(res.body.commission, "5000.00");
  assert.equal(res.body.sellerPayout, "45000.00");
});

sqlTest(
  "payment-status: refusals — a stranger, no token, a bad dealId, an unknown deal",
  async () => {
    const deal = await createDeal(db.pool);
    const stranger = await status(deal.id, await createUser(db.pool));
    assert.equal(stranger.status, 403, JSON.stringify(stranger.body));
    assert.equal(stranger.body.error?.code, "forbidden");
    const none = await status(deal.id);
    assert.equal(none.status, 401, JSON.stringify(none.body));
    const bad = await status("42", deal.buyer);
    assert.equal(bad.status, 400, JSON.stringify(bad.body));
    assert.equal(bad.body.error?.code, "invalid_input");
    const unknown = await status(crypto.randomUUID(), deal.buyer);
    assert.equal(unknown.status, 404, JSON.stringify(unknown.body));
    assert.equal(unknown.body.error?.code, "not_found");
  },
);

sqlTest(
  "payment-status: reconciles an intent that succeeded before its webhook — funded once; the late webhook changes nothing",
  async () => {
    const deal = await createDeal(db.pool, { amount: "1250.00" });
    const intentId = await startPayment(setup, deal);
    const before = await status(deal.id, deal.buyer);
    assert.equal(before.body.status, "pending_payment");
    assert.equal(before.body.payment.status, "requires_payment_method");
    assert.equal(before.body.payment.paymentIntentId, intentId);

    const intent = double.setPaymentIntentStatus(intentId, "succeeded"); // no webhook
    const res = await status(deal.id, deal.buyer);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.status, "funded");
    assert.equal(res.body.payment.status, "succeeded");
    assert.equal(res.body.payment.paymentIntentId, intentId);
    assert.ok(res.body.payment.fundedAt);
    assert.equal(res.body.commission, "125.00");
    assert.equal(res.body.commissionFrozen, true);
    assert.equal(res.body.sellerPayout, "1125.00");

    const state = await dealState(db.pool, deal.id);
    assert.equal(state.status, "funded");
    assert.equal(state.commission, "125.00");
    assert.equal(state.payproc_charge_id, intent.latest_charge);
    assert.deepEqual(await dealEvents(db.pool, deal.id), [
      "→pending_payment:created",
      "pending_payment→funded:payment_succeeded",
    ]);
    assert.deepEqual(
      setup.email.sentTo(deal.buyer.email).map((m) => m.subject),
      ["Payment received"],
    );
    assert.deepEqual(
      setup.email.sentTo(deal.seller.email).map((m) => m.subject),
      ["The buyer has paid"],
    );

    // Asked again, and the webhook arriving late: nothing more happens.
    const again = await status(deal.id, deal.seller);
    assert.equal(again.body.status, "funded");
    const late = await deliver(setup, double.event("payment_intent.succeeded", intent));
    assert.equal(late.status, 200, JSON.stringify(late.body));
    assert.equal(paymentEvents(await dealEvents(db.pool, deal.id)).length, 1);
    assert.equal((await dealEvents(db.pool, deal.id)).length, 2);
    assert.deepEqual(await dealState(db.pool, deal.id), state);
    assert.equal(setup.email.sentTo(deal.buyer.email).length, 1);
    assert.equal(setup.email.sentTo(deal.seller.email).length, 1);
  },
);

sqlTest(
  "payment-status: reconciles a completed hosted checkout before its webhook — funded once; the late webhook changes nothing",
  async () => {
    const deal = await createDeal(db.pool, { amount: "1250.00" });
    const sessionId = await startCheckout(setup, deal);
    const completed = double.completeCheckout(sessionId); // no webhook
    const intent = completed.paymentIntent!;

    const res = await status(deal.id, deal.seller);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.status, "funded");
    assert.equal(res.body.payment.status, "succeeded");
    assert.equal(res.body.payment.paymentIntentId, intent.id);
    assert.equal(res.body.payment.checkoutSessionId, sessionId);
    assert.equal(res.body.commission, "125.00");
    assert.equal(res.body.commissionFrozen, true);

    const state = await dealState(db.pool, deal.id);
    assert.equal(state.status, "funded");
    assert.equal(state.commission, "125.00");
    assert.equal(state.payproc_charge_id, intent.latest_charge);
    assert.equal(paymentEvents(await dealEvents(db.pool, deal.id)).length, 1);

    const late = await deliver(
      setup,
      double.event("checkout.session.completed", completed.session),
    );
    assert.equal(late.status, 200, JSON.stringify(late.body));
    const lateIntent = await deliver(
      setup,
      double.event("payment_intent.succeeded", double.get("payment_intent", intent.id)!),
    );
    assert.equal(lateIntent.status, 200, JSON.stringify(lateIntent.body));
    const events = await dealEvents(db.pool, deal.id);
    assert.equal(paymentEvents(events).length, 1, events.join());
    assert.equal(events.length, 2, events.join());
    assert.deepEqual(await dealState(db.pool, deal.id), state);
    assert.deepEqual(
      setup.email.sentTo(deal.buyer.email).map((m) => m.subject),
      ["Payment received"],
    );
  },
);

sqlTest(
  "payment-status: a reconcile that read an earlier status first does not keep the webhook's success from recording the charge",
  async () => {
    const deal = await createDeal(db.pool, { amount: "1250.00" });
    const intentId = await startPayment(setup, deal);
    double.setPaymentIntentStatus(intentId, "processing");
    // The webhook reads the intent first, but the processor answers it last.
    const hold = double.holdNext({ method: "GET", path: `/v1/payment_intents/${intentId}` });
    const webhook = deliver(
      setup,
      double.event("payment_intent.succeeded", {
        ...double.get("payment_intent", intentId)!,
        status: "succeeded",
      }),
    );
    await hold.reached;
    const meanwhile = await status(deal.id, deal.buyer);
    assert.equal(meanwhile.status, 200, JSON.stringify(meanwhile.body));
    assert.equal(meanwhile.body.status, "pending_payment");
    assert.equal(meanwhile.body.payment.status, "processing");
    const intent = double.setPaymentIntentStatus(intentId, "succeeded");
    hold.release();
    const delivered = await webhook;
    assert.equal(delivered.status, 200, JSON.stringify(delivered.body));

    // Funded with the charge the payout and any dispute will name.
    const state = await dealState(db.pool, deal.id);
    assert.equal(state.status, "funded");
    assert.ok(intent.latest_charge);
    assert.equal(state.payproc_charge_id, intent.latest_charge);
    const res = await status(deal.id, deal.seller);
    assert.equal(res.body.status, "funded");
    assert.equal(res.body.payment.status, "succeeded");
    assert.equal(paymentEvents(await dealEvents(db.pool, deal.id)).length, 1);
  },
);

sqlTest(
  "payment-status: a declined attempt shows requires_payment_method and the deal stays pending payment",
  async () => {
    const deal = await createDeal(db.pool);
    const intentId = await startPayment(setup, deal);
    double.failPaymentIntent(intentId);
    const res = await status(deal.id, deal.buyer);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.status, "pending_payment");
    assert.equal(res.body.payment.status, "requires_payment_method");
    assert.equal(res.body.payment.paymentIntentId, intentId);
    assert.equal(res.body.payment.fundedAt, null);
    assert.equal(res.body.commissionFrozen, false);
    const state = await dealState(db.pool, deal.id);
    assert.equal(state.status, "pending_payment");
    assert.equal(state.commission, null);
    assert.equal(state.payproc_charge_id, null);
    assert.deepEqual(await dealEvents(db.pool, deal.id), ["→pending_payment:created"]);

    // The buyer can try again with the same intent.
    const retry = await invoke<{ client_secret: string }>(createDealPayment, runtime, {
      token: await keys.userToken(deal.buyer),
      body: { dealId: deal.id },
    });
    assert.equal(retry.status, 200, JSON.stringify(retry.body));
    assert.equal(retry.body.client_secret.split("_secret_")[0], intentId);
  },
);

sqlTest(
  "payment-status: after the payout — the payout succeeded with its transfer, the deal completed",
  async () => {
    const deal = await payableDeal(setup, { amount: "1250.00" });
    const released = await invoke<{ status: string }>(releaseDealPayout, runtime, {
      token: await keys.userToken(admin),
      body: { dealId: deal.id },
    });
    assert.equal(released.status, 200, JSON.stringify(released.body));
    const [transfer] = double.all("transfer").filter((t) => t.metadata?.deal_id === deal.id);
    assert.ok(transfer);

    for (const user of [deal.seller, deal.buyer]) {
      const res = await status(deal.id, user);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.status, "completed");
      assert.equal(res.body.commission, "125.00");
      assert.equal(res.body.commissionFrozen, true);
      assert.equal(res.body.sellerPayout, "1125.00");
      assert.equal(res.body.payment.status, "succeeded");
      assert.equal(res.body.payment.paymentIntentId, deal.intentId);
      assert.equal(res.body.payout?.status, "succeeded");
      assert.equal(res.body.payout?.amount, "1125.00");
      assert.equal(res.body.payout?.payprocId, transfer.id);
      assert.equal(res.body.payout?.reversalId, null);
      assert.equal(res.body.payout?.error, null);
      assert.equal(res.body.refund, null);
    }
  },
);

sqlTest(
  "payment-status: a zero-decimal deal's commission and seller payout are whole units",
  async () => {
    const deal = await createDeal(db.pool, { amount: "1255.00", currency: "JPY" });
    await payDeal(setup, deal);
    const res = await status(deal.id, deal.seller);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.amount, "1255.00");
    // deal_commission() rounds to the currency's smallest unit (whole yen), so
    // the seller's payout can be transferred.
    assert.match(res.body.commission, /\.00$/, `commission ${res.body.commission} JPY`);
    assert.match(res.body.sellerPayout, /\.00$/, `seller payout ${res.body.sellerPayout} JPY`);
    assert.equal(
      Number(res.body.commission) + Number(res.body.sellerPayout),
      Number(res.body.amount),
    );
  },
);
