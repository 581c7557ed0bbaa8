import assert from "node:assert/strict";
import Stripe from "stripe";
import { payprocClient, PayprocDouble } from "./payproc_double.ts";

const WEBHOOK_SECRET = "whsec_test_double_secret";

Deno.test("prices: lookup by lookup key, with the product expanded", async () => {
  await using double = new PayprocDouble();
  const monthly = double.addPrice({
    lookupKey: "pro_monthly",
    unitAmount: 1500,
    interval: "month",
    productName: "Pro",
  });
  double.addPrice({
    lookupKey: "pro_yearly",
    unitAmount: 15000,
    interval: "year",
    productName: "Pro",
  });
  const stripe = payprocClient(double);

  const prices = await stripe.prices.list({
    lookup_keys: ["pro_monthly"],
    active: true,
    expand: ["data.product"],
  });

  assert.equal(prices.object, "list");
  assert.equal(prices.data.length, 1);
  const [price] = prices.data;
  assert.equal(price?.id, monthly.id);
  assert.match(price!.id, /^price_/);
  assert.equal(price?.unit_amount, 1500);
  assert.deepEqual(price?.recurring, {
    interval: "month",
    interval_count: 1,
    meter: null,
    trial_period_days: null,
    usage_type: "licensed",
  });
  assert.equal((price?.product as Stripe.Product).name, "Pro");
  assert.equal((await stripe.prices.retrieve(monthly.id)).lookup_key, "pro_monthly");
});

Deno.test("customers: an Idempotency-Key replay returns the first response and creates nothing", async () => {
  await using double = new PayprocDouble();
  const stripe = payprocClient(double);
  const params = { email: "ada@example.test", metadata: { user_id: "u_1" } };

  const first = await stripe.customers.create(params, { idempotencyKey: "signup-u_1" });
  const again = await stripe.customers.create(params, { idempotencyKey: "signup-u_1" });

  assert.match(first.id, /^cus_/);
  assert.equal(again.id, first.id);
  assert.equal(again.lastResponse.requestId, first.lastResponse.requestId);
  assert.equal(double.createdCount("customer"), 1);
  await assert.rejects(
    stripe.customers.create({ email: "other@example.test" }, { idempotencyKey: "signup-u_1" }),
    (error: unknown) =>
      error instanceof Stripe.errors.StripeIdempotencyError && error.statusCode === 400,
  );
});

Deno.test("customers: a create the client timed out on still happened, and its retry replays it", async () => {
  await using double = new PayprocDouble();
  const stripe = payprocClient(double, undefined, { timeout: 100 });
  double.failNext({ method: "POST", path: "/v1/customers", delayMs: 300 });

  await assert.rejects(
    stripe.customers.create({ email: "ada@example.test" }, { idempotencyKey: "signup-u_1" }),
    Stripe.errors.StripeConnectionError,
  );
  await double.idle();
  assert.equal(double.createdCount("customer"), 1);
  const retried = await stripe.customers.create({ email: "ada@example.test" }, {
    idempotencyKey: "signup-u_1",
  });
  assert.equal(retried.id, double.all("customer")[0]?.id);
  assert.equal(double.createdCount("customer"), 1);
});

Deno.test("customers: list by email, search by metadata, deleted customers", async () => {
  await using double = new PayprocDouble();
  const stripe = payprocClient(double);
  const ada = await stripe.customers.create({
    email: "ada@example.test",
    metadata: { user_id: "u_1" },
  });
  await stripe.customers.create({ email: "bob@example.test", metadata: { user_id: "u_2" } });

  assert.deepEqual(
    (await stripe.customers.list({ email: "ada@example.test" })).data.map((c) => c.id),
    [ada.id],
  );
  const found = await stripe.customers.search({
    query: "metadata['user_id']:'u_1' AND email:'ada@example.test'",
  });
  assert.equal(found.object, "search_result");
  assert.deepEqual(found.data.map((c) => c.id), [ada.id]);

  await stripe.customers.del(ada.id);
  const deleted = await stripe.customers.retrieve(ada.id);
  assert.equal(deleted.deleted, true);
  assert.equal(
    (await stripe.customers.search({ query: "metadata['user_id']:'u_1'" })).data.length,
    0,
  );
  await assert.rejects(
    stripe.customers.update(ada.id, { name: "Ada" }),
    (error: unknown) =>
      error instanceof Stripe.errors.StripeInvalidRequestError &&
      error.code === "resource_missing" && error.statusCode === 404,
  );
});

