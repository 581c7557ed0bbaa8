import assert from "node:assert/strict";
import handler from "../../supabase/functions/create-deal-checkout/handler.ts";
import createDealPayment from "../../supabase/functions/create-deal-payment/handler.ts";
import { deliver } from "../support/billing.ts";
import { sqlTest } from "../support/db.ts";
import { createDeal, dealEvents, dealsSetup, dealState, payDeal } from "../support/deals.ts";
import type { FormObject } from "../support/http_double.ts";
import { invoke } from "../support/runtime.ts";
import { createUser, type TestUser } from "../support/sql.ts";

const setup = await dealsSetup({ ALLOWED_REDIRECT_ORIGINS: "https://app.example.test" });
const { db, double, runtime, keys } = setup;

interface Answer {
  url?: string;
  error?: { code: string; message: string; details?: { reason?: string; field?: string } };
}

interface WebhookAnswer {
  received: boolean;
  outcome: string;
  detail?: string;
}

async function checkout(user: TestUser | undefined, body: Record<string, unknown>) {
  return await invoke<Answer>(handler, runtime, {
    token: user ? await keys.userToken(user) : undefined,
    body,
  });
}

/** The checkout sessions at the double that name the deal. */
function sessionsOf(dealId: string) {
  return double.all("checkout.session").filter((s) => s.metadata?.deal_id === dealId);
}

async function paymentColumns(dealId: string) {
  const { rows } = await db.pool.query<{
    payproc_payment_intent_id: string | null;
    payproc_checkout_session_id: string | null;
    payment_status: string | null;
    payproc_charge_id: string | null;
  }>(
    `select payproc_payment_intent_id, payproc_checkout_session_id, payment_status,
            payproc_charge_id
     from public.deals where id = $1`,
    [dealId],
  );
  return rows[0]!;
}

function paymentEvents(events: string[]): string[] {
  return events.filter((e) => e.endsWith(":payment_succeeded"));
}

sqlTest(
  "create-deal-checkout: the buyer gets the url of a payment-mode session for the deal's amount, with default redirects",
  async () => {
    const deal = await createDeal(db.pool, { amount: "1250.00", currency: "USD" });
    const res = await checkout(deal.buyer, { dealId: deal.id });
    assert.equal(res.status, 200, JSON.stringify(res.body));

    const sessions = sessionsOf(deal.id);
    assert.equal(sessions.length, 1);
    const session = sessions[0]!;
    assert.equal(res.body.url, session.url);
    assert.ok(res.body.url?.startsWith(`${double.url}/checkout/`), res.body.url);
    assert.equal(session.mode, "payment");
    assert.equal(session.status, "open");
    assert.equal(session.amount_total, 125000);
    assert.equal(session.currency, "usd");
    assert.equal(session.client_reference_id, deal.buyer.id);
    assert.equal(session.customer_email, deal.buyer.email);
    assert.equal(session.success_url, `http://localhost:5173/deals/${deal.id}?payment=success`);
    assert.equal(session.cancel_url, `http://localhost:5173/deals/${deal.id}?payment=cancelled`);

    const items = double.store.checkoutLineItems.get(session.id) ?? [];
    assert.equal(items.length, 1);
    assert.equal(items[0]?.quantity, 1);
    assert.equal(items[0]?.amount_total, 125000);
    assert.equal(items[0]?.currency, "usd");
    assert.equal(items[0]?.price?.unit_amount, 125000);

    const params = double.store.checkoutParams.get(session.id);
    const intentData = params?.payment_intent_data as FormObject | undefined;
    assert.equal(intentData?.transfer_group, `deal:${deal.id}`);
    assert.equal((intentData?.metadata as FormObject | undefined)?.deal_id, deal.id);
    assert.equal((intentData?.metadata as FormObject | undefined)?.buyer_id, deal.buyer.id);

    const create = double.requestsTo("POST", "/v1/checkout/sessions")
      .filter((r) => r.path === "/v1/checkout/sessions")
      .at(-1);
    assert.ok(
      create?.headers.get("idempotency-key")?.startsWith(`deal-checkout:${deal.id}:`),
      String(create?.headers.get("idempotency-key")),
    );

    const row = await paymentColumns(deal.id);
    assert.equal(row.payproc_checkout_session_id, session.id);
    assert.equal(row.payproc_payment_intent_id, null);
    assert.equal((await dealState(db.pool, deal.id)).status, "pending_payment");
  },
);

