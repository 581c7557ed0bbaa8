import assert from "node:assert/strict";
import type Stripe from "stripe";
import webhook from "../../supabase/functions/payproc-webhook/handler.ts";
import {
  billingSetup,
  CONNECT_WEBHOOK_SECRET,
  countRows,
  deliver,
  payprocEnv,
  subscriptionOf,
  unix,
  WEBHOOK_SECRET,
} from "../support/billing.ts";
import { sqlTest } from "../support/db.ts";
import { payprocClient, type PayprocSubscription } from "../support/payproc_double.ts";
import { invoke, testRuntime } from "../support/runtime.ts";
import { createUser, type TestUser } from "../support/sql.ts";

const setup = await billingSetup();
const { db, double, runtime, prices } = setup;
const stripe = payprocClient(double);

interface WebhookAnswer {
  received: boolean;
  id: string;
  outcome: string;
  detail?: string;
  error?: { code: string; message: string };
}

/** A user with a processor customer linked on their row and a subscription at the processor. */
async function subscriber(lookupKey = "starter_monthly") {
  const user = await createUser(db.pool);
  const customer = double.addCustomer({ email: user.email, metadata: { user_id: user.id } });
  const subscription = double.addSubscription({ customer: customer.id, lookupKey });
  return { user, customer, subscription };
}

/** Applies the subscription's current state through an event, so the row exists. */
async function mirrored(lookupKey = "starter_monthly") {
  const s = await subscriber(lookupKey);
  const res = await deliver<WebhookAnswer>(
    setup,
    double.event("customer.subscription.created", s.subscription),
  );
  assert.equal(res.status, 200);
  return s;
}

function eventsOf(id: string) {
  return countRows(db.pool, "public.payproc_events", "id = $1", [id]);
}

/** The row's `payproc_state_at` in Unix seconds. */
async function stampOf(user: TestUser): Promise<number> {
  const { rows } = await db.pool.query<{ stamp: number }>(
    "select extract(epoch from payproc_state_at)::bigint::int as stamp from public.subscriptions where user_id = $1",
    [user.id],
  );
  return rows[0]!.stamp;
}

function broadcastsTo(user: TestUser) {
  return countRows(db.pool, "realtime.messages", "topic = $1", [`user:${user.id}`]);
}

sqlTest(
  "payproc-webhook: checkout.session.completed links the customer through client_reference_id and mirrors the subscription",
  async () => {
    const user = await createUser(db.pool);
    const customer = await stripe.customers.create({ email: user.email });
    const session = await stripe.checkout.sessions.create({
      mode: "subscription",
      customer: customer.id,
      client_reference_id: user.id,
      line_items: [{ price: prices.pro_yearly.id, quantity: 1 }],
      success_url: "http://localhost:5173/ok",
    });
    const completed = double.completeCheckout(session.id);
    const res = await deliver<WebhookAnswer>(
      setup,
      double.event("checkout.session.completed", completed.session),
    );
    assert.equal(res.status, 200);
    assert.equal(res.body.outcome, "applied");

    const row = await subscriptionOf(db.pool, user.id);
    const item = completed.subscription!.items.data[0]!;
    assert.equal(row?.subscription_level, "pro");
    assert.equal(row?.subscription_status, "active");
    assert.equal(row?.source, "payproc");
    assert.equal(row?.payproc_customer_id, customer.id);
    assert.equal(row?.payproc_subscription_id, completed.subscription!.id);
    assert.equal(row?.payproc_price_id, prices.pro_yearly.id);
    assert.equal(row?.billing_interval, "year");
    assert.equal(row?.current_period_start?.getTime(), item.current_period_start * 1000);
    assert.equal(row?.current_period_end?.getTime(), item.current_period_end * 1000);
    assert.equal(row?.cancel_at_period_end, false);
  },
);

sqlTest("payproc-webhook: a repeated event answers 200 and changes nothing", async () => {
  const { user, subscription } = await subscriber();
  const event = double.event("customer.subscription.created", subscription);
  const first = await deliver<WebhookAnswer>(setup, event);
  assert.equal(first.body.outcome, "applied");
  const before = await subscriptionOf(db.pool, user.id);
  const broadcasts = await broadcastsTo(user);

  const again = await deliver<WebhookAnswer>(setup, event);
  assert.equal(again.status, 200);
  assert.equal(again.body.outcome, "duplicate");
  assert.deepEqual(await subscriptionOf(db.pool, user.id), before);
  assert.equal(await broadcastsTo(user), broadcasts);
  assert.equal(await eventsOf(event.id), 1);
});

