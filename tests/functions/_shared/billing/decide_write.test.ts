import assert from "node:assert/strict";
import type { SubscriptionRow } from "../../../../supabase/functions/_shared/billing/subscription_rows.ts";
import type { SubscriptionState } from "../../../../supabase/functions/_shared/billing/subscription_state.ts";
import { decideWrite } from "../../../../supabase/functions/_shared/billing/subscription_sync.ts";

const NOW = new Date("2026-11-23T12:00:00Z");
const HOUR = 3_600_000;

function state(overrides: Partial<SubscriptionState> = {}): SubscriptionState {
  return {
    subscriptionId: "sub_new",
    customerId: "cus_1",
    level: "pro",
    status: "active",
    priceId: "price_pro",
    interval: "month",
    periodStart: NOW,
    periodEnd: new Date(NOW.getTime() + 720 * HOUR),
    cancelAtPeriodEnd: false,
    created: 0,
    ...overrides,
  };
}

function row(overrides: Partial<SubscriptionRow> = {}): SubscriptionRow {
  return {
    id: "row",
    user_id: "user",
    subscription_level: "starter",
    subscription_status: "active",
    source: "payproc",
    payproc_customer_id: "cus_1",
    payproc_subscription_id: "sub_old",
    payproc_price_id: "price_starter",
    billing_interval: "month",
    current_period_start: NOW,
    current_period_end: new Date(NOW.getTime() + 720 * HOUR),
    cancel_at_period_end: false,
    payproc_event_created: null,
    payproc_synced_at: NOW,
    payproc_state_at: NOW,
    created_at: NOW,
    updated_at: NOW,
    ...overrides,
  };
}

Deno.test("decideWrite() writes a first row, and the same subscription unless the read is older", () => {
  assert.deepEqual(decideWrite(null, state(), { readAt: NOW }, NOW), { action: "write" });
  const mirrored = row({ payproc_subscription_id: "sub_new" });
  assert.deepEqual(decideWrite(mirrored, state(), { readAt: NOW }, NOW), { action: "write" });
  assert.deepEqual(decideWrite(mirrored, state(), { readAt: new Date(NOW.getTime() + 1) }, NOW), {
    action: "write",
  });
  assert.deepEqual(decideWrite(mirrored, state(), { readAt: new Date(NOW.getTime() - 1) }, NOW), {
    action: "skip",
    result: "stale",
    reason: "a newer read is already stored",
  });
});

Deno.test("decideWrite() refuses a read answered before the processor time the row is current at", () => {
  const mirrored = row({ payproc_subscription_id: "sub_new" });
  const later = new Date(NOW.getTime() + 1000);
  // Our clock says newer, the processor's clock says older: stale.
  assert.deepEqual(
    decideWrite(mirrored, state(), { readAt: later, stateAt: new Date(NOW.getTime() - 1000) }, NOW),
    { action: "skip", result: "stale", reason: "a newer read is already stored" },
  );
  for (const stateAt of [NOW, later, null, undefined]) {
    assert.deepEqual(decideWrite(mirrored, state(), { readAt: later, stateAt }, NOW), {
      action: "write",
    });
  }
  // A row whose stamp is unknown judges by our clock alone.
  assert.deepEqual(
    decideWrite(row({ payproc_subscription_id: "sub_new", payproc_state_at: null }), state(), {
      readAt: later,
      stateAt: new Date(0),
    }, NOW),
    { action: "write" },
  );
});

Deno.test("decideWrite() contests a live subscription, replaces an ended one", () => {
  assert.deepEqual(decideWrite(row(), state(), { readAt: NOW }, NOW), {
    action: "contest",
    otherSubscriptionId: "sub_old",
  });
  for (const status of ["canceled", "incomplete_expired"] as const) {
    assert.deepEqual(
      decideWrite(row({ subscription_status: status }), state(), { readAt: NOW }, NOW),
      { action: "write" },
    );
  }
});

Deno.test("decideWrite() keeps an active grant against a subscription that gives no access", () => {
  const grant = row({ source: "grant", payproc_subscription_id: null });
  assert.deepEqual(decideWrite(grant, state({ status: "past_due" }), { readAt: NOW }, NOW), {
    action: "skip",
    result: "kept",
    reason: "an active grant outranks it",
  });
  assert.deepEqual(decideWrite(grant, state({ status: "active" }), { readAt: NOW }, NOW), {
    action: "write",
  });
  const lapsed = row({
    source: "grant",
    payproc_subscription_id: null,
    current_period_end: new Date(NOW.getTime() - HOUR),
  });
  assert.deepEqual(decideWrite(lapsed, state({ status: "past_due" }), { readAt: NOW }, NOW), {
    action: "write",
  });
});