Deno.test("checkout: a completed subscription session yields a subscription whose items carry the period", async () => {
  await using double = new PayprocDouble();
  const price = double.addPrice({ lookupKey: "pro_monthly", unitAmount: 1500, interval: "month" });
  const stripe = payprocClient(double);
  const customer = await stripe.customers.create({ email: "ada@example.test" });

  const session = await stripe.checkout.sessions.create({
    mode: "subscription",
    customer: customer.id,
    client_reference_id: "u_1",
    line_items: [{ price: price.id, quantity: 1 }],
    metadata: { user_id: "u_1" },
    subscription_data: { metadata: { user_id: "u_1" } },
    success_url: "https://app.example.test/ok",
    cancel_url: "https://app.example.test/cancel",
  });
  assert.match(session.id, /^cs_test_/);
  assert.equal(session.url, `${double.url}/checkout/${session.id}`);
  assert.equal(session.status, "open");
  assert.equal((await fetch(session.url!).then((r) => r.text())).includes(session.id), true);

  const [recorded] = double.requestsTo("POST", "/v1/checkout/sessions");
  assert.deepEqual(recorded?.body, {
    mode: "subscription",
    customer: customer.id,
    client_reference_id: "u_1",
    line_items: [{ price: price.id, quantity: "1" }],
    metadata: { user_id: "u_1" },
    subscription_data: { metadata: { user_id: "u_1" } },
    success_url: "https://app.example.test/ok",
    cancel_url: "https://app.example.test/cancel",
  });

  const completed = double.completeCheckout(session.id);
  assert.equal(completed.session.status, "complete");
  const subscription = await stripe.subscriptions.retrieve(completed.subscription!.id, {
    expand: ["latest_invoice"],
  });
  assert.equal(subscription.status, "active");
  assert.equal(subscription.customer, customer.id);
  assert.deepEqual(subscription.metadata, { user_id: "u_1" });
  assert.equal("current_period_end" in subscription, false);
  const [item] = subscription.items.data;
  assert.match(item!.id, /^si_/);
  assert.equal(item?.price.id, price.id);
  assert.ok(item!.current_period_end > item!.current_period_start);
  const invoice = subscription.latest_invoice as Stripe.Invoice;
  assert.equal(invoice.status, "paid");
  assert.equal(invoice.amount_paid, 1500);
  assert.equal(invoice.parent?.subscription_details?.subscription, subscription.id);

  const retrieved = await stripe.checkout.sessions.retrieve(session.id);
  assert.equal(retrieved.subscription, subscription.id);
  assert.equal(retrieved.payment_status, "paid");
});

Deno.test("checkout: payment mode creates a succeeded payment intent; recurring prices are rejected", async () => {
  await using double = new PayprocDouble();
  const oneTime = double.addPrice({ unitAmount: 2500 });
  const monthly = double.addPrice({ unitAmount: 900, interval: "month" });
  const stripe = payprocClient(double);

  const session = await stripe.checkout.sessions.create({
    mode: "payment",
    customer_email: "buyer@example.test",
    line_items: [{ price: oneTime.id, quantity: 2 }],
    payment_intent_data: { metadata: { order_id: "o_1" }, transfer_group: "order_o_1" },
    success_url: "https://app.example.test/ok",
  });
  assert.equal(session.amount_total, 5000);
  const { paymentIntent } = double.completeCheckout(session.id);
  const pi = await stripe.paymentIntents.retrieve(paymentIntent!.id);
  assert.equal(pi.status, "succeeded");
  assert.equal(pi.amount_received, 5000);
  assert.equal(pi.transfer_group, "order_o_1");
  assert.deepEqual(pi.metadata, { order_id: "o_1" });
  assert.match(pi.latest_charge as string, /^ch_/);

  await assert.rejects(
    stripe.checkout.sessions.create({
      mode: "payment",
      line_items: [{ price: monthly.id, quantity: 1 }],
    }),
    (error: unknown) =>
      error instanceof Stripe.errors.StripeInvalidRequestError &&
      /recurring price/.test(error.message),
  );
});

Deno.test("subscriptions: list filters by customer and status and paginates with starting_after", async () => {
  await using double = new PayprocDouble();
  double.addPrice({ lookupKey: "basic", unitAmount: 500, interval: "month" });
  const customer = double.addCustomer({ email: "ada@example.test" });
  const other = double.addCustomer({ email: "bob@example.test" });
  const ids = [1, 2, 3].map(() =>
    double.addSubscription({ customer: customer.id, lookupKey: "basic" }).id
  );
  const canceled = double.addSubscription({
    customer: customer.id,
    lookupKey: "basic",
    status: "canceled",
  });
  double.addSubscription({ customer: other.id, lookupKey: "basic" });
  const stripe = payprocClient(double);

  const page1 = await stripe.subscriptions.list({ customer: customer.id, limit: 2 });
  assert.equal(page1.has_more, true);
  const page2 = await stripe.subscriptions.list({
    customer: customer.id,
    limit: 2,
    starting_after: page1.data.at(-1)!.id,
  });
  assert.equal(page2.has_more, false);
  assert.deepEqual([...page1.data, ...page2.data].map((s) => s.id), [...ids].reverse());
  const all = await stripe.subscriptions.list({ customer: customer.id, status: "all" });
  assert.equal(all.data.length, 4);
  assert.ok(all.data.some((s) => s.id === canceled.id));
});

Deno.test("subscriptions: update and cancel through the API, processor-side changes through helpers", async () => {
  await using double = new PayprocDouble();
  double.addPrice({ lookupKey: "basic", unitAmount: 500, interval: "month" });
  const pro = double.addPrice({ lookupKey: "pro", unitAmount: 1500, interval: "month" });
  const customer = double.addCustomer();
  const seeded = double.addSubscription({
    customer: customer.id,
    lookupKey: "basic",
    periodStart: 1_800_000_000,
    periodEnd: 1_802_592_000,
  });
  const stripe = payprocClient(double);

  const updated = await stripe.subscriptions.update(seeded.id, {
    cancel_at_period_end: true,
    metadata: { reason: "price" },
  });
  assert.equal(updated.cancel_at_period_end, true);
  assert.equal(updated.cancel_at, 1_802_592_000);
  assert.equal(updated.metadata.reason, "price");

  const switched = await stripe.subscriptions.update(seeded.id, {
    items: [{ id: seeded.items.data[0]!.id, price: pro.id }],
  });
  assert.equal(switched.items.data[0]?.price.id, pro.id);

  const renewed = double.updateSubscription(seeded.id, {
    status: "past_due",
    periodStart: 1_802_592_000,
    periodEnd: 1_805_270_400,
  });
  assert.equal(renewed.items.data[0]?.current_period_end, 1_805_270_400);
  assert.equal((await stripe.subscriptions.retrieve(seeded.id)).status, "past_due");

  const canceled = await stripe.subscriptions.cancel(seeded.id);
  assert.equal(canceled.status, "canceled");
  assert.ok(canceled.ended_at);
  await assert.rejects(
    stripe.subscriptions.update(seeded.id, { cancel_at_period_end: false }),
    (error: unknown) =>
      error instanceof Stripe.errors.StripeInvalidRequestError &&
      error.param === "cancel_at_period_end",
  );
});