sqlTest("create-deal-checkout: a zero-decimal currency is charged in whole units", async () => {
  const deal = await createDeal(db.pool, { amount: "5000.00", currency: "JPY" });
  const res = await checkout(deal.buyer, { dealId: deal.id });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  const [session] = sessionsOf(deal.id);
  assert.equal(session?.amount_total, 5000);
  assert.equal(session?.currency, "jpy");
  assert.equal(double.store.checkoutLineItems.get(session!.id)?.[0]?.amount_total, 5000);
});

sqlTest(
  "create-deal-checkout: redirects outside SITE_URL and ALLOWED_REDIRECT_ORIGINS answer 400 and create nothing",
  async () => {
    const deal = await createDeal(db.pool);
    const created = double.createdCount("checkout.session");
    for (
      const body of [
        { successUrl: "https://evil.example/deals/x" },
        { cancelUrl: "https://app.example.test.evil.example/x" },
        { successUrl: "http://localhost:5174/wrong-port" },
        { successUrl: "javascript:alert(1)" },
      ]
    ) {
      const res = await checkout(deal.buyer, { dealId: deal.id, ...body });
      assert.equal(res.status, 400, `${JSON.stringify(body)}: ${JSON.stringify(res.body)}`);
      assert.equal(res.body.error?.code, "invalid_input");
    }
    assert.equal(double.createdCount("checkout.session"), created);
    assert.equal((await paymentColumns(deal.id)).payproc_checkout_session_id, null);

    const ok = await checkout(deal.buyer, {
      dealId: deal.id,
      successUrl: "https://app.example.test/paid",
      cancelUrl: "http://localhost:5173/back",
    });
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    const [session] = sessionsOf(deal.id);
    assert.equal(session?.success_url, "https://app.example.test/paid");
    assert.equal(session?.cancel_url, "http://localhost:5173/back");
  },
);

sqlTest("create-deal-checkout: the open session is reused on a second call", async () => {
  const deal = await createDeal(db.pool);
  const first = await checkout(deal.buyer, { dealId: deal.id });
  assert.equal(first.status, 200, JSON.stringify(first.body));
  const created = double.createdCount("checkout.session");
  const second = await checkout(deal.buyer, { dealId: deal.id });
  assert.equal(second.status, 200, JSON.stringify(second.body));
  assert.equal(second.body.url, first.body.url);
  assert.equal(double.createdCount("checkout.session"), created);
  assert.equal(sessionsOf(deal.id).length, 1);
});

sqlTest(
  "create-deal-checkout: an expired session is replaced by a new one",
  async () => {
    const deal = await createDeal(db.pool);
    const first = await checkout(deal.buyer, { dealId: deal.id });
    assert.equal(first.status, 200, JSON.stringify(first.body));
    const old = (await paymentColumns(deal.id)).payproc_checkout_session_id!;
    // It expired at the processor (24 h later).
    const stored = double.store.require("checkout.session", old);
    stored.status = "expired";
    stored.url = null;
    const second = await checkout(deal.buyer, { dealId: deal.id });
    assert.equal(second.status, 200, JSON.stringify(second.body));
    assert.notEqual(second.body.url, first.body.url);
    const row = await paymentColumns(deal.id);
    assert.notEqual(row.payproc_checkout_session_id, old);
    assert.equal(
      double.get("checkout.session", row.payproc_checkout_session_id!)?.url,
      second.body.url,
    );
    assert.equal(sessionsOf(deal.id).length, 2);
  },
);