sqlTest(
  "payproc-webhook: ten concurrent deliveries of one event apply it exactly once",
  async () => {
    const { user, subscription } = await mirrored();
    double.updateSubscription(subscription.id, { status: "past_due" });
    const event = double.event(
      "customer.subscription.updated",
      double.get("subscription", subscription.id)!,
    );
    const broadcasts = await broadcastsTo(user);

    const answers = await Promise.all(
      Array.from({ length: 10 }, () => deliver<WebhookAnswer>(setup, event)),
    );
    assert.ok(answers.every((a) => a.status === 200), JSON.stringify(answers.map((a) => a.body)));
    const outcomes = answers.map((a) => a.body.outcome).sort();
    assert.deepEqual(outcomes, ["applied", ...Array(9).fill("duplicate")].sort());
    assert.equal(await eventsOf(event.id), 1);
    assert.equal(await broadcastsTo(user), broadcasts + 1);
    assert.equal((await subscriptionOf(db.pool, user.id))?.subscription_status, "past_due");
  },
);

for (const order of ["older first", "newer first"] as const) {
  sqlTest(
    `payproc-webhook: an older event never overwrites newer state (re-read, ${order})`,
    async () => {
      const { user, subscription } = await mirrored();
      const t = unix();
      const older = double.event(
        "customer.subscription.updated",
        double.updateSubscription(subscription.id, { status: "past_due" }),
        { created: t },
      );
      const newer = double.event(
        "customer.subscription.updated",
        double.updateSubscription(subscription.id, { status: "active", lookupKey: "pro_monthly" }),
        { created: t + 5 },
      );
      for (const event of order === "older first" ? [older, newer] : [newer, older]) {
        assert.equal((await deliver<WebhookAnswer>(setup, event)).status, 200);
      }
      const row = await subscriptionOf(db.pool, user.id);
      assert.equal(row?.subscription_status, "active");
      assert.equal(row?.subscription_level, "pro");
    },
  );
}

sqlTest(
  "payproc-webhook: events of the same second keep the newer state (re-read breaks the tie)",
  async () => {
    const { user, subscription } = await mirrored();
    const t = unix();
    const first = double.event(
      "customer.subscription.updated",
      double.updateSubscription(subscription.id, { cancelAtPeriodEnd: true }),
      { created: t },
    );
    const second = double.event(
      "customer.subscription.updated",
      double.updateSubscription(subscription.id, { cancelAtPeriodEnd: false }),
      { created: t },
    );
    await deliver<WebhookAnswer>(setup, second);
    await deliver<WebhookAnswer>(setup, first);
    assert.equal((await subscriptionOf(db.pool, user.id))?.cancel_at_period_end, false);
  },
);

/** A subscription the processor does not have: only the events carry it. */
function goneSubscription(user: TestUser, customer: string, status: Stripe.Subscription.Status) {
  const template = double.get(
    "subscription",
    double.addSubscription({ customer, lookupKey: "pro_monthly" }).id,
  )!;
  const gone: PayprocSubscription = structuredClone(template);
  gone.id = `sub_gone_${crypto.randomUUID().slice(0, 8)}`;
  gone.status = status;
  gone.metadata = { user_id: user.id };
  return gone;
}

sqlTest(
  "payproc-webhook: a subscription the processor does not have is never mirrored from the event",
  async () => {
    const user = await createUser(db.pool);
    const customer = double.addCustomer({ email: user.email, metadata: { user_id: user.id } });
    const forged = goneSubscription(user, customer.id, "active");
    for (
      const type of ["customer.subscription.created", "customer.subscription.updated"] as const
    ) {
      const res = await deliver<WebhookAnswer>(setup, double.event(type, forged));
      assert.equal(res.status, 200);
      assert.equal(res.body.outcome, "skipped");
      assert.match(res.body.detail ?? "", /does not exist at the processor/);
    }
    assert.equal(await subscriptionOf(db.pool, user.id), null);
  },
);

for (const order of ["deleted last", "deleted first"] as const) {
  sqlTest(
    `payproc-webhook: a mirrored subscription the processor no longer has ends, in any order (${order})`,
    async () => {
      const { user, subscription } = await mirrored("pro_monthly");
      const copy = structuredClone(double.get("subscription", subscription.id)!);
      double.store.remove("subscription", subscription.id);
      const t = unix();
      const updated = double.event("customer.subscription.updated", copy, { created: t + 10 });
      const deleted = double.event(
        "customer.subscription.deleted",
        { ...copy, status: "canceled" },
        {
          created: t,
        },
      );
      for (const event of order === "deleted last" ? [updated, deleted] : [deleted, updated]) {
        assert.equal((await deliver<WebhookAnswer>(setup, event)).status, 200);
      }
      const row = await subscriptionOf(db.pool, user.id);
      assert.equal(row?.payproc_subscription_id, subscription.id);
      assert.equal(row?.subscription_status, "canceled");
      const plan = await db.pool.query("select public.current_plan($1) as plan", [user.id]);
      assert.equal(plan.rows[0].plan, "free");
    },
  );
}