Deno.test("invoices: list by subscription and created[gt]", async () => {
  await using double = new PayprocDouble();
  double.addPrice({ lookupKey: "basic", unitAmount: 500, interval: "month" });
  const customer = double.addCustomer();
  const sub = double.addSubscription({
    customer: customer.id,
    lookupKey: "basic",
    withInvoice: false,
  });
  double.addInvoice({
    customer: customer.id,
    subscription: sub.id,
    amount: 500,
    created: 1_800_000_000,
  });
  const recent = double.addInvoice({
    customer: customer.id,
    subscription: sub.id,
    amount: 500,
    created: 1_802_000_000,
    status: "open",
  });
  double.addInvoice({ customer: customer.id, amount: 100, created: 1_803_000_000 });
  const stripe = payprocClient(double);

  const found = await stripe.invoices.list({
    subscription: sub.id,
    created: { gt: 1_801_000_000 },
  });
  assert.deepEqual(found.data.map((i) => i.id), [recent.id]);
  assert.match(recent.id, /^in_/);
  assert.equal(
    (await stripe.invoices.list({ customer: customer.id, status: "paid" })).data.length,
    2,
  );
  assert.equal((await stripe.invoices.retrieve(recent.id)).amount_remaining, 500);
});

Deno.test("webhooks: signed events verify with the SDK's constructEventAsync", async () => {
  await using double = new PayprocDouble();
  double.addPrice({ lookupKey: "basic", unitAmount: 500, interval: "month" });
  const customer = double.addCustomer();
  const sub = double.addSubscription({ customer: customer.id, lookupKey: "basic" });
  const stripe = payprocClient(double);

  const event = double.event(
    "customer.subscription.updated",
    double.updateSubscription(sub.id, { status: "past_due" }),
    {
      previousAttributes: { status: "active" },
    },
  );
  const signed = await double.signedWebhook(event, WEBHOOK_SECRET);
  const verified = await stripe.webhooks.constructEventAsync(
    signed.body,
    signed.headers["stripe-signature"],
    WEBHOOK_SECRET,
    undefined,
    Stripe.createSubtleCryptoProvider(),
  );
  assert.match(verified.id, /^evt_/);
  assert.equal(verified.api_version, Stripe.API_VERSION);
  assert.equal(verified.type, "customer.subscription.updated");
  assert.equal((verified.data.object as Stripe.Subscription).status, "past_due");
  assert.equal((await stripe.events.retrieve(event.id)).id, event.id);

  const stale = await double.signedWebhook(event, WEBHOOK_SECRET, {
    timestamp: Math.floor(Date.now() / 1000) - 3600,
  });
  await assert.rejects(
    stripe.webhooks.constructEventAsync(
      stale.body,
      stale.headers["stripe-signature"],
      WEBHOOK_SECRET,
      undefined,
      Stripe.createSubtleCryptoProvider(),
    ),
    Stripe.errors.StripeSignatureVerificationError,
  );
});

Deno.test("connect: account, account link, login link after onboarding", async () => {
  await using double = new PayprocDouble();
  const stripe = payprocClient(double);

  const account = await stripe.accounts.create({
    controller: {
      stripe_dashboard: { type: "express" },
      fees: { payer: "application" },
      losses: { payments: "application" },
    },
    email: "seller@example.test",
    capabilities: { transfers: { requested: true } },
    metadata: { seller_id: "s_1" },
  });
  assert.match(account.id, /^acct_/);
  assert.equal(account.charges_enabled, false);
  assert.ok(account.requirements?.currently_due?.length);

  const link = await stripe.accountLinks.create({
    account: account.id,
    type: "account_onboarding",
    refresh_url: "https://app.example.test/refresh",
    return_url: "https://app.example.test/return",
  });
  assert.equal(link.object, "account_link");
  assert.ok(link.url.startsWith(`${double.url}/connect/`));
  assert.ok(link.expires_at > link.created);

  await assert.rejects(
    stripe.accounts.createLoginLink(account.id),
    Stripe.errors.StripeInvalidRequestError,
  );
  double.setAccount(account.id, {
    requirements: { currently_due: ["external_account"], past_due: [], disabled_reason: null },
    details_submitted: true,
  });
  assert.deepEqual((await stripe.accounts.retrieve(account.id)).requirements?.currently_due, [
    "external_account",
  ]);
  double.completeOnboarding(account.id);
  const onboarded = await stripe.accounts.retrieve(account.id);
  assert.equal(onboarded.payouts_enabled, true);
  assert.equal(onboarded.capabilities?.transfers, "active");
  const login = await stripe.accounts.createLoginLink(account.id);
  assert.equal(login.object, "login_link");
  assert.equal(double.createdCount("login_link"), 1);
});

