import assert from "node:assert/strict";
import handler from "../../supabase/functions/create-deal-payment/handler.ts";
import createDealCheckout from "../../supabase/functions/create-deal-checkout/handler.ts";
import { sqlTest } from "../support/db.ts";
import { createDeal, dealEvents, dealsSetup, dealState, payDeal } from "../support/deals.ts";
import { confirmDiligence, createLoiDeal } from "../support/loi.ts";
import { invoke } from "../support/runtime.ts";
import { createUser, type TestUser } from "../support/sql.ts";

const setup = await dealsSetup();
const { db, double, runtime, keys } = setup;

interface Answer {
  client_secret?: string;
  error?: { code: string; message: string; details?: { reason?: string } };
}

async function pay(dealId: unknown, user?: TestUser) {
  return await invoke<Answer>(handler, runtime, {
    token: user ? await keys.userToken(user) : undefined,
    body: { dealId },
  });
}

/** The payment intents at the double that name the deal. */
function intentsOf(dealId: string) {
  return double.all("payment_intent").filter((pi) => pi.metadata?.deal_id === dealId);
}

/** The intent id a client secret belongs to. */
function intentIdOf(secret: string | undefined): string {
  assert.ok(secret, "no client_secret");
  return secret.split("_secret_")[0]!;
}

/** The idempotency keys of the intent creations for the deal, oldest first. */
function creationKeysOf(dealId: string): (string | null)[] {
  return double.requestsTo("POST", "/v1/payment_intents")
    .filter((r) => r.path === "/v1/payment_intents")
    .filter((r) =>
      (r.body as { metadata?: { deal_id?: string } } | undefined)?.metadata?.deal_id === dealId
    )
    .map((r) => r.headers.get("idempotency-key"));
}

async function paymentColumns(dealId: string) {
  const { rows } = await db.pool.query<{
    payproc_payment_intent_id: string | null;
    payproc_checkout_session_id: string | null;
    payment_status: string | null;
  }>(
    `select payproc_payment_intent_id, payproc_checkout_session_id, payment_status
     from public.deals where id = $1`,
    [dealId],
  );
  return rows[0]!;
}

sqlTest(
  "create-deal-payment: the buyer gets the client secret of an intent for the deal's amount, transfer group and id",
  async () => {
    const deal = await createDeal(db.pool, { amount: "1250.00", currency: "USD" });
    const res = await pay(deal.id, deal.buyer);
    assert.equal(res.status, 200, JSON.stringify(res.body));

    const intents = intentsOf(deal.id);
    assert.equal(intents.length, 1);
    const intent = intents[0]!;
    assert.equal(intent.id, intentIdOf(res.body.client_secret));
    assert.equal(intent.client_secret, res.body.client_secret);
    assert.equal(intent.amount, 125000);
    assert.equal(intent.currency, "usd");
    assert.equal(intent.transfer_group, `deal:${deal.id}`);
    assert.equal(intent.metadata.deal_id, deal.id);
    assert.equal(intent.metadata.buyer_id, deal.buyer.id);
    assert.equal(intent.status, "requires_payment_method");

    const [key] = creationKeysOf(deal.id);
    assert.ok(key?.startsWith(`deal-payment:${deal.id}:`), String(key));

    const row = await paymentColumns(deal.id);
    assert.equal(row.payproc_payment_intent_id, intent.id);
    assert.equal(row.payment_status, "requires_payment_method");
    assert.equal((await dealState(db.pool, deal.id)).status, "pending_payment");
    assert.deepEqual(await dealEvents(db.pool, deal.id), ["→pending_payment:created"]);
  },
);

sqlTest("create-deal-payment: a zero-decimal currency is charged in whole units", async () => {
  const deal = await createDeal(db.pool, { amount: "5000.00", currency: "JPY" });
  const res = await pay(deal.id, deal.buyer);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  const [intent] = intentsOf(deal.id);
  assert.equal(intent?.id, intentIdOf(res.body.client_secret));
  assert.equal(intent?.amount, 5000);
  assert.equal(intent?.currency, "jpy");
  assert.equal(intent?.transfer_group, `deal:${deal.id}`);
});