sqlTest(
  "payproc-webhook: subscription.updated moves updated_at only when something changed",
  async () => {
    const { user, subscription } = await mirrored();
    const before = await subscriptionOf(db.pool, user.id);
    const same = await deliver<WebhookAnswer>(
      setup,
      double.event("customer.subscription.updated", subscription),
    );
    assert.equal(same.body.detail, "already up to date");
    assert.deepEqual((await subscriptionOf(db.pool, user.id))?.updated_at, before?.updated_at);

    await deliver(
      setup,
      double.event(
        "customer.subscription.updated",
        double.updateSubscription(subscription.id, { cancelAtPeriodEnd: true }),
      ),
    );
    const after = await subscriptionOf(db.pool, user.id);
    assert.equal(after?.cancel_at_period_end, true);
    assert.ok(after!.updated_at > before!.updated_at);
  },
);

sqlTest("payproc-webhook: paused, resumed and deleted follow the processor", async () => {
  const { user, subscription } = await mirrored("pro_monthly");
  double.updateSubscription(subscription.id, { status: "paused" });
  await deliver<WebhookAnswer>(
    setup,
    double.event("customer.subscription.paused", double.get("subscription", subscription.id)!),
  );
  assert.equal((await subscriptionOf(db.pool, user.id))?.subscription_status, "paused");
  double.updateSubscription(subscription.id, { status: "active" });
  await deliver<WebhookAnswer>(
    setup,
    double.event("customer.subscription.resumed", double.get("subscription", subscription.id)!),
  );
  assert.equal((await subscriptionOf(db.pool, user.id))?.subscription_status, "active");
  await stripe.subscriptions.cancel(subscription.id);
  await deliver<WebhookAnswer>(
    setup,
    double.event("customer.subscription.deleted", double.get("subscription", subscription.id)!),
  );
  const row = await subscriptionOf(db.pool, user.id);
  assert.equal(row?.subscription_status, "canceled");
  const plan = await db.pool.query("select public.current_plan($1) as plan", [user.id]);
  assert.equal(plan.rows[0].plan, "free");
});

sqlTest(
  "payproc-webhook: a subscription created before checkout completes is linked through the customer's metadata",
  async () => {
    const { user, subscription } = await subscriber("pro_monthly");
    const res = await deliver<WebhookAnswer>(
      setup,
      double.event("customer.subscription.created", subscription),
    );
    assert.equal(res.body.outcome, "applied");
    assert.equal((await subscriptionOf(db.pool, user.id))?.subscription_level, "pro");
  },
);

sqlTest(
  "payproc-webhook: a subscription of a customer nobody is linked to is recorded as skipped",
  async () => {
    const customer = double.addCustomer({ email: "stranger@example.test" });
    const subscription = double.addSubscription({
      customer: customer.id,
      lookupKey: "pro_monthly",
    });
    const event = double.event("customer.subscription.created", subscription);
    const res = await deliver<WebhookAnswer>(setup, event);
    assert.equal(res.status, 200);
    assert.equal(res.body.outcome, "skipped");
    assert.equal(
      await countRows(db.pool, "public.subscriptions", "payproc_subscription_id = $1", [
        subscription.id,
      ]),
      0,
    );
    const { rows } = await db.pool.query(
      "select outcome, detail from public.payproc_events where id = $1",
      [event.id],
    );
    assert.equal(rows[0].outcome, "skipped");
    assert.match(rows[0].detail, /unlinked/);
  },
);

sqlTest(
  "payproc-webhook: a checkout naming another user's customer does not move the link",
  async () => {
    const { user, customer } = await mirrored();
    const intruder = await createUser(db.pool);
    const session = await stripe.checkout.sessions.create({
      mode: "subscription",
      customer: customer.id,
      client_reference_id: intruder.id,
      line_items: [{ price: prices.pro_monthly.id, quantity: 1 }],
      success_url: "http://localhost:5173/ok",
    });
    const completed = double.completeCheckout(session.id);
    const res = await deliver<WebhookAnswer>(
      setup,
      double.event("checkout.session.completed", completed.session),
    );
    assert.equal(res.body.outcome, "skipped");
    assert.equal(await subscriptionOf(db.pool, intruder.id), null);
    assert.equal((await subscriptionOf(db.pool, user.id))?.payproc_customer_id, customer.id);
  },
);