Deno.test("payments: payment intent capture, partial refund, transfer from the charge", async () => {
  await using double = new PayprocDouble();
  const seller = double.addAccount();
  double.completeOnboarding(seller.id);
  const stripe = payprocClient(double);

  const created = await stripe.paymentIntents.create({
    amount: 10_000,
    currency: "usd",
    capture_method: "manual",
    metadata: { order_id: "o_1" },
    transfer_group: "order_o_1",
  });
  assert.match(created.id, /^pi_/);
  assert.equal(created.status, "requires_payment_method");
  double.setPaymentIntentStatus(created.id, "requires_capture");
  const captured = await stripe.paymentIntents.capture(created.id);
  assert.equal(captured.status, "succeeded");
  const chargeId = captured.latest_charge as string;

  const refund = await stripe.refunds.create({
    payment_intent: created.id,
    amount: 2_000,
    metadata: { reason: "late" },
  });
  assert.match(refund.id, /^re_/);
  assert.equal(refund.status, "succeeded");
  assert.equal((await stripe.refunds.retrieve(refund.id)).amount, 2_000);
  assert.equal((await stripe.charges.retrieve(chargeId)).amount_refunded, 2_000);

  const transfer = await stripe.transfers.create({
    amount: 7_000,
    currency: "usd",
    destination: seller.id,
    source_transaction: chargeId,
    transfer_group: "order_o_1",
  });
  assert.match(transfer.id, /^tr_/);
  assert.equal((await stripe.transfers.retrieve(transfer.id)).destination, seller.id);
  await assert.rejects(
    stripe.transfers.create({
      amount: 2_000,
      currency: "usd",
      destination: seller.id,
      source_transaction: chargeId,
    }),
    (error: unknown) =>
      error instanceof Stripe.errors.StripeInvalidRequestError &&
      error.code === "balance_insufficient",
  );
  await assert.rejects(
    stripe.paymentIntents.cancel(created.id),
    (error: unknown) =>
      error instanceof Stripe.errors.StripeInvalidRequestError &&
      error.code === "payment_intent_unexpected_state",
  );
});

Deno.test("billing portal: a session for the customer with its url", async () => {
  await using double = new PayprocDouble();
  const customer = double.addCustomer();
  const stripe = payprocClient(double);
  const portal = await stripe.billingPortal.sessions.create({
    customer: customer.id,
    return_url: "https://app.example.test/account",
  });
  assert.match(portal.id, /^bps_/);
  assert.ok(portal.url.startsWith(`${double.url}/billing_portal/`));
  assert.equal(portal.return_url, "https://app.example.test/account");
});

Deno.test("errors: auth, unknown parameters and missing resources answer the API's envelope", async () => {
  await using double = new PayprocDouble();
  await assert.rejects(
    payprocClient(double, "pk_test_wrong").customers.list(),
    (error: unknown) =>
      error instanceof Stripe.errors.StripeAuthenticationError && error.statusCode === 401,
  );
  const stripe = payprocClient(double);
  await assert.rejects(
    stripe.customers.create({ emial: "typo@example.test" } as Stripe.CustomerCreateParams),
    (error: unknown) =>
      error instanceof Stripe.errors.StripeInvalidRequestError &&
      error.code === "parameter_unknown" && error.param === "emial",
  );
  await assert.rejects(
    stripe.subscriptions.retrieve("sub_missing"),
    (error: unknown) =>
      error instanceof Stripe.errors.StripeInvalidRequestError && error.statusCode === 404 &&
      error.code === "resource_missing" &&
      error.message === "No such subscription: 'sub_missing'",
  );
  const raw = await fetch(`${double.url}/v1/customers/cus_missing`, {
    headers: { authorization: "Bearer sk_test_x" },
  });
  assert.equal(raw.status, 404);
  assert.deepEqual((await raw.json()).error.type, "invalid_request_error");
});

Deno.test("failNext: an injected 500 surfaces as StripeAPIError, and the next request succeeds", async () => {
  await using double = new PayprocDouble();
  const stripe = payprocClient(double);
  double.failNext({ method: "POST", path: "/v1/customers", status: 500 });

  await assert.rejects(
    stripe.customers.create({ email: "ada@example.test" }),
    (error: unknown) => error instanceof Stripe.errors.StripeAPIError && error.statusCode === 500,
  );
  assert.equal(double.createdCount("customer"), 0);
  await stripe.customers.create({ email: "ada@example.test" });
  assert.equal(double.createdCount("customer"), 1);
  assert.equal(double.requestsTo("POST", "/v1/customers").length, 2);

  double.failNext({ path: /^\/v1\/prices/, status: 429, times: 2 });
  await assert.rejects(stripe.prices.list(), Stripe.errors.StripeRateLimitError);
  await assert.rejects(stripe.prices.list(), Stripe.errors.StripeRateLimitError);
  assert.equal((await stripe.prices.list()).object, "list");
});

Deno.test("failNext: a delayed response trips the SDK's timeout", async () => {
  await using double = new PayprocDouble();
  const stripe = payprocClient(double, undefined, { timeout: 150 });
  double.failNext({ path: "/v1/customers", delayMs: 5_000 });

  const started = Date.now();
  await assert.rejects(
    stripe.customers.list(),
    (error: unknown) =>
      error instanceof Stripe.errors.StripeConnectionError && /timeout/.test(error.message),
  );
  assert.ok(Date.now() - started < 2_000);
  assert.equal((await stripe.customers.list()).object, "list");
});