sqlTest(
  "create-deal-checkout: an intent made by create-deal-payment is cancelled at the processor first",
  async () => {
    const deal = await createDeal(db.pool);
    const paid = await invoke<{ client_secret: string }>(createDealPayment, runtime, {
      token: await keys.userToken(deal.buyer),
      body: { dealId: deal.id },
    });
    assert.equal(paid.status, 200, JSON.stringify(paid.body));
    const intentId = paid.body.client_secret.split("_secret_")[0]!;
    assert.equal(double.get("payment_intent", intentId)?.status, "requires_payment_method");

    const res = await checkout(deal.buyer, { dealId: deal.id });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const intent = double.get("payment_intent", intentId);
    assert.equal(intent?.status, "canceled");
    assert.equal(intent?.cancellation_reason, "abandoned");
    const [session] = sessionsOf(deal.id);
    assert.equal(res.body.url, session?.url);
    const row = await paymentColumns(deal.id);
    assert.equal(row.payproc_checkout_session_id, session?.id);
    assert.equal(row.payproc_payment_intent_id, null);
  },
);

sqlTest(
  "create-deal-checkout: an intent that already succeeded at the processor is not cancelled: 409, no session",
  async () => {
    const deal = await createDeal(db.pool);
    const paid = await invoke<{ client_secret: string }>(createDealPayment, runtime, {
      token: await keys.userToken(deal.buyer),
      body: { dealId: deal.id },
    });
    assert.equal(paid.status, 200, JSON.stringify(paid.body));
    const intentId = paid.body.client_secret.split("_secret_")[0]!;
    double.setPaymentIntentStatus(intentId, "succeeded"); // the webhook has not arrived yet
    const created = double.createdCount("checkout.session");
    const res = await checkout(deal.buyer, { dealId: deal.id });
    assert.equal(res.status, 409, JSON.stringify(res.body));
    assert.equal(res.body.error?.code, "conflict");
    assert.equal(res.body.error?.details?.reason, "already_paid");
    assert.equal(double.get("payment_intent", intentId)?.status, "succeeded");
    assert.equal(double.createdCount("checkout.session"), created);
  },
);