sqlTest(
  "payproc-webhook: unknown types are recorded as ignored; a payment-mode checkout that pays no deal is skipped",
  async () => {
    const payout = double.event("payout.paid", { id: "po_x", object: "payout" } as never);
    const res = await deliver<WebhookAnswer>(setup, payout);
    assert.equal(res.status, 200);
    assert.equal(res.body.outcome, "ignored");
    assert.equal(await eventsOf(payout.id), 1);

    const session = await stripe.checkout.sessions.create({
      mode: "payment",
      line_items: [{
        price_data: { currency: "usd", unit_amount: 500, product_data: { name: "x" } },
        quantity: 1,
      }],
      success_url: "http://localhost:5173/ok",
    });
    const paid = double.completeCheckout(session.id);
    const other = await deliver<WebhookAnswer>(
      setup,
      double.event("checkout.session.completed", paid.session),
    );
    assert.equal(other.body.outcome, "skipped");
    assert.equal(other.body.detail, "the payment intent is not a deal's payment");
  },
);

sqlTest(
  "payproc-webhook: invoice.paid and invoice.payment_failed mirror the invoice (major units) and the subscription",
  async () => {
    const { user, customer, subscription } = await mirrored("pro_monthly");
    const invoiceId = double.get("subscription", subscription.id)!.latest_invoice as string;
    const paid = await deliver<WebhookAnswer>(
      setup,
      double.event("invoice.paid", double.get("invoice", invoiceId)!),
    );
    assert.equal(paid.status, 200);
    const { rows } = await db.pool.query(
      "select * from public.invoices where payproc_invoice_id = $1",
      [invoiceId],
    );
    assert.equal(rows[0].status, "paid");
    assert.equal(rows[0].amount_paid, "29.00");
    assert.equal(rows[0].currency, "USD");
    assert.equal(rows[0].user_id, user.id);
    assert.equal(rows[0].payproc_customer_id, customer.id);
    assert.equal(rows[0].payproc_subscription_id, subscription.id);

    const failed = double.addInvoice({
      customer: customer.id,
      subscription: subscription.id,
      status: "open",
      amount: 2900,
    });
    double.store.require("invoice", failed.id).attempt_count = 1;
    double.updateSubscription(subscription.id, { status: "past_due" });
    await deliver<WebhookAnswer>(
      setup,
      double.event("invoice.payment_failed", double.get("invoice", failed.id)!),
    );
    const open = await db.pool.query(
      "select * from public.invoices where payproc_invoice_id = $1",
      [failed.id],
    );
    assert.equal(open.rows[0].status, "open");
    assert.equal(open.rows[0].attempt_count, 1);
    assert.equal(open.rows[0].amount_remaining, "29.00");
    assert.equal((await subscriptionOf(db.pool, user.id))?.subscription_status, "past_due");

    const finalized = double.addInvoice({ customer: customer.id, status: "open", amount: 1234 });
    await deliver<WebhookAnswer>(setup, double.event("invoice.finalized", finalized));
    await deliver<WebhookAnswer>(setup, double.event("invoice.payment_succeeded", finalized));
    assert.equal(
      await countRows(db.pool, "public.invoices", "payproc_invoice_id = $1", [finalized.id]),
      1,
    );
  },
);