/** A succeeded payment intent (through the API) and its charge id. */
async function paidIntent(
  double: PayprocDouble,
  stripe: Stripe,
  amount = 10_000,
): Promise<{ pi: Stripe.PaymentIntent; chargeId: string }> {
  const created = await stripe.paymentIntents.create({
    amount,
    currency: "usd",
    metadata: { order_id: "o_1" },
    transfer_group: "order_o_1",
  });
  const pi = double.setPaymentIntentStatus(created.id, "succeeded");
  return { pi: await stripe.paymentIntents.retrieve(pi.id), chargeId: pi.latest_charge as string };
}

Deno.test("disputes: a disputed charge answers retrieve, list filters, update and close", async () => {
  await using double = new PayprocDouble();
  const stripe = payprocClient(double);
  const { pi, chargeId } = await paidIntent(double, stripe);
  const other = await paidIntent(double, stripe, 3_000);

  const dispute = double.disputeCharge(chargeId);
  double.event("charge.dispute.created", dispute);
  assert.match(dispute.id, /^dp_/);
  assert.equal(dispute.status, "needs_response");
  assert.equal(dispute.amount, 10_000);
  assert.equal(dispute.currency, "usd");
  assert.equal(dispute.charge, chargeId);
  assert.equal(dispute.payment_intent, pi.id);
  assert.equal(dispute.is_charge_refundable, false);
  assert.equal(dispute.reason, "fraudulent");
  assert.equal(dispute.balance_transactions[0]?.amount, -10_000);
  assert.equal((await stripe.charges.retrieve(chargeId)).disputed, true);
  assert.throws(() => double.disputeCharge(chargeId), /already disputed/);
  const second = double.disputeCharge(other.chargeId, { reason: "product_not_received" });

  const retrieved = await stripe.disputes.retrieve(dispute.id, { expand: ["charge"] });
  assert.equal((retrieved.charge as Stripe.Charge).id, chargeId);
  assert.equal(retrieved.evidence_details.has_evidence, false);
  assert.deepEqual(
    (await stripe.disputes.list({ charge: chargeId })).data.map((d) => d.id),
    [dispute.id],
  );
  assert.deepEqual(
    (await stripe.disputes.list({ payment_intent: other.pi.id })).data.map((d) => d.id),
    [second.id],
  );
  const page = await stripe.disputes.list({ limit: 1 });
  assert.equal(page.has_more, true);
  assert.deepEqual(
    (await stripe.disputes.list({ starting_after: page.data[0]!.id })).data.length,
    1,
  );

  const updated = await stripe.disputes.update(dispute.id, {
    metadata: { case: "c_1" },
    evidence: { uncategorized_text: "Delivered on time", customer_email_address: "b@x.test" },
  });
  assert.deepEqual(updated.metadata, { case: "c_1" });
  assert.equal(updated.status, "needs_response");
  assert.equal(updated.evidence_details.has_evidence, true);
  const submitted = await stripe.disputes.update(dispute.id, { submit: true });
  assert.equal(submitted.status, "under_review");
  assert.equal(submitted.evidence_details.submission_count, 1);
  await assert.rejects(
    stripe.disputes.close(dispute.id),
    Stripe.errors.StripeInvalidRequestError,
  );
  await assert.rejects(
    stripe.disputes.update(dispute.id, { reason: "x" } as Stripe.DisputeUpdateParams),
    (error: unknown) =>
      error instanceof Stripe.errors.StripeInvalidRequestError &&
      error.code === "parameter_unknown" && error.param === "reason",
  );
  const won = double.closeDispute(dispute.id, "won");
  assert.equal(won.status, "won");
  assert.equal(won.balance_transactions.length, 2);
  double.event("charge.dispute.closed", won);

  const accepted = await stripe.disputes.close(second.id);
  assert.equal(accepted.status, "lost");
  assert.equal((await stripe.disputes.retrieve(second.id)).status, "lost");
  await assert.rejects(
    stripe.disputes.retrieve("dp_missing"),
    (error: unknown) =>
      error instanceof Stripe.errors.StripeInvalidRequestError && error.statusCode === 404 &&
      error.message === "No such dispute: 'dp_missing'",
  );
});