sqlTest(
  "create-deal-payment: a second call answers the same secret and creates no second intent",
  async () => {
    const deal = await createDeal(db.pool);
    const first = await pay(deal.id, deal.buyer);
    assert.equal(first.status, 200, JSON.stringify(first.body));
    const created = double.createdCount("payment_intent");
    const second = await pay(deal.id, deal.buyer);
    assert.equal(second.status, 200, JSON.stringify(second.body));
    assert.equal(second.body.client_secret, first.body.client_secret);
    assert.equal(double.createdCount("payment_intent"), created);
    assert.equal(intentsOf(deal.id).length, 1);
  },
);

sqlTest("create-deal-payment: 5 concurrent calls make one intent", async () => {
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
  const secrets = new Set(answers.map((a) => a.body.client_secret));
  assert.equal(secrets.size, 1, [...secrets].join());
  const intents = intentsOf(deal.id);
  assert.equal(intents.length, 1);
  assert.equal(intents[0]?.client_secret, answers[0]?.body.client_secret);
  assert.equal((await paymentColumns(deal.id)).payproc_payment_intent_id, intents[0]?.id);
});

sqlTest(
  "create-deal-payment: refusals — the seller, a stranger, no token, a bad dealId, an unknown deal — create nothing",
  async () => {
    const deal = await createDeal(db.pool);
    const created = double.createdCount("payment_intent");
    const posts = double.requestsTo("POST", "/v1/payment_intents").length;

    const seller = await pay(deal.id, deal.seller);
    assert.equal(seller.status, 403, JSON.stringify(seller.body));
    assert.equal(seller.body.error?.code, "forbidden");

    const stranger = await pay(deal.id, await createUser(db.pool));
    assert.equal(stranger.status, 403, JSON.stringify(stranger.body));
    assert.equal(stranger.body.error?.code, "forbidden");

    const none = await pay(deal.id);
    assert.equal(none.status, 401, JSON.stringify(none.body));

    for (const bad of ["42", "", 42, null]) {
      const res = await pay(bad, deal.buyer);
      assert.equal(res.status, 400, `${JSON.stringify(bad)}: ${JSON.stringify(res.body)}`);
      assert.equal(res.body.error?.code, "invalid_input");
    }

    const unknown = await pay(crypto.randomUUID(), deal.buyer);
    assert.equal(unknown.status, 404, JSON.stringify(unknown.body));
    assert.equal(unknown.body.error?.code, "not_found");

    assert.equal(double.createdCount("payment_intent"), created);
    assert.equal(double.requestsTo("POST", "/v1/payment_intents").length, posts);
    assert.equal(intentsOf(deal.id).length, 0);
    const row = await paymentColumns(deal.id);
    assert.equal(row.payproc_payment_intent_id, null);
    assert.equal(row.payment_status, null);
  },
);

sqlTest("create-deal-payment: a paid deal answers 409 already_paid", async () => {
  const deal = await createDeal(db.pool);
  const intentId = await payDeal(setup, deal);
  assert.equal((await dealState(db.pool, deal.id)).status, "funded");
  const created = double.createdCount("payment_intent");
  const res = await pay(deal.id, deal.buyer);
  assert.equal(res.status, 409, JSON.stringify(res.body));
  assert.equal(res.body.error?.code, "conflict");
  assert.equal(res.body.error?.details?.reason, "already_paid");
  assert.equal(double.createdCount("payment_intent"), created);
  assert.equal((await paymentColumns(deal.id)).payproc_payment_intent_id, intentId);
});

sqlTest(
  "create-deal-payment: an intent that succeeded at the processor (webhook not yet arrived) answers 409, no second intent",
  async () => {
    const deal = await createDeal(db.pool);
    const first = await pay(deal.id, deal.buyer);
    assert.equal(first.status, 200, JSON.stringify(first.body));
    double.setPaymentIntentStatus(intentIdOf(first.body.client_secret), "succeeded");
    const created = double.createdCount("payment_intent");
    const res = await pay(deal.id, deal.buyer);
    assert.equal(res.status, 409, JSON.stringify(res.body));
    assert.equal(res.body.error?.code, "conflict");
    assert.equal(res.body.error?.details?.reason, "already_paid");
    assert.equal(double.createdCount("payment_intent"), created);
  },
);

