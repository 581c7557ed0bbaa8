/**
 * payproc-webhook writes a subscription event's own signed copy, with no
 * processor read, exactly when it provably carries the newest state (created
 * strictly after the processor time the row is known current at,
 * `payproc_state_at`); every other event re-reads. These tests count the
 * reads at the processor double, try every delivery order and duplicate of
 * a run of changes (including changes within one second and a change back),
 * and race deliveries.
 *
 * @module
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import {
  billingSetup,
  countRows,
  deliver,
  subscriptionOf,
  type TestSubscriptionRow,
  unix,
} from "../support/billing.ts";
import { sqlTest } from "../support/db.ts";
import type { PayprocSubscription } from "../support/payproc_double.ts";
import type { SubscriptionPatch } from "../support/payproc_double/subscription_helpers.ts";
import { createUser, type TestUser } from "../support/sql.ts";

/** The processor's clock (Unix seconds): changes move it on, as time passes at the processor. */
let clock = unix();
const setup = await billingSetup({}, { now: () => clock });
const { db, double } = setup;

interface WebhookAnswer {
  outcome: string;
  detail?: string;
}

/** A user whose row mirrors a starter subscription (applied by a re-read), and the row's stamp. */
async function mirrored() {
  const user = await createUser(db.pool);
  const customer = double.addCustomer({ email: user.email, metadata: { user_id: user.id } });
  const subscription = double.addSubscription({
    customer: customer.id,
    lookupKey: "starter_monthly",
  });
  const res = await deliver<WebhookAnswer>(
    setup,
    double.event("customer.subscription.created", subscription),
  );
  assert.equal(res.status, 200);
  const stamp = await stampOf(user);
  assert.ok(stamp !== null, "a re-read stamps the row with the processor's Date");
  return { user, subscription, stamp };
}

/** The row's `payproc_state_at` in Unix seconds (null: unknown). */
async function stampOf(user: TestUser): Promise<number | null> {
  const { rows } = await db.pool.query<{ stamp: number | null }>(
    "select extract(epoch from payproc_state_at)::bigint::int as stamp from public.subscriptions where user_id = $1",
    [user.id],
  );
  return rows[0]?.stamp ?? null;
}

/** How often the webhook read subscription `id` from the processor so far. */
function readsOf(id: string): number {
  return double.requestsTo("GET", `/v1/subscriptions/${id}`).length;
}

function broadcastsTo(user: TestUser) {
  return countRows(db.pool, "realtime.messages", "topic = $1", [`user:${user.id}`]);
}

/**
 * A processor-side change `seconds` after the last (0: in the same second),
 * and the event reporting it.
 */
function change(subscription: PayprocSubscription, patch: SubscriptionPatch, seconds: number) {
  clock += seconds;
  return double.event(
    "customer.subscription.updated",
    double.updateSubscription(subscription.id, patch),
  );
}

/** The values of a row a user sees (without the processor bookkeeping). */
function content(row: TestSubscriptionRow | null) {
  if (row === null) return null;
  const { payproc_state_at: _s, payproc_synced_at: _r, payproc_event_created: _e, ...rest } = row as
    & TestSubscriptionRow
    & Record<string, unknown>;
  return rest;
}

/** What a row says of a subscription (the values a state is told apart by). */
function said(row: TestSubscriptionRow | null) {
  return row && {
    level: row.subscription_level,
    status: row.subscription_status,
    cancel: row.cancel_at_period_end,
  };
}

/** The same, of the processor's current copy. */
function current(subscription: PayprocSubscription) {
  const now = double.get("subscription", subscription.id)!;
  return {
    level: now.items.data[0]!.price.lookup_key!.split("_")[0],
    status: now.status,
    cancel: now.cancel_at_period_end,
  };
}

