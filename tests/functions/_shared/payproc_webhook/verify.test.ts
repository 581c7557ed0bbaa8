import assert from "node:assert/strict";
import type Stripe from "stripe";
import { admit } from "../../../../supabase/functions/_shared/payproc_webhook/verify.ts";
import { HttpError } from "../../../../supabase/functions/_shared/platform/errors.ts";

function event(type: string, options: { account?: string; livemode?: boolean } = {}): Stripe.Event {
  return {
    id: `evt_${crypto.randomUUID().slice(0, 8)}`,
    object: "event",
    type,
    created: 1,
    livemode: options.livemode ?? false,
    ...(options.account ? { account: options.account } : {}),
    data: { object: { id: "x" } },
  } as unknown as Stripe.Event;
}

function refusedWith(code: string) {
  return (error: unknown) =>
    error instanceof HttpError && error.status === 400 && error.code === code;
}

Deno.test("admit(): the platform endpoint takes our own events, never one naming a connected account", () => {
  const ours = event("customer.subscription.updated");
  assert.deepEqual(admit(ours, "platform", false), { event: ours, endpoint: "platform" });
  assert.throws(
    () => admit(event("customer.subscription.updated", { account: "acct_1" }), "platform", false),
    refusedWith("wrong_endpoint"),
  );
  assert.throws(
    () => admit(event("account.updated", { account: "acct_1" }), "platform", false),
    refusedWith("wrong_endpoint"),
  );
});

Deno.test("admit(): the Connect endpoint takes account and payout events of a connected account only", () => {
  for (const type of ["account.updated", "payout.paid", "payout.failed"]) {
    const ok = event(type, { account: "acct_1" });
    assert.deepEqual(admit(ok, "connect", false), { event: ok, endpoint: "connect" });
  }
  assert.throws(
    () => admit(event("account.updated"), "connect", false),
    refusedWith("wrong_endpoint"),
  );
  for (
    const type of ["customer.subscription.created", "checkout.session.completed", "invoice.paid"]
  ) {
    assert.throws(
      () => admit(event(type, { account: "acct_1" }), "connect", false),
      refusedWith("wrong_endpoint"),
      type,
    );
  }
});

Deno.test("admit(): an event's mode must be the key's", () => {
  assert.throws(
    () => admit(event("invoice.paid", { livemode: true }), "platform", false),
    refusedWith("wrong_mode"),
  );
  assert.throws(() => admit(event("invoice.paid"), "platform", true), refusedWith("wrong_mode"));
  assert.equal(
    admit(event("invoice.paid", { livemode: true }), "platform", true).endpoint,
    "platform",
  );
});