sqlTest(
  "create-deal-checkout: the completed checkout's webhook funds the deal once; repeats and the intent's own event change nothing",
  async () => {
    const deal = await createDeal(db.pool, { amount: "1250.00" });
    const res = await checkout(deal.buyer, { dealId: deal.id });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const sessionId = (await paymentColumns(deal.id)).payproc_checkout_session_id!;
    assert.ok(sessionId);

    const completed = double.completeCheckout(sessionId);
    const intent = completed.paymentIntent!;
    assert.equal(intent.status, "succeeded");
    assert.equal(intent.amount, 125000);
    assert.equal(intent.transfer_group, `deal:${deal.id}`);
    assert.equal(intent.metadata.deal_id, deal.id);

    const event = double.event("checkout.session.completed", completed.session);
    const delivered = await deliver<WebhookAnswer>(setup, event);
    assert.equal(delivered.status, 200, JSON.stringify(delivered.body));
    assert.equal(delivered.body.outcome, "applied", JSON.stringify(delivered.body));

    const state = await dealState(db.pool, deal.id);
    assert.equal(state.status, "funded");
    assert.equal(state.commission, "125.00"); // free plan: 10 %, frozen when funded
    assert.equal(state.payproc_charge_id, intent.latest_charge);
    const row = await paymentColumns(deal.id);
    assert.equal(row.payproc_payment_intent_id, intent.id);
    assert.equal(row.payment_status, "succeeded");
    assert.deepEqual(await dealEvents(db.pool, deal.id), [
      "→pending_payment:created",
      "pending_payment→funded:payment_succeeded",
    ]);
    const buyerMail = setup.email.sentTo(deal.buyer.email).map((m) => m.subject);
    const sellerMail = setup.email.sentTo(deal.seller.email).map((m) => m.subject);
    assert.deepEqual(buyerMail, ["Payment received"]);
    assert.deepEqual(sellerMail, ["The buyer has paid"]);

    // The same event again, a fresh event about the same session, then the intent's own event.
    const again = await deliver<WebhookAnswer>(setup, event);
    assert.equal(again.status, 200, JSON.stringify(again.body));
    const fresh = await deliver<WebhookAnswer>(
      setup,
      double.event("checkout.session.completed", double.get("checkout.session", sessionId)!),
    );
    assert.equal(fresh.status, 200, JSON.stringify(fresh.body));
    const succeeded = await deliver<WebhookAnswer>(
      setup,
      double.event("payment_intent.succeeded", double.get("payment_intent", intent.id)!),
    );
    assert.equal(succeeded.status, 200, JSON.stringify(succeeded.body));

    const events = await dealEvents(db.pool, deal.id);
    assert.equal(paymentEvents(events).length, 1, events.join());
    assert.equal(events.length, 2, events.join());
    assert.deepEqual(await dealState(db.pool, deal.id), state);
    assert.deepEqual(setup.email.sentTo(deal.buyer.email).map((m) => m.subject), buyerMail);
    assert.deepEqual(setup.email.sentTo(deal.seller.email).map((m) => m.subject), sellerMail);

    // Paid: no new checkout.
    const after = await checkout(deal.buyer, { dealId: deal.id });
    assert.equal(after.status, 409, JSON.stringify(after.body));
    assert.equal(after.body.error?.details?.reason, "already_paid");
  },
);

sqlTest(
  "create-deal-checkout: a completed checkout whose webhook has not arrived answers 409, no new session",
  async () => {
    const deal = await createDeal(db.pool);
    const res = await checkout(deal.buyer, { dealId: deal.id });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const sessionId = (await paymentColumns(deal.id)).payproc_checkout_session_id!;
    double.completeCheckout(sessionId);
    const created = double.createdCount("checkout.session");
    const again = await checkout(deal.buyer, { dealId: deal.id });
    assert.equal(again.status, 409, JSON.stringify(again.body));
    assert.equal(again.body.error?.code, "conflict");
    assert.equal(double.createdCount("checkout.session"), created);
  },
);

sqlTest(
  "create-deal-checkout: refusals — the seller, a stranger, no token, unknown deal — create nothing",
  async () => {
    const deal = await createDeal(db.pool);
    const created = double.createdCount("checkout.session");

    const seller = await checkout(deal.seller, { dealId: deal.id });
    assert.equal(seller.status, 403, JSON.stringify(seller.body));
    assert.equal(seller.body.error?.code, "forbidden");

    const stranger = await checkout(await createUser(db.pool), { dealId: deal.id });
    assert.equal(stranger.status, 403, JSON.stringify(stranger.body));
    assert.equal(stranger.body.error?.code, "forbidden");

    const none = await checkout(undefined, { dealId: deal.id });
    assert.equal(none.status, 401, JSON.stringify(none.body));

    const bad = await checkout(deal.buyer, { dealId: "42" });
    assert.equal(bad.status, 400, JSON.stringify(bad.body));
    assert.equal(bad.body.error?.code, "invalid_input");

    const unknown = await checkout(deal.buyer, { dealId: crypto.randomUUID() });
    assert.equal(unknown.status, 404, JSON.stringify(unknown.body));

    assert.equal(double.createdCount("checkout.session"), created);
    assert.equal((await paymentColumns(deal.id)).payproc_checkout_session_id, null);
  },
);