sqlTest(
  "payproc-webhook: an event created after the row's stamp is applied from its own copy, with no processor read",
  async () => {
    const { user, subscription, stamp } = await mirrored();
    const before = await subscriptionOf(db.pool, user.id);
    const broadcasts = await broadcastsTo(user);
    const reads = readsOf(subscription.id);

    const event = change(subscription, { status: "past_due" }, 1);
    const res = await deliver<WebhookAnswer>(setup, event);
    assert.equal(res.status, 200);
    assert.equal(res.body.outcome, "applied");
    assert.equal(readsOf(subscription.id), reads, "no read");
    const after = await subscriptionOf(db.pool, user.id);
    assert.equal(after?.subscription_status, "past_due");
    assert.ok(after!.updated_at > before!.updated_at);
    assert.equal(await broadcastsTo(user), broadcasts + 1);
    assert.equal(await stampOf(user), stamp + 1);
    assert.equal(
      await countRows(db.pool, "public.payproc_events", "id = $1 and outcome = 'applied'", [
        event.id,
      ]),
      1,
    );

    // A repeat is a duplicate, still without a read.
    const again = await deliver<WebhookAnswer>(setup, event);
    assert.equal(again.body.outcome, "duplicate");
    assert.equal(readsOf(subscription.id), reads);
  },
);

sqlTest(
  "payproc-webhook: an event of the stamp's second or older, or in another API version, re-reads",
  async () => {
    const { user, subscription, stamp } = await mirrored();
    let reads = readsOf(subscription.id);
    for (const created of [stamp, stamp - 30]) {
      const res = await deliver<WebhookAnswer>(
        setup,
        double.event(
          "customer.subscription.updated",
          double.updateSubscription(subscription.id, { cancelAtPeriodEnd: created === stamp }),
          { created },
        ),
      );
      assert.equal(res.status, 200);
      assert.equal(
        readsOf(subscription.id),
        ++reads,
        `created ${created - stamp} s from the stamp`,
      );
      assert.deepEqual(said(await subscriptionOf(db.pool, user.id)), current(subscription));
    }
    clock += 60;
    const otherVersion = double.event(
      "customer.subscription.updated",
      double.updateSubscription(subscription.id, { status: "past_due" }),
      { apiVersion: "2024-06-20" },
    );
    assert.equal((await deliver<WebhookAnswer>(setup, otherVersion)).status, 200);
    assert.equal(readsOf(subscription.id), ++reads, "another API version's copy is not taken");
    assert.equal((await subscriptionOf(db.pool, user.id))?.subscription_status, "past_due");
  },
);

sqlTest(
  "payproc-webhook: a copy equal to the row moves only its stamp (no updated_at, no broadcast), and an older event then re-reads",
  async () => {
    const { user, subscription, stamp } = await mirrored();
    // Two changes: away (t+1) and back (t+2); the event of the way back arrives first.
    const away = change(subscription, { cancelAtPeriodEnd: true }, 1);
    const back = change(subscription, { cancelAtPeriodEnd: false }, 1);
    const before = await subscriptionOf(db.pool, user.id);
    const broadcasts = await broadcastsTo(user);
    const reads = readsOf(subscription.id);

    const first = await deliver<WebhookAnswer>(setup, back);
    assert.equal(first.body.outcome, "applied");
    assert.equal(first.body.detail, "already up to date");
    assert.equal(readsOf(subscription.id), reads);
    assert.deepEqual(
      content(await subscriptionOf(db.pool, user.id)),
      content(before),
      "nothing a user sees moved",
    );
    assert.equal(await broadcastsTo(user), broadcasts);
    assert.equal(await stampOf(user), stamp + 2);

    // The older event cannot be proved newest: it re-reads, and the row stays.
    assert.equal((await deliver<WebhookAnswer>(setup, away)).status, 200);
    assert.equal(readsOf(subscription.id), reads + 1);
    assert.equal((await subscriptionOf(db.pool, user.id))?.cancel_at_period_end, false);
  },
);

sqlTest(
  "payproc-webhook: a subscription the processor no longer has clears the stamp; a later copy never revives it",
  async () => {
    const { user, subscription, stamp } = await mirrored();
    const copy = structuredClone(double.get("subscription", subscription.id)!);
    double.store.remove("subscription", subscription.id);
    const older = double.event("customer.subscription.updated", copy, { created: stamp });
    assert.equal((await deliver<WebhookAnswer>(setup, older)).status, 200);
    assert.equal((await subscriptionOf(db.pool, user.id))?.subscription_status, "canceled");
    assert.equal(await stampOf(user), null);

    clock += 60;
    const later = double.event("customer.subscription.updated", copy);
    const res = await deliver<WebhookAnswer>(setup, later);
    assert.equal(res.status, 200);
    assert.equal((await subscriptionOf(db.pool, user.id))?.subscription_status, "canceled");
  },
);