Deno.test("transfers: reversals are created once per Idempotency-Key, listed, retrieved, and capped", async () => {
  await using double = new PayprocDouble();
  const seller = double.addAccount();
  double.completeOnboarding(seller.id);
  const stripe = payprocClient(double);
  const transfer = await stripe.transfers.create({
    amount: 5_000,
    currency: "usd",
    destination: seller.id,
    transfer_group: "order_o_1",
  });

  const params = { amount: 2_000, metadata: { reason: "refund r_1" } };
  const reversal = await stripe.transfers.createReversal(transfer.id, params, {
    idempotencyKey: "reverse-r_1",
  });
  const replayed = await stripe.transfers.createReversal(transfer.id, params, {
    idempotencyKey: "reverse-r_1",
  });
  assert.match(reversal.id, /^trr_/);
  assert.equal(reversal.object, "transfer_reversal");
  assert.equal(reversal.transfer, transfer.id);
  assert.equal(reversal.amount, 2_000);
  assert.equal(reversal.currency, "usd");
  assert.deepEqual(reversal.metadata, { reason: "refund r_1" });
  assert.equal(reversal.source_refund, null);
  assert.match(reversal.destination_payment_refund as string, /^pyr_/);
  assert.equal(replayed.id, reversal.id);
  assert.equal(double.createdCount("transfer_reversal"), 1);

  const afterOne = await stripe.transfers.retrieve(transfer.id);
  assert.equal(afterOne.amount_reversed, 2_000);
  assert.equal(afterOne.reversed, false);
  assert.deepEqual(afterOne.reversals.data.map((r) => r.id), [reversal.id]);
  assert.deepEqual(
    (await stripe.transfers.listReversals(transfer.id)).data.map((r) => r.id),
    [reversal.id],
  );
  assert.equal(
    (await stripe.transfers.retrieveReversal(transfer.id, reversal.id)).amount,
    2_000,
  );

  await assert.rejects(
    stripe.transfers.createReversal(transfer.id, { amount: 3_001 }),
    (error: unknown) =>
      error instanceof Stripe.errors.StripeInvalidRequestError && error.param === "amount",
  );
  await assert.rejects(
    stripe.transfers.createReversal(transfer.id, { amount: 10, reverse: true } as never),
    (error: unknown) =>
      error instanceof Stripe.errors.StripeInvalidRequestError &&
      error.code === "parameter_unknown",
  );
  const { transfer: reversed, reversal: rest } = double.reverseTransfer(transfer.id);
  double.event("transfer.reversed", reversed);
  assert.equal(rest.amount, 3_000);
  assert.equal(reversed.amount_reversed, 5_000);
  assert.equal(reversed.reversed, true);
  assert.deepEqual(reversed.reversals.data.map((r) => r.id), [rest.id, reversal.id]);
  await assert.rejects(
    stripe.transfers.createReversal(transfer.id),
    (error: unknown) =>
      error instanceof Stripe.errors.StripeInvalidRequestError &&
      error.message === `The transfer ${transfer.id} is already fully reversed.`,
  );
  assert.equal(double.createdCount("transfer_reversal"), 2);

  const other = await stripe.transfers.create({
    amount: 100,
    currency: "usd",
    destination: seller.id,
  });
  await assert.rejects(
    stripe.transfers.retrieveReversal(other.id, reversal.id),
    (error: unknown) =>
      error instanceof Stripe.errors.StripeInvalidRequestError && error.statusCode === 404,
  );
});

Deno.test("payments: failPaymentIntent leaves a declined attempt visible on retrieve", async () => {
  await using double = new PayprocDouble();
  const stripe = payprocClient(double);
  const created = await stripe.paymentIntents.create({
    amount: 4_200,
    currency: "usd",
    payment_method: "pm_card_visa",
  });

  const failed = double.failPaymentIntent(created.id);
  double.event("payment_intent.payment_failed", failed);
  const pi = await stripe.paymentIntents.retrieve(created.id);
  assert.equal(pi.status, "requires_payment_method");
  assert.equal(pi.payment_method, null);
  assert.equal(pi.last_payment_error?.type, "card_error");
  assert.equal(pi.last_payment_error?.code, "card_declined");
  assert.equal(pi.last_payment_error?.decline_code, "generic_decline");
  assert.equal(pi.last_payment_error?.message, "Your card was declined.");
  const failedCharge = await stripe.charges.retrieve(pi.latest_charge as string);
  assert.equal(failedCharge.status, "failed");
  assert.equal(failedCharge.paid, false);
  assert.equal(failedCharge.failure_code, "card_declined");
  assert.equal(pi.last_payment_error?.charge, failedCharge.id);

  double.failPaymentIntent(created.id, {
    code: "expired_card",
    message: "Your card has expired.",
  });
  const expired = await stripe.paymentIntents.retrieve(created.id);
  assert.equal(expired.last_payment_error?.code, "expired_card");
  assert.equal(expired.last_payment_error?.message, "Your card has expired.");
  assert.equal(expired.last_payment_error?.decline_code, undefined);

  const paid = double.setPaymentIntentStatus(created.id, "succeeded");
  assert.notEqual(paid.latest_charge, failedCharge.id);
  assert.equal((await stripe.charges.retrieve(paid.latest_charge as string)).status, "succeeded");
  assert.throws(() => double.failPaymentIntent(created.id), /succeeded/);

  const declined = await stripe.paymentIntents.create({ amount: 100, currency: "usd" });
  await assert.rejects(
    stripe.paymentIntents.confirm(declined.id, { payment_method: "pm_card_chargeDeclined" }),
    (error: unknown) => error instanceof Stripe.errors.StripeCardError && error.statusCode === 402,
  );
  const after = await stripe.paymentIntents.retrieve(declined.id);
  assert.equal(after.status, "requires_payment_method");
  assert.equal(after.last_payment_error?.decline_code, "generic_decline");
  await assert.rejects(
    stripe.paymentIntents.confirm(paid.id, { payment_method: "pm_card_visa" }),
    (error: unknown) =>
      error instanceof Stripe.errors.StripeInvalidRequestError &&
      error.code === "payment_intent_unexpected_state",
  );
});

Deno.test("refunds: a full refund marks the charge refunded", async () => {
  await using double = new PayprocDouble();
  const stripe = payprocClient(double);
  const { pi, chargeId } = await paidIntent(double, stripe, 2_500);

  await stripe.refunds.create({ payment_intent: pi.id, amount: 1_000 });
  const partly = await stripe.charges.retrieve(chargeId);
  assert.equal(partly.amount_refunded, 1_000);
  assert.equal(partly.refunded, false);
  await stripe.refunds.create({ charge: chargeId });
  const charge = await stripe.charges.retrieve(chargeId);
  assert.equal(charge.amount_refunded, 2_500);
  assert.equal(charge.refunded, true);
  double.event("charge.refunded", double.get("charge", chargeId)!);
  assert.deepEqual(
    (await stripe.refunds.list({ charge: chargeId })).data.map((r) => r.amount),
    [1_500, 1_000],
  );
  await assert.rejects(
    stripe.refunds.create({ charge: chargeId }),
    (error: unknown) =>
      error instanceof Stripe.errors.StripeInvalidRequestError &&
      error.code === "charge_already_refunded",
  );
});