sqlTest("create-deal-payment: a cancelled deal answers 409", async () => {
  const deal = await createDeal(db.pool);
  await db.pool.query("select public.cancel_deal($1)", [deal.id]);
  const created = double.createdCount("payment_intent");
  const res = await pay(deal.id, deal.buyer);
  assert.equal(res.status, 409, JSON.stringify(res.body));
  assert.equal(res.body.error?.code, "conflict");
  assert.equal(res.body.error?.details?.reason, "cancelled");
  assert.equal(double.createdCount("payment_intent"), created);
  assert.equal(intentsOf(deal.id).length, 0);
});

sqlTest(
  "create-deal-payment: an intent canceled at the processor is replaced by a new one",
  async () => {
    const deal = await createDeal(db.pool);
    const first = await pay(deal.id, deal.buyer);
    assert.equal(first.status, 200, JSON.stringify(first.body));
    const oldId = intentIdOf(first.body.client_secret);
    double.setPaymentIntentStatus(oldId, "canceled");

    const second = await pay(deal.id, deal.buyer);
    assert.equal(second.status, 200, JSON.stringify(second.body));
    assert.notEqual(second.body.client_secret, first.body.client_secret);
    const newId = intentIdOf(second.body.client_secret);
    assert.notEqual(newId, oldId);
    const fresh = double.get("payment_intent", newId);
    assert.equal(fresh?.status, "requires_payment_method");
    assert.equal(fresh?.amount, 125000);
    assert.equal(fresh?.metadata.deal_id, deal.id);
    assert.equal(fresh?.transfer_group, `deal:${deal.id}`);
    assert.equal(intentsOf(deal.id).length, 2);
    assert.equal((await paymentColumns(deal.id)).payproc_payment_intent_id, newId);

    const creations = creationKeysOf(deal.id);
    assert.equal(creations.length, 2);
    assert.ok(creations[1]?.startsWith(`deal-payment:${deal.id}:`), String(creations[1]));
    assert.notEqual(creations[1], creations[0]);

    // The new intent is now the one answered.
    const third = await pay(deal.id, deal.buyer);
    assert.equal(third.body.client_secret, second.body.client_secret);
    assert.equal(intentsOf(deal.id).length, 2);
  },
);

sqlTest(
  "create-deal-payment: an open hosted checkout from create-deal-checkout is expired first, then an intent is made",
  async () => {
    const deal = await createDeal(db.pool);
    const token = await keys.userToken(deal.buyer);
    const checkout = await invoke<{ url?: string }>(createDealCheckout, runtime, {
      token,
      body: { dealId: deal.id },
    });
    assert.equal(checkout.status, 200, JSON.stringify(checkout.body));
    const sessionId = (await paymentColumns(deal.id)).payproc_checkout_session_id;
    assert.ok(sessionId);
    assert.equal(double.get("checkout.session", sessionId)?.status, "open");

    const res = await pay(deal.id, deal.buyer);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(double.get("checkout.session", sessionId)?.status, "expired");
    assert.equal(double.requestsTo("POST", `/v1/checkout/sessions/${sessionId}/expire`).length, 1);
    const [intent] = intentsOf(deal.id);
    assert.equal(intent?.id, intentIdOf(res.body.client_secret));
    assert.equal(intent?.amount, 125000);
    assert.equal(intent?.status, "requires_payment_method");
    assert.equal((await paymentColumns(deal.id)).payproc_payment_intent_id, intent?.id);

    // Asking again answers the same intent and leaves the expired session alone.
    const again = await pay(deal.id, deal.buyer);
    assert.equal(again.status, 200, JSON.stringify(again.body));
    assert.equal(again.body.client_secret, res.body.client_secret);
    assert.equal(intentsOf(deal.id).length, 1);
  },
);