/** Distinct states a run of changes moves through (level, status, cancel flag). */
const STATES: SubscriptionPatch[] = [
  { lookupKey: "pro_monthly", status: "active", cancelAtPeriodEnd: false },
  { lookupKey: "pro_monthly", status: "past_due", cancelAtPeriodEnd: false },
  { lookupKey: "starter_monthly", status: "past_due", cancelAtPeriodEnd: true },
  { lookupKey: "starter_monthly", status: "active", cancelAtPeriodEnd: true },
  { lookupKey: "pro_monthly", status: "active", cancelAtPeriodEnd: true },
  { lookupKey: "starter_monthly", status: "unpaid", cancelAtPeriodEnd: false },
];

sqlTest(
  "payproc-webhook: any delivery order and duplicates of a run of changes (some within one second) end at the processor's state, never moving back",
  async () => {
    await fc.assert(
      fc.asyncProperty(
        // The seconds between consecutive changes (0: the same second).
        fc.array(fc.integer({ min: 0, max: 2 }), { minLength: 2, maxLength: STATES.length }),
        fc.infiniteStream(fc.nat()),
        async (gaps, picks) => {
          const { user, subscription } = await mirrored();
          const events = gaps.map((gap, i) => ({
            version: i,
            event: change(subscription, STATES[i]!, gap),
          }));
          // Every event once, in a random order, some of them twice.
          const pending = [...events, ...events.filter((_, i) => picks.next().value % 3 === i % 3)];
          let seen = -1;
          while (pending.length > 0) {
            const [next] = pending.splice(picks.next().value % pending.length, 1);
            const res = await deliver<WebhookAnswer>(setup, next!.event);
            assert.equal(res.status, 200);
            // The row says one of the run's states, never an older one than before.
            const row = said(await subscriptionOf(db.pool, user.id));
            const version = events.findIndex((e) =>
              JSON.stringify(said(stateRow(e.event.data.object))) === JSON.stringify(row)
            );
            assert.ok(version >= seen, `moved back from state ${seen} to ${version}`);
            seen = version;
          }
          assert.deepEqual(said(await subscriptionOf(db.pool, user.id)), current(subscription));
          for (const { event } of events) {
            assert.equal(
              await countRows(db.pool, "public.payproc_events", "id = $1", [event.id]),
              1,
            );
          }
        },
      ),
      { numRuns: 30 },
    );
  },
);

/** What the row says when it mirrors `subscription` (the copy an event carries). */
function stateRow(subscription: PayprocSubscription): TestSubscriptionRow {
  return {
    subscription_level: subscription.items.data[0]!.price.lookup_key!.split("_")[0]!,
    subscription_status: subscription.status,
    cancel_at_period_end: subscription.cancel_at_period_end,
  } as TestSubscriptionRow;
}

sqlTest(
  "payproc-webhook: 20 changes of one subscription delivered at once, each twice, apply each once and end at the processor's state",
  async () => {
    const { user, subscription } = await mirrored();
    // Three changes a second.
    const events = Array.from(
      { length: 20 },
      (_, i) => change(subscription, STATES[i % STATES.length]!, i % 3 === 0 ? 1 : 0),
    );
    const answers = await Promise.all(
      [...events, ...events].map((event) => deliver<WebhookAnswer>(setup, event)),
    );
    assert.deepEqual(answers.filter((a) => a.status !== 200), []);
    assert.equal(answers.filter((a) => a.body.outcome === "duplicate").length, 20);
    assert.deepEqual(said(await subscriptionOf(db.pool, user.id)), current(subscription));
    assert.equal(
      await countRows(db.pool, "public.payproc_events", "id = any($1::text[])", [
        events.map((e) => e.id),
      ]),
      20,
    );
  },
);