sqlTest(
  "payproc-webhook: account.updated on the Connect secret writes the KYC summary to connect_accounts and profiles",
  async () => {
    const seller = await createUser(db.pool);
    const account = double.addAccount({ metadata: { user_id: seller.id } });
    const res = await deliver<WebhookAnswer>(
      setup,
      double.event("account.updated", account, { account: account.id }),
      {
        secret: CONNECT_WEBHOOK_SECRET,
      },
    );
    assert.equal(res.status, 200);
    let row =
      (await db.pool.query("select * from public.connect_accounts where user_id = $1", [seller.id]))
        .rows[0];
    assert.equal(row.payproc_account_id, account.id);
    assert.equal(row.kyc_status, "pending");
    assert.equal(row.currently_due_count, 4);
    assert.equal(row.payouts_enabled, false);

    double.setAccount(account.id, {
      details_submitted: true,
      requirements: {
        currently_due: ["external_account"],
        past_due: ["external_account"],
        disabled_reason: "requirements.past_due",
      },
    });
    await deliver<WebhookAnswer>(
      setup,
      double.event("account.updated", double.get("account", account.id)!, { account: account.id }),
      {
        secret: CONNECT_WEBHOOK_SECRET,
      },
    );
    row =
      (await db.pool.query("select * from public.connect_accounts where user_id = $1", [seller.id]))
        .rows[0];
    assert.equal(row.kyc_status, "restricted");
    assert.equal(row.past_due_count, 1);
    assert.equal(row.disabled_reason, "requirements.past_due");

    double.completeOnboarding(account.id);
    await deliver<WebhookAnswer>(
      setup,
      double.event("account.updated", double.get("account", account.id)!, { account: account.id }),
      {
        secret: CONNECT_WEBHOOK_SECRET,
      },
    );
    const profile =
      (await db.pool.query("select * from public.profiles where id = $1", [seller.id])).rows[0];
    assert.equal(profile.payproc_account_id, account.id);
    assert.equal(profile.kyc_status, "verified");
    assert.equal(profile.kyc_currently_due_count, 0);
    assert.equal(profile.kyc_past_due_count, 0);
    assert.equal(profile.kyc_disabled_reason, "");
    assert.equal(profile.payouts_enabled, true);
  },
);

sqlTest("payproc-webhook: an account nobody is linked to is recorded as skipped", async () => {
  const account = double.addAccount();
  const res = await deliver<WebhookAnswer>(
    setup,
    double.event("account.updated", account, { account: account.id }),
    { secret: CONNECT_WEBHOOK_SECRET },
  );
  assert.equal(res.body.outcome, "skipped");
  assert.equal(
    await countRows(db.pool, "public.connect_accounts", "payproc_account_id = $1", [account.id]),
    0,
  );
});

sqlTest(
  "payproc-webhook: a Connect event about billing is refused — a seller's own subscription never reaches subscriptions",
  async () => {
    const seller = await createUser(db.pool);
    const account = double.addAccount({ metadata: { user_id: seller.id } });
    // What a seller can mint on their own account: a customer and a subscription naming them.
    const customer = double.addCustomer({ metadata: { user_id: seller.id } });
    const subscription = double.addSubscription({
      customer: customer.id,
      lookupKey: "pro_monthly",
    });
    for (
      const event of [
        double.event("customer.subscription.created", subscription, { account: account.id }),
        double.event("customer.subscription.updated", subscription, { account: account.id }),
        double.event(
          "invoice.paid",
          double.get("invoice", subscription.latest_invoice as string)!,
          {
            account: account.id,
          },
        ),
      ]
    ) {
      const res = await deliver<WebhookAnswer>(setup, event, { secret: CONNECT_WEBHOOK_SECRET });
      assert.equal(res.status, 400, event.type);
      assert.equal(res.body.error?.code, "wrong_endpoint", event.type);
      assert.equal(await eventsOf(event.id), 0);
    }
    assert.equal(await subscriptionOf(db.pool, seller.id), null);
    const plan = await db.pool.query("select public.current_plan($1) as plan", [seller.id]);
    assert.equal(plan.rows[0].plan, "free");
  },
);

sqlTest(
  "payproc-webhook: each endpoint admits only its own events: no account on the platform, one on Connect",
  async () => {
    const account = double.addAccount();
    const onPlatform = double.event("account.updated", account, { account: account.id });
    const platform = await deliver<WebhookAnswer>(setup, onPlatform);
    assert.deepEqual([platform.status, platform.body.error?.code], [400, "wrong_endpoint"]);
    assert.equal(await eventsOf(onPlatform.id), 0);

    const noAccount = double.event("account.updated", account);
    const connect = await deliver<WebhookAnswer>(setup, noAccount, {
      secret: CONNECT_WEBHOOK_SECRET,
    });
    assert.deepEqual([connect.status, connect.body.error?.code], [400, "wrong_endpoint"]);
    assert.equal(await eventsOf(noAccount.id), 0);

    const ours = double.event("account.updated", account);
    const ignored = await deliver<WebhookAnswer>(setup, ours);
    assert.deepEqual([ignored.status, ignored.body.outcome], [200, "ignored"]);
    const { rows } = await db.pool.query(
      "select endpoint from public.payproc_events where id = $1",
      [
        ours.id,
      ],
    );
    assert.equal(rows[0].endpoint, "platform");
  },
);

