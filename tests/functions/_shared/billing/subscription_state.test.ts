import assert from "node:assert/strict";
import type Stripe from "stripe";
import {
  chooseSubscription,
  subscriptionState,
} from "../../../../supabase/functions/_shared/billing/subscription_state.ts";
import {
  type OurPlans,
  plansFromPrices,
} from "../../../../supabase/functions/_shared/billing/plan_prices.ts";
import { PayprocDouble, type PayprocPrice } from "../../../support/payproc_double.ts";

/** The product id of a seeded price. */
function productOf(price: PayprocPrice): string {
  return typeof price.product === "string" ? price.product : price.product.id;
}

/** Our plans, as `ourPlans()` builds them from the prices listed by lookup key. */
function plansOf(...prices: PayprocPrice[]): OurPlans {
  return plansFromPrices(prices as unknown as Stripe.Price[]);
}

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

Deno.test("subscriptionState() takes the level from our price and the period from the items", async () => {
  await using double = new PayprocDouble();
  const plans = plansOf(
    double.addPrice({ lookupKey: "pro_yearly", unitAmount: 100, interval: "year" }),
  );
  const subscription = fixture(double, "pro_yearly");
  const item = subscription.items.data[0]!;
  const state = subscriptionState(subscription, plans);
  assert.equal(state.level, "pro");
  assert.equal(state.interval, "year");
  assert.equal(state.status, "active");
  assert.equal(state.customerId, subscription.customer);
  assert.equal(state.periodStart?.getTime(), item.current_period_start * 1000);
  assert.equal(state.periodEnd?.getTime(), item.current_period_end * 1000);
  assert.equal(state.cancelAtPeriodEnd, false);
});

Deno.test("subscriptionState() knows our plans by price and product, never by a price's own lookup key", async () => {
  await using double = new PayprocDouble();
  const current = double.addPrice({
    lookupKey: "starter_monthly",
    unitAmount: 900,
    interval: "month",
  });
  const plans = plansOf(current);
  // An older price of the same product, whose lookup key moved to the current one.
  const older = double.addPrice({
    unitAmount: 800,
    interval: "month",
    productId: productOf(current),
  });
  // Anyone's price can carry our lookup key; it sells nothing of ours.
  const impostor = double.addPrice({ lookupKey: "pro_monthly", unitAmount: 1, interval: "month" });
  const on = (price: PayprocPrice) =>
    subscriptionState(
      double.addSubscription({
        customer: double.addCustomer().id,
        priceId: price.id,
      }) as unknown as Stripe.Subscription,
      plans,
    ).level;
  assert.equal(on(current), "starter");
  assert.equal(on(older), "starter");
  assert.equal(on(impostor), "free");
  assert.equal(plans.priceIdByKey.get("starter_monthly"), current.id);
  assert.equal(plans.priceIdByKey.has("pro_monthly"), false);
});

Deno.test("plansFromPrices() ignores a product that sells two plans for its other prices", async () => {
  await using double = new PayprocDouble();
  const starter = double.addPrice({
    lookupKey: "starter_monthly",
    unitAmount: 9,
    interval: "month",
  });
  const pro = double.addPrice({
    lookupKey: "pro_monthly",
    unitAmount: 29,
    interval: "month",
    productId: productOf(starter),
  });
  const plans = plansOf(starter, pro);
  assert.equal(plans.planOf({ id: starter.id, product: productOf(starter) }), "starter");
  assert.equal(plans.planOf({ id: pro.id, product: productOf(pro) }), "pro");
  assert.equal(plans.planOf({ id: "price_other", product: productOf(starter) }), null);
});

Deno.test("subscriptionState() reads a cancel_at within the period as cancel_at_period_end", async () => {
  await using double = new PayprocDouble();
  const plans = plansOf(
    double.addPrice({ lookupKey: "starter_monthly", unitAmount: 100, interval: "month" }),
  );
  const subscription = fixture(double, "starter_monthly");
  subscription.cancel_at = subscription.items.data[0]!.current_period_end;
  assert.equal(subscriptionState(subscription, plans).cancelAtPeriodEnd, true);
});

Deno.test("chooseSubscription() prefers entitled over recoverable over ended, then the higher plan, then the newest", async () => {
  await using double = new PayprocDouble();
  const plans = plansOf(
    double.addPrice({ lookupKey: "starter_monthly", unitAmount: 100, interval: "month" }),
    double.addPrice({ lookupKey: "pro_monthly", unitAmount: 200, interval: "month" }),
  );
  const canceledPro = fixture(double, "pro_monthly", { status: "canceled" });
  const pastDuePro = fixture(double, "pro_monthly", { status: "past_due" });
  const activeStarter = fixture(double, "starter_monthly", { created: 1_000 });
  const newerStarter = fixture(double, "starter_monthly", { created: 2_000 });
  const activePro = fixture(double, "pro_monthly", { created: 500 });
  assert.equal(chooseSubscription([canceledPro, pastDuePro], plans), pastDuePro);
  assert.equal(chooseSubscription([pastDuePro, activeStarter], plans), activeStarter);
  assert.equal(chooseSubscription([activeStarter, newerStarter], plans), newerStarter);
  assert.equal(chooseSubscription([newerStarter, activePro, canceledPro], plans), activePro);
  assert.equal(chooseSubscription([], plans), null);
});
