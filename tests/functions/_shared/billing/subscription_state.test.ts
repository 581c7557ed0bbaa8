import assert from "node:assert/strict";
import type Stripe from "stripe";
import {
  chooseSubscription,
  planOfPrice,
  subscriptionState,
} from "../../../../supabase/functions/_shared/billing/subscription_state.ts";
import { PayprocDouble } from "../../../support/payproc_double.ts";

function fixture(
  double: PayprocDouble,
  lookupKey: string,
  options: { status?: Stripe.Subscription.Status; created?: number } = {},
) {
  const customer = double.addCustomer();
  return double.addSubscription({
    customer: customer.id,
    lookupKey,
    ...options,
  }) as unknown as Stripe.Subscription;
}

Deno.test("subscriptionState() takes the level from the lookup key and the period from the items", async () => {
  await using double = new PayprocDouble();
  double.addPrice({ lookupKey: "pro_yearly", unitAmount: 100, interval: "year" });
  const subscription = fixture(double, "pro_yearly");
  const item = subscription.items.data[0]!;
  const state = subscriptionState(subscription);
  assert.equal(state.level, "pro");
  assert.equal(state.interval, "year");
  assert.equal(state.status, "active");
  assert.equal(state.customerId, subscription.customer);
  assert.equal(state.periodStart?.getTime(), item.current_period_start * 1000);
  assert.equal(state.periodEnd?.getTime(), item.current_period_end * 1000);
  assert.equal(state.cancelAtPeriodEnd, false);
});

Deno.test("subscriptionState() recognises a price without lookup key by id, and an unknown price as free", async () => {
  await using double = new PayprocDouble();
  const price = double.addPrice({ unitAmount: 100, interval: "month" });
  double.addPrice({ lookupKey: "other", unitAmount: 100, interval: "month" });
  const subscription = double.addSubscription({
    customer: double.addCustomer().id,
    priceId: price.id,
  }) as unknown as Stripe.Subscription;
  assert.equal(subscriptionState(subscription).level, "free");
  assert.equal(
    subscriptionState(subscription, new Map([[price.id, "starter_monthly"]])).level,
    "starter",
  );
  assert.equal(planOfPrice({ id: "p", lookup_key: "pro_monthly" }), "pro");
  assert.equal(planOfPrice({ id: "p", lookup_key: "gold_monthly" }), null);
});

Deno.test("subscriptionState() reads a cancel_at within the period as cancel_at_period_end", async () => {
  await using double = new PayprocDouble();
  double.addPrice({ lookupKey: "starter_monthly", unitAmount: 100, interval: "month" });
  const subscription = fixture(double, "starter_monthly");
  subscription.cancel_at = subscription.items.data[0]!.current_period_end;
  assert.equal(subscriptionState(subscription).cancelAtPeriodEnd, true);
});

Deno.test("chooseSubscription() prefers entitled over recoverable over ended, then the higher plan, then the newest", async () => {
  await using double = new PayprocDouble();
  double.addPrice({ lookupKey: "starter_monthly", unitAmount: 100, interval: "month" });
  double.addPrice({ lookupKey: "pro_monthly", unitAmount: 200, interval: "month" });
  const canceledPro = fixture(double, "pro_monthly", { status: "canceled" });
  const pastDuePro = fixture(double, "pro_monthly", { status: "past_due" });
  const activeStarter = fixture(double, "starter_monthly", { created: 1_000 });
  const newerStarter = fixture(double, "starter_monthly", { created: 2_000 });
  const activePro = fixture(double, "pro_monthly", { created: 500 });
  assert.equal(chooseSubscription([canceledPro, pastDuePro]), pastDuePro);
  assert.equal(chooseSubscription([pastDuePro, activeStarter]), activeStarter);
  assert.equal(chooseSubscription([activeStarter, newerStarter]), newerStarter);
  assert.equal(chooseSubscription([newerStarter, activePro, canceledPro]), activePro);
  assert.equal(chooseSubscription([]), null);
});