sqlTest("payproc-webhook: an event whose mode differs from the key's is refused", async () => {
  const { user, subscription } = await mirrored();
  const before = await subscriptionOf(db.pool, user.id);
  double.updateSubscription(subscription.id, { status: "past_due" });
  const live = {
    ...double.event("customer.subscription.updated", double.get("subscription", subscription.id)!),
    livemode: true,
  };
  const res = await deliver<WebhookAnswer>(setup, live);
  assert.deepEqual([res.status, res.body.error?.code], [400, "wrong_mode"]);
  assert.equal(await eventsOf(live.id), 0);
  assert.deepEqual(await subscriptionOf(db.pool, user.id), before);

  const liveKeyed = await testRuntime(db, {
    ...payprocEnv(double),
    PAYPROC_SECRET_KEY: "sk_live_x",
  });
  const testEvent = double.event("customer.subscription.updated", subscription);
  const refused = await deliver<WebhookAnswer>(setup, testEvent, { runtime: liveKeyed });
  assert.deepEqual([refused.status, refused.body.error?.code], [400, "wrong_mode"]);
  await liveKeyed.close();
});

sqlTest("payproc-webhook: the Connect secret is refused when it is not configured", async () => {
  const { PAYPROC_CONNECT_WEBHOOK_SECRET: _, ...env } = payprocEnv(double);
  const without = await testRuntime(db, env);
  const account = double.addAccount();
  const event = double.event("account.updated", account, { account: account.id });
  const res = await deliver<WebhookAnswer>(setup, event, {
    secret: CONNECT_WEBHOOK_SECRET,
    runtime: without,
  });
  assert.equal(res.status, 400);
  assert.equal(await eventsOf(event.id), 0);
  await without.close();
});

sqlTest(
  "payproc-webhook: bad signatures answer 400 invalid_signature and write nothing",
  async () => {
    const { user, subscription } = await mirrored();
    const before = await subscriptionOf(db.pool, user.id);
    double.updateSubscription(subscription.id, { status: "past_due" });
    const event = double.event(
      "customer.subscription.updated",
      double.get("subscription", subscription.id)!,
    );
    const signed = await double.signedWebhook(event, WEBHOOK_SECRET);
    const cases: Array<[string, { rawBody: string; headers: Record<string, string> }, RegExp]> = [
      [
        "missing header",
        { rawBody: signed.body, headers: { "content-type": "application/json" } },
        /missing/,
      ],
      ["wrong secret", await signedWith(event, "whsec_wrong"), /does not match/],
      ["stale timestamp", await signedWith(event, WEBHOOK_SECRET, unix() - 301), /tolerance/],
      ["tampered body", {
        rawBody: signed.body.replace("past_due", "active"),
        headers: signed.headers,
      }, /does not match/],
      [
        "garbage header",
        { rawBody: signed.body, headers: { "stripe-signature": "nonsense" } },
        /does not match/,
      ],
    ];
    for (const [name, request, message] of cases) {
      const res = await invoke<WebhookAnswer>(webhook, runtime, request);
      assert.equal(res.status, 400, name);
      assert.equal(res.body.error?.code, "invalid_signature", name);
      assert.match(res.body.error?.message ?? "", message, name);
    }
    assert.equal(await eventsOf(event.id), 0);
    assert.deepEqual(await subscriptionOf(db.pool, user.id), before);
  },
);

async function signedWith(event: object | string, secret: string, timestamp?: number) {
  const signed = await double.signedWebhook(event, secret, { timestamp });
  return { rawBody: signed.body, headers: signed.headers as Record<string, string> };
}

sqlTest("payproc-webhook: a signed body that is not JSON answers 400 invalid_json", async () => {
  const res = await invoke<WebhookAnswer>(
    webhook,
    runtime,
    await signedWith("not json", WEBHOOK_SECRET),
  );
  assert.equal(res.status, 400);
  assert.equal(res.body.error?.code, "invalid_json");
});

sqlTest(
  "payproc-webhook: a signed event with a NUL or a lone surrogate is 400 invalid_input and writes nothing",
  async () => {
    const account = double.addAccount();
    const before = await countRows(db.pool, "public.payproc_events");
    const base = double.event("invoice.paid", double.addInvoice({ customer: "cus_x" }));
    for (
      const [event, secret] of [
        [{ ...base, id: "evt_\u0000nul" }, WEBHOOK_SECRET],
        [{ ...base, id: "evt_surrogate", type: "invoice.paid\uD800" }, WEBHOOK_SECRET],
        [{ ...base, id: "evt_object", data: { object: { id: "in_\u0000" } } }, WEBHOOK_SECRET],
        [
          double.event("account.updated", account, { account: `${account.id}\uDC00` }),
          CONNECT_WEBHOOK_SECRET,
        ],
      ] as const
    ) {
      const res = await invoke<WebhookAnswer>(webhook, runtime, await signedWith(event, secret));
      assert.equal(res.status, 400, JSON.stringify(res.body));
      assert.equal(res.body.error?.code, "invalid_input");
    }
    assert.equal(await countRows(db.pool, "public.payproc_events"), before);
  },
);