sqlTest("create-deal-checkout: a paid deal answers 409 already_paid", async () => {
  const deal = await createDeal(db.pool);
  await payDeal(setup, deal);
  const created = double.createdCount("checkout.session");
  const res = await checkout(deal.buyer, { dealId: deal.id });
  assert.equal(res.status, 409, JSON.stringify(res.body));
  assert.equal(res.body.error?.code, "conflict");
  assert.equal(res.body.error?.details?.reason, "already_paid");
  assert.equal(double.createdCount("checkout.session"), created);
  assert.equal((await paymentColumns(deal.id)).payproc_checkout_session_id, null);
});

sqlTest("create-deal-checkout: a cancelled deal answers 409", async () => {
  const deal = await createDeal(db.pool);
  await db.pool.query("select public.cancel_deal($1)", [deal.id]);
  const created = double.createdCount("checkout.session");
  const res = await checkout(deal.buyer, { dealId: deal.id });
  assert.equal(res.status, 409, JSON.stringify(res.body));
  assert.equal(res.body.error?.code, "conflict");
  assert.equal(res.body.error?.details?.reason, "cancelled");
  assert.equal(double.createdCount("checkout.session"), created);
});

/** Resolves once `done()` holds (polling). */
async function until(done: () => boolean): Promise<void> {
  while (!done()) await new Promise((resolve) => setTimeout(resolve, 5));
}

sqlTest(
  "create-deal-checkout: an intent made while the session is being created is not forgotten",
  async () => {
    const deal = await createDeal(db.pool);
    const token = await keys.userToken(deal.buyer);
    // The session's creation is slow; the buyer asks for the payment form meanwhile (another tab).
    const creations = () =>
      double.requestsTo("POST", "/v1/checkout/sessions")
        .filter((r) => r.path === "/v1/checkout/sessions").length;
    const before = creations();
    double.failNext({ method: "POST", path: "/v1/checkout/sessions", delayMs: 300 });
    const opening = checkout(deal.buyer, { dealId: deal.id });
    await until(() => creations() > before);
    const paid = await invoke<{ client_secret: string }>(createDealPayment, runtime, {
      token,
      body: { dealId: deal.id },
    });
    const opened = await opening;
    assert.equal(paid.status, 200, JSON.stringify(paid.body));

    const intentId = paid.body.client_secret.split("_secret_")[0]!;
    const intentPayable = double.get("payment_intent", intentId)?.status ===
      "requires_payment_method";
    const session = double.all("checkout.session").find((s) => s.url === opened.body.url);
    const sessionOpen = opened.status === 200 && session?.status === "open";
    const row = await paymentColumns(deal.id);
    // An intent stored while the session was being created wins: the session is
    // expired and the call answers 409 changed_meanwhile, so no payment is forgotten.
    assert.ok(
      !(intentPayable && sessionOpen),
      `both answered and payable: ${intentId} and ${opened.status} ${session?.id}`,
    );
    if (intentPayable) {
      assert.equal(row.payproc_payment_intent_id, intentId);
      // Paying the intent the buyer was given funds the deal.
      const intent = double.setPaymentIntentStatus(intentId, "succeeded");
      const delivered = await deliver<WebhookAnswer>(
        setup,
        double.event("payment_intent.succeeded", intent),
      );
      assert.equal(delivered.status, 200, JSON.stringify(delivered.body));
      assert.equal((await dealState(db.pool, deal.id)).status, "funded");
    }
  },
);

sqlTest("create-deal-checkout: 5 concurrent calls make one session", async () => {
  const deal = await createDeal(db.pool);
  const token = await keys.userToken(deal.buyer);
  const answers = await Promise.all(
    Array.from(
      { length: 5 },
      () => invoke<Answer>(handler, runtime, { token, body: { dealId: deal.id } }),
    ),
  );
  for (const answer of answers) {
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
  }
  assert.equal(new Set(answers.map((a) => a.body.url)).size, 1);
  const sessions = sessionsOf(deal.id);
  assert.equal(sessions.length, 1);
  assert.equal((await paymentColumns(deal.id)).payproc_checkout_session_id, sessions[0]?.id);
});