sqlTest(
  "create-deal-payment: a completed hosted checkout (webhook not yet arrived) answers 409, no intent",
  async () => {
    const deal = await createDeal(db.pool);
    const checkout = await invoke<{ url?: string }>(createDealCheckout, runtime, {
      token: await keys.userToken(deal.buyer),
      body: { dealId: deal.id },
    });
    assert.equal(checkout.status, 200, JSON.stringify(checkout.body));
    const sessionId = (await paymentColumns(deal.id)).payproc_checkout_session_id!;
    double.completeCheckout(sessionId);
    const before = intentsOf(deal.id).length; // the checkout's own intent
    const res = await pay(deal.id, deal.buyer);
    assert.equal(res.status, 409, JSON.stringify(res.body));
    assert.equal(res.body.error?.code, "conflict");
    assert.equal(intentsOf(deal.id).length, before);
    assert.equal(double.get("checkout.session", sessionId)?.status, "complete");
  },
);

sqlTest("create-deal-payment: processor down → 503 upstream_unavailable", async () => {
  const deal = await createDeal(db.pool);
  // The SDK retries once with the same key; both attempts fail.
  double.failNext({ method: "POST", path: "/v1/payment_intents", status: 500, times: 2 });
  const res = await pay(deal.id, deal.buyer);
  assert.equal(res.status, 503, JSON.stringify(res.body));
  assert.equal(res.body.error?.code, "upstream_unavailable");
  assert.equal(intentsOf(deal.id).length, 0);
  const row = await paymentColumns(deal.id);
  assert.equal(row.payproc_payment_intent_id, null);
  assert.equal((await dealState(db.pool, deal.id)).status, "pending_payment");

  const ok = await pay(deal.id, deal.buyer);
  assert.equal(ok.status, 200, JSON.stringify(ok.body));
  assert.equal(intentsOf(deal.id).length, 1);
});

/** Resolves once `done()` holds (polling). */
async function until(done: () => boolean): Promise<void> {
  while (!done()) await new Promise((resolve) => setTimeout(resolve, 5));
}

sqlTest(
  "create-deal-payment: a hosted checkout opened while the intent is being created leaves one way to pay",
  async () => {
    const deal = await createDeal(db.pool);
    const token = await keys.userToken(deal.buyer);
    // The intent's creation is slow; the buyer opens a hosted checkout meanwhile (another tab).
    const posts = creationKeysOf(deal.id).length;
    double.failNext({ method: "POST", path: "/v1/payment_intents", delayMs: 300 });
    const paying = pay(deal.id, deal.buyer);
    await until(() => creationKeysOf(deal.id).length > posts);
    const checkout = await invoke<{ url?: string }>(createDealCheckout, runtime, {
      token,
      body: { dealId: deal.id },
    });
    const paid = await paying;
    assert.equal(checkout.status, 200, JSON.stringify(checkout.body));

    const session = double.all("checkout.session").find((s) => s.url === checkout.body.url);
    const intent = paid.status === 200
      ? double.get("payment_intent", intentIdOf(paid.body.client_secret))
      : undefined;
    const intentPayable = intent?.status === "requires_payment_method";
    const sessionOpen = session?.status === "open";
    // A checkout stored while the intent was being created wins: the intent is
    // cancelled and the call answers 409 changed_meanwhile, never two payable ways.
    assert.ok(
      !(intentPayable && sessionOpen),
      `both answered and payable: ${paid.status} ${intent?.id} and ${checkout.status} ${session?.id}`,
    );
    const row = await paymentColumns(deal.id);
    if (intentPayable) assert.equal(row.payproc_payment_intent_id, intent?.id);
    if (sessionOpen) assert.equal(row.payproc_checkout_session_id, session?.id);
  },
);

sqlTest(
  "create-deal-payment: a deal in due diligence takes no payment (409 in_diligence) until the buyer confirms",
  async () => {
    const loi = await createLoiDeal(db.pool);
    const refused = await pay(loi.dealId, loi.buyer);
    assert.equal(refused.status, 409, JSON.stringify(refused.body));
    assert.equal(refused.body.error?.details?.reason, "in_diligence");
    assert.deepEqual(intentsOf(loi.dealId), [], "nothing at the processor");
    await confirmDiligence(db.pool, loi);
    const paid = await pay(loi.dealId, loi.buyer);
    assert.equal(paid.status, 200, JSON.stringify(paid.body));
    assert.equal(intentsOf(loi.dealId)[0]?.amount, 100000);
  },
);