sqlTest(
  "payproc-webhook: a handled event whose object has an empty or no id is 400 invalid_input and writes nothing",
  async () => {
    const before = await countRows(db.pool, "public.payproc_events");
    const requests = double.requests.length;
    for (
      const [type, object] of [
        ["charge.dispute.closed", { id: "", object: "dispute" }],
        ["invoice.paid", { id: "", object: "invoice" }],
        ["customer.subscription.updated", { id: " ", object: "subscription" }],
        ["transfer.reversed", { object: "transfer" }],
        ["charge.refunded", { id: 42, object: "charge" }],
        ["refund.failed", { id: "", object: "refund" }],
        ["charge.refund.updated", { object: "refund" }],
      ] as const
    ) {
      const event = {
        id: `evt_noid_${crypto.randomUUID().slice(0, 8)}`,
        object: "event",
        type,
        created: unix(),
        livemode: false,
        data: { object },
      };
      const res = await invoke<WebhookAnswer>(
        webhook,
        runtime,
        await signedWith(event, WEBHOOK_SECRET),
      );
      assert.equal(res.status, 400, `${type}: ${JSON.stringify(res.body)}`);
      assert.equal(res.body.error?.code, "invalid_input");
    }
    assert.equal(await countRows(db.pool, "public.payproc_events"), before);
    assert.equal(double.requests.length, requests, "nothing was read from the processor");
  },
);

sqlTest(
  "payproc-webhook: refund.failed and charge.refund.updated re-read the refund: one the processor does not have, or not of a payment a deal could not take, is skipped",
  async () => {
    const missing = await deliver<WebhookAnswer>(
      setup,
      double.event("refund.failed", {
        ...(await refundOfAPayment()),
        id: "re_missing0000000000000000",
      }),
    );
    assert.equal(missing.status, 200);
    assert.equal(missing.body.outcome, "skipped");
    assert.match(missing.body.detail ?? "", /does not exist/);

    const refund = await refundOfAPayment();
    for (const type of ["refund.failed", "charge.refund.updated"] as const) {
      const event = double.event(type, double.setRefundStatus(refund.id, "failed"));
      const answer = await deliver<WebhookAnswer>(setup, event);
      assert.equal(answer.status, 200);
      assert.equal(answer.body.outcome, "skipped");
      assert.match(answer.body.detail ?? "", /not a refund of a payment a deal could not take/);
      const { rows } = await db.pool.query(
        "select type, outcome from public.payproc_events where id = $1",
        [event.id],
      );
      assert.deepEqual(rows, [{ type, outcome: "skipped" }]);
      assert.equal((await deliver<WebhookAnswer>(setup, event)).body.outcome, "duplicate");
    }
    // Both were read from the processor, not taken from the payload.
    assert.ok(double.requestsTo("GET", `/v1/refunds/${refund.id}`).length >= 2);
  },
);

/** A refund of a payment that is nobody's deal (made at the processor), as the double has it. */
async function refundOfAPayment() {
  const intent = await stripe.paymentIntents.create({ amount: 2_000, currency: "usd" });
  double.setPaymentIntentStatus(intent.id, "succeeded");
  const refund = await stripe.refunds.create({ payment_intent: intent.id });
  return double.get("refund", refund.id)!;
}

sqlTest(
  "payproc-webhook: a processor failure while applying answers 503, rolls back, and the retry applies",
  async () => {
    const { user, subscription } = await mirrored();
    double.updateSubscription(subscription.id, { status: "past_due" });
    // Created in the second the row is current at: the webhook cannot prove
    // its copy newest, so it re-reads (payproc_signed_copies.test.ts).
    const event = double.event(
      "customer.subscription.updated",
      double.get("subscription", subscription.id)!,
      { created: await stampOf(user) },
    );
    double.failNext({
      method: "GET",
      path: `/v1/subscriptions/${subscription.id}`,
      status: 500,
      times: 3,
    });
    const failed = await deliver<WebhookAnswer>(setup, event);
    assert.equal(failed.status, 503);
    assert.equal(failed.body.error?.code, "upstream_unavailable");
    assert.equal(await eventsOf(event.id), 0);
    assert.equal((await subscriptionOf(db.pool, user.id))?.subscription_status, "active");

    const retried = await deliver<WebhookAnswer>(setup, event);
    assert.equal(retried.status, 200);
    assert.equal(retried.body.outcome, "applied");
    assert.equal((await subscriptionOf(db.pool, user.id))?.subscription_status, "past_due");
  },
);