Deno.test("refunds: a pending refund holds the charge's amount until it fails; a failed one frees it again", async () => {
  await using double = new PayprocDouble();
  const stripe = payprocClient(double);
  const { pi, chargeId } = await paidIntent(double, stripe, 2_500);

  double.setNewRefundStatus("pending");
  const pending = await stripe.refunds.create({ payment_intent: pi.id });
  assert.equal(pending.status, "pending");
  assert.equal(pending.amount, 2_500);
  // The processor counts a pending refund as refunded: nothing is left to refund.
  assert.equal((await stripe.charges.retrieve(chargeId)).amount_refunded, 2_500);
  assert.equal((await stripe.charges.retrieve(chargeId)).refunded, true);
  await assert.rejects(
    stripe.refunds.create({ payment_intent: pi.id, amount: 1 }),
    (error: unknown) =>
      error instanceof Stripe.errors.StripeInvalidRequestError &&
      error.code === "charge_already_refunded",
  );

  // It fails: the status and reason show on retrieve and list, the amount is free again.
  const failed = double.setRefundStatus(pending.id, "failed");
  assert.equal(failed.status, "failed");
  assert.equal(failed.failure_reason, "expired_or_canceled_card");
  assert.match(String(failed.failure_balance_transaction), /^txn_/);
  assert.equal((await stripe.refunds.retrieve(pending.id)).status, "failed");
  const freed = await stripe.charges.retrieve(chargeId);
  assert.equal(freed.amount_refunded, 0);
  assert.equal(freed.refunded, false);

  // Partial refunds: one succeeds later, one is made succeeded and fails afterwards.
  const part = await stripe.refunds.create({ payment_intent: pi.id, amount: 1_000 });
  double.setNewRefundStatus("succeeded");
  const rest = await stripe.refunds.create({ payment_intent: pi.id, amount: 1_500 });
  assert.equal(rest.status, "succeeded");
  assert.equal(double.setRefundStatus(part.id, "succeeded").status, "succeeded");
  assert.equal((await stripe.charges.retrieve(chargeId)).refunded, true);
  double.setRefundStatus(rest.id, "failed", { failureReason: "lost_or_stolen_card" });
  assert.equal((await stripe.refunds.retrieve(rest.id)).failure_reason, "lost_or_stolen_card");
  const partly = await stripe.charges.retrieve(chargeId);
  assert.equal(partly.amount_refunded, 1_000);
  assert.equal(partly.refunded, false);
  assert.deepEqual(
    (await stripe.refunds.list({ payment_intent: pi.id })).data.map((r) => [r.amount, r.status]),
    [[1_500, "failed"], [1_000, "succeeded"], [2_500, "failed"]],
  );

  // Moves the processor never makes.
  assert.throws(() => double.setRefundStatus(pending.id, "succeeded"), /cannot move from failed/);
  assert.throws(() => double.setRefundStatus(part.id, "pending"), /cannot move from succeeded/);
  assert.throws(() => double.setRefundStatus("re_missing", "failed"), /No such refund/);
});

Deno.test("refunds: one that requires action can be canceled (by the API or the helper), others not", async () => {
  await using double = new PayprocDouble();
  const stripe = payprocClient(double);
  const { pi, chargeId } = await paidIntent(double, stripe, 4_000);

  double.setNewRefundStatus("requires_action");
  const first = await stripe.refunds.create({ payment_intent: pi.id, amount: 1_000 });
  const second = await stripe.refunds.create({ payment_intent: pi.id, amount: 1_000 });
  assert.equal(first.status, "requires_action");
  assert.equal((await stripe.charges.retrieve(chargeId)).amount_refunded, 2_000);
  const canceled = await stripe.refunds.cancel(first.id);
  assert.equal(canceled.status, "canceled");
  assert.equal(double.setRefundStatus(second.id, "canceled").status, "canceled");
  assert.equal((await stripe.charges.retrieve(chargeId)).amount_refunded, 0);
  await assert.rejects(
    stripe.refunds.cancel(first.id),
    (error: unknown) =>
      error instanceof Stripe.errors.StripeInvalidRequestError &&
      /status of canceled/.test(error.message),
  );
  // resetState() forgets the status new refunds start in.
  double.resetState();
  const again = await paidIntent(double, stripe, 500);
  assert.equal((await stripe.refunds.create({ payment_intent: again.pi.id })).status, "succeeded");
});