sqlTest(
  "payproc-webhook: a processor that does not answer in time gives 503, not a hanging request",
  async () => {
    const fast = await testRuntime(db, { ...payprocEnv(double), PAYPROC_TIMEOUT_MS: "200" });
    const { subscription } = await subscriber();
    const event = double.event("customer.subscription.created", subscription);
    double.failNext({
      method: "GET",
      path: `/v1/subscriptions/${subscription.id}`,
      delayMs: Infinity,
      times: 3,
    });
    const started = performance.now();
    const res = await deliver<WebhookAnswer>(setup, event, { runtime: fast });
    assert.equal(res.status, 503);
    assert.equal(res.body.error?.code, "upstream_unavailable");
    assert.ok(performance.now() - started < 10_000);
    assert.equal(await eventsOf(event.id), 0);
  },
);

sqlTest(
  "payproc-webhook: missing PAYPROC_WEBHOOK_SECRET or PAYPROC_SECRET_KEY answers 503 not_configured",
  async () => {
    const { PAYPROC_WEBHOOK_SECRET: _w, ...noSecret } = payprocEnv(double);
    const { subscription } = await subscriber();
    const event = double.event("customer.subscription.created", subscription);
    const a = await deliver<WebhookAnswer>(setup, event, {
      runtime: await testRuntime(db, noSecret),
    });
    assert.equal(a.status, 503);
    assert.equal(a.body.error?.code, "not_configured");

    const { PAYPROC_SECRET_KEY: _k, ...noKey } = payprocEnv(double);
    const b = await deliver<WebhookAnswer>(setup, event, { runtime: await testRuntime(db, noKey) });
    assert.equal(b.status, 503);
    assert.equal(b.body.error?.code, "not_configured");
    assert.equal(await eventsOf(event.id), 0);
  },
);

sqlTest("payproc-webhook: GET is refused and no JWT is needed for POST", async () => {
  const res = await invoke(webhook, runtime, { method: "GET" });
  assert.equal(res.status, 405);
});

sqlTest(
  "payproc-webhook: a hung processor call holds no database connection (pool of 1: 20 other deliveries complete meanwhile)",
  async () => {
    const slow = await billingSetup({ DB_POOL_MAX: "1", PAYPROC_TIMEOUT_MS: "60000" });
    try {
      const subscriptions = [];
      for (let i = 0; i < 21; i++) {
        const user = await createUser(slow.db.pool);
        const customer = slow.double.addCustomer({ metadata: { user_id: user.id } });
        subscriptions.push(
          slow.double.addSubscription({ customer: customer.id, lookupKey: "starter_monthly" }),
        );
      }
      const [hung, ...others] = subscriptions;
      // Hangs until released, then fails; the SDK's one retry fails the same
      // way, so the outcome does not depend on timing or on how the server
      // shuts down.
      const hold = slow.double.holdNext({ method: "GET", path: `/v1/subscriptions/${hung!.id}` });
      slow.double.failNext({
        method: "GET",
        path: `/v1/subscriptions/${hung!.id}`,
        status: 503,
        times: 2,
      });
      const hungEvent = slow.double.event("customer.subscription.created", hung!);
      let hungAnswered = false;
      const hungDelivery = deliver<WebhookAnswer>(slow, hungEvent).finally(() => {
        hungAnswered = true;
      });
      await hold.reached;
      const answers = await Promise.all(
        others.map((s) =>
          deliver<WebhookAnswer>(slow, slow.double.event("customer.subscription.created", s))
        ),
      );
      assert.deepEqual(
        answers.map((a) => [a.status, a.body.outcome]),
        others.map(() => [200, "applied"]),
      );
      assert.equal(hungAnswered, false, "the hung call is still waiting for the processor");
      assert.equal(
        await countRows(
          slow.db.pool,
          "public.subscriptions",
          "payproc_subscription_id is not null",
        ),
        20,
      );
      hold.release(); // the hung call fails now (so does its retry)
      const answer = await hungDelivery;
      assert.equal(answer.status, 503);
      assert.equal(answer.body.error?.code, "upstream_unavailable");
      assert.equal(
        await countRows(slow.db.pool, "public.payproc_events", "id = $1", [hungEvent.id]),
        0,
      );
    } finally {
      await slow.close();
    }
  },
);