Deno.test("webhooks: refund.failed and charge.refund.updated carry the refund as it is now, signed", async () => {
  await using double = new PayprocDouble();
  const stripe = payprocClient(double);
  const { pi } = await paidIntent(double, stripe, 3_000);
  double.setNewRefundStatus("pending");
  const refund = await stripe.refunds.create({ payment_intent: pi.id });

  const succeeded = double.event(
    "charge.refund.updated",
    double.setRefundStatus(refund.id, "succeeded"),
    { previousAttributes: { status: "pending" } },
  );
  const failed = double.event("refund.failed", double.setRefundStatus(refund.id, "failed"));
  for (const [event, status] of [[succeeded, "succeeded"], [failed, "failed"]] as const) {
    const signed = await double.signedWebhook(event, WEBHOOK_SECRET);
    const verified = await stripe.webhooks.constructEventAsync(
      signed.body,
      signed.headers["stripe-signature"],
      WEBHOOK_SECRET,
      undefined,
      Stripe.createSubtleCryptoProvider(),
    );
    assert.equal(verified.type, event.type);
    assert.equal((verified.data.object as Stripe.Refund).id, refund.id);
    assert.equal((verified.data.object as Stripe.Refund).status, status);
    assert.equal((await stripe.events.retrieve(event.id)).type, event.type);
  }
});

Deno.test("checkout: payment mode with price_data yields a paid session and a succeeded intent", async () => {
  await using double = new PayprocDouble();
  const stripe = payprocClient(double);
  const dealId = "deal_42";

  const session = await stripe.checkout.sessions.create({
    mode: "payment",
    line_items: [{
      quantity: 1,
      price_data: {
        currency: "usd",
        unit_amount: 125_000,
        product_data: { name: "Listing title" },
      },
    }],
    payment_intent_data: { transfer_group: `deal:${dealId}`, metadata: { deal_id: dealId } },
    customer_email: "buyer@example.test",
    success_url: "https://app.example.test/deals/ok",
    cancel_url: "https://app.example.test/deals/cancel",
    metadata: { deal_id: dealId },
  });
  assert.equal(session.status, "open");
  assert.equal(session.payment_status, "unpaid");
  assert.equal(session.payment_intent, null);
  assert.equal(session.amount_total, 125_000);
  assert.equal(session.currency, "usd");
  assert.deepEqual(session.metadata, { deal_id: dealId });
  const [item] = (await stripe.checkout.sessions.listLineItems(session.id)).data;
  assert.equal(item?.description, "Listing title");
  assert.equal(item?.amount_total, 125_000);

  const { paymentIntent } = double.completeCheckout(session.id);
  const pi = await stripe.paymentIntents.retrieve(paymentIntent!.id, {
    expand: ["latest_charge"],
  });
  assert.equal(pi.status, "succeeded");
  assert.equal(pi.amount, 125_000);
  assert.equal(pi.amount_received, 125_000);
  assert.equal(pi.transfer_group, `deal:${dealId}`);
  assert.deepEqual(pi.metadata, { deal_id: dealId });
  assert.equal(pi.receipt_email, "buyer@example.test");
  const charge = pi.latest_charge as Stripe.Charge;
  assert.match(charge.id, /^ch_/);
  assert.equal(charge.status, "succeeded");
  assert.equal(charge.amount_captured, 125_000);
  assert.equal(charge.transfer_group, `deal:${dealId}`);

  const retrieved = await stripe.checkout.sessions.retrieve(session.id);
  assert.equal(retrieved.payment_intent, pi.id);
  assert.equal(retrieved.status, "complete");
  assert.equal(retrieved.payment_status, "paid");
  assert.equal(retrieved.customer_details?.email, "buyer@example.test");
  assert.deepEqual(retrieved.metadata, { deal_id: dealId });
  double.event("checkout.session.completed", double.get("checkout.session", session.id)!);
});

Deno.test("platform: GET /v1/account is the key's own account, never among the connected ones", async () => {
  await using double = new PayprocDouble({ platform: { country: "DE" } });
  const stripe = payprocClient(double);

  const platform = await stripe.accounts.retrieveCurrent();
  assert.match(platform.id, /^acct_/);
  assert.equal(platform.object, "account");
  assert.equal(platform.country, "DE");
  assert.equal(platform.charges_enabled, true);
  assert.equal(platform.payouts_enabled, true);
  assert.equal(platform.details_submitted, true);
  assert.equal(platform.type, "standard");
  assert.equal((await stripe.accounts.retrieve(null)).id, platform.id);
  assert.equal(double.setPlatform().id, platform.id);

  assert.deepEqual((await stripe.accounts.list({ limit: 1 })).data, []);
  const connected = double.addAccount();
  const page = await stripe.accounts.list({ limit: 10 });
  assert.deepEqual(page.data.map((a) => a.id), [connected.id]);
});

Deno.test("platform: without Connect the list is empty, creating and reading other accounts is refused", async () => {
  await using double = new PayprocDouble();
  const connected = double.addAccount();
  const platform = double.setPlatform({ connect: false });
  const stripe = payprocClient(double);

  assert.equal((await stripe.accounts.retrieveCurrent()).id, platform.id);
  const page = await stripe.accounts.list({ limit: 1 });
  assert.deepEqual([page.object, page.data, page.has_more], ["list", [], false]);
  await assert.rejects(
    stripe.accounts.create({ type: "express" }),
    (error: unknown) =>
      error instanceof Stripe.errors.StripeInvalidRequestError && error.statusCode === 400 &&
      error.message.startsWith(
        "You can only create new accounts if you've signed up for Connect",
      ),
  );
  await assert.rejects(
    stripe.accounts.retrieve(connected.id),
    (error: unknown) =>
      error instanceof Stripe.errors.StripePermissionError && error.statusCode === 403 &&
      error.message.startsWith("Only Stripe Connect platforms can work with other accounts."),
  );
  assert.equal(double.createdCount("account"), 1);

  double.setPlatform({ connect: true });
  assert.equal((await stripe.accounts.list()).data.length, 1);
});
