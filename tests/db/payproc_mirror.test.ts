import assert from "node:assert/strict";
import {
  MIRRORED_COLUMNS,
  mirroredObject,
} from "../../supabase/functions/_shared/billing/subscription_rows.ts";
import type { SubscriptionState } from "../../supabase/functions/_shared/billing/subscription_state.ts";
import { createTestDatabase, sqlTest } from "../support/db.ts";
import { asRole, createUser } from "../support/sql.ts";

const db = await createTestDatabase();

interface Verdict {
  user_id: string;
  matches: boolean;
  fresh: boolean;
  same: boolean;
  changed: boolean;
  recorded: boolean;
}

const DAY = 86_400_000;

/** A mirrored row of a new user, and a state of the same subscription differing in every column. */
async function mirroredRow() {
  const user = await createUser(db.pool);
  const sub = `sub_${crypto.randomUUID().slice(0, 8)}`;
  const customer = `cus_${crypto.randomUUID().slice(0, 8)}`;
  await db.pool.query(
    `insert into public.subscriptions (
       user_id, subscription_level, subscription_status, source, payproc_customer_id,
       payproc_subscription_id, payproc_price_id, billing_interval, current_period_start,
       current_period_end, cancel_at_period_end
     ) values ($1, 'starter', 'active', 'payproc', $2, $3, 'price_a', 'month',
               now() - interval '1 day', now() + interval '29 days', false)`,
    [user.id, customer, sub],
  );
  const start = new Date(Date.now() + DAY);
  const state: SubscriptionState = {
    subscriptionId: sub,
    customerId: customer,
    level: "pro",
    status: "past_due",
    priceId: "price_b",
    interval: "year",
    periodStart: start,
    periodEnd: new Date(start.getTime() + 365 * DAY),
    cancelAtPeriodEnd: true,
    created: 0,
  };
  return { user, state };
}

async function mirror(
  state: SubscriptionState,
  readAt: Date,
  options: { user?: string; event?: Record<string, unknown> } = {},
): Promise<Verdict | undefined> {
  const { rows } = await db.pool.query<Verdict>(
    "select * from public.mirror_subscription($1::jsonb, $2, $3, $4, $5::jsonb)",
    [
      JSON.stringify(mirroredObject(state)),
      readAt,
      null,
      options.user ?? null,
      options.event ? JSON.stringify(options.event) : null,
    ],
  );
  return rows[0];
}

async function row(userId: string): Promise<Record<string, unknown>> {
  return (await db.pool.query("select * from public.subscriptions where user_id = $1", [userId]))
    .rows[0];
}

function event(id = `evt_${crypto.randomUUID().slice(0, 8)}`) {
  return {
    id,
    type: "customer.subscription.updated",
    created: Math.floor(Date.now() / 1000),
    account: null,
    livemode: false,
    api_version: null,
    endpoint: "platform",
  };
}

sqlTest(
  "mirror_subscription() writes every column of MIRRORED_COLUMNS (the SQL and TS lists agree)",
  async () => {
    const { user, state } = await mirroredRow();
    const before = await row(user.id);
    const verdict = await mirror(state, new Date());
    assert.deepEqual(
      { ...verdict, user_id: undefined },
      {
        user_id: undefined,
        matches: true,
        fresh: true,
        same: false,
        changed: true,
        recorded: false,
      },
    );
    const after = await row(user.id);
    const wanted = mirroredObject(state);
    for (const [column] of MIRRORED_COLUMNS) {
      const value = after[column] instanceof Date ? after[column].toISOString() : after[column];
      const expected = wanted[column] instanceof Date
        ? (wanted[column] as Date).toISOString()
        : wanted[column];
      assert.deepEqual(value, expected, column);
      // The identity columns and source ('payproc' on every mirrored row) cannot differ.
      if (!["payproc_subscription_id", "payproc_customer_id", "source"].includes(column)) {
        assert.notDeepEqual(before[column], after[column], `${column} was meant to differ`);
      }
    }
    const again = await mirror(state, new Date());
    assert.deepEqual([again?.same, again?.changed], [true, false]);
    assert.deepEqual((await row(user.id)).updated_at, after.updated_at);
  },
);

sqlTest(
  "mirror_subscription() refuses an older read and a row of another customer or user",
  async () => {
    const { user, state } = await mirroredRow();
    await mirror(state, new Date());
    const stale = await mirror({ ...state, status: "active" }, new Date(Date.now() - 60_000));
    assert.deepEqual([stale?.fresh, stale?.changed], [false, false]);
    assert.equal((await row(user.id)).subscription_status, "past_due");

    const otherCustomer = await mirror({ ...state, customerId: "cus_other" }, new Date());
    assert.deepEqual([otherCustomer?.matches, otherCustomer?.changed], [false, false]);
    const otherUser = await mirror(state, new Date(), { user: crypto.randomUUID() });
    assert.equal(otherUser?.matches, false);
    assert.equal(await mirror({ ...state, subscriptionId: "sub_none" }, new Date()), undefined);
  },
);

sqlTest(
  "mirror_subscription() records its event once, with the verdict as outcome; a repeat changes nothing",
  async () => {
    const { user, state } = await mirroredRow();
    const first = event();
    assert.equal((await mirror(state, new Date(), { event: first }))?.recorded, true);
    const repeat = await mirror({ ...state, status: "active" }, new Date(), { event: first });
    assert.deepEqual([repeat?.recorded, repeat?.changed], [false, false]);
    assert.equal((await row(user.id)).subscription_status, "past_due");

    const stale = event();
    await mirror(state, new Date(Date.now() - 60_000), { event: stale });
    const same = event();
    await mirror(state, new Date(), { event: same });
    const mismatch = event();
    await mirror({ ...state, customerId: "cus_other" }, new Date(), { event: mismatch });
    const { rows } = await db.pool.query(
      "select id, outcome, detail, endpoint from public.payproc_events where id = any($1) order by id",
      [[first.id, stale.id, same.id, mismatch.id]],
    );
    const byId = new Map(rows.map((r) => [r.id, [r.outcome, r.detail, r.endpoint]]));
    assert.deepEqual(byId.get(first.id), ["applied", null, "platform"]);
    assert.deepEqual(byId.get(stale.id), [
      "skipped",
      "stale: a newer read is already stored",
      "platform",
    ]);
    assert.deepEqual(byId.get(same.id), ["applied", "already up to date", "platform"]);
    assert.equal(byId.has(mismatch.id), false, "no match: the full path records it");
  },
);

sqlTest("mirror_subscription() and record_payproc_event() are the service's only", async () => {
  const user = await createUser(db.pool);
  for (const role of ["anon", "authenticated"] as const) {
    await assert.rejects(
      asRole(
        db.pool,
        { role, userId: user.id },
        (c) => c.query("select public.record_payproc_event($1::jsonb)", [JSON.stringify(event())]),
      ),
      /permission denied/,
    );
    await assert.rejects(
      asRole(
        db.pool,
        { role, userId: user.id },
        (c) => c.query("select * from public.mirror_subscription('{}'::jsonb, now())"),
      ),
      /permission denied/,
    );
  }
});

/** `apply_subscription_event()`'s answer for `state` carried by `evt`, at `now`. */
async function applySigned(
  state: SubscriptionState,
  evt: ReturnType<typeof event>,
  now = new Date(),
): Promise<{ outcome: string; detail: string | null }> {
  const { rows } = await db.pool.query(
    "select * from public.apply_subscription_event($1::jsonb, $2::jsonb, $3)",
    [JSON.stringify(mirroredObject(state)), JSON.stringify(evt), now],
  );
  return rows[0];
}

/** Sets the row's stamp (`payproc_state_at`) to Unix second `at` (null: unknown). */
async function stamp(userId: string, at: number | null): Promise<void> {
  await db.pool.query(
    "update public.subscriptions set payproc_state_at = to_timestamp($2) where user_id = $1",
    [userId, at],
  );
}

sqlTest(
  "apply_subscription_event() writes every column of MIRRORED_COLUMNS too, and judges them all for 'already up to date'",
  async () => {
    const { user, state } = await mirroredRow();
    const t = Math.floor(Date.now() / 1000);
    await stamp(user.id, t);
    const before = await row(user.id);
    assert.deepEqual(await applySigned(state, { ...event(), created: t + 1 }), {
      outcome: "applied",
      detail: null,
    });
    const after = await row(user.id);
    const wanted = mirroredObject(state);
    for (const [column] of MIRRORED_COLUMNS) {
      const value = after[column] instanceof Date ? after[column].toISOString() : after[column];
      const expected = wanted[column] instanceof Date
        ? (wanted[column] as Date).toISOString()
        : wanted[column];
      assert.deepEqual(value, expected, column);
      if (!["payproc_subscription_id", "payproc_customer_id", "source"].includes(column)) {
        assert.notDeepEqual(before[column], after[column], `${column} was meant to differ`);
      }
    }
    assert.deepEqual(await applySigned(state, { ...event(), created: t + 2 }), {
      outcome: "applied",
      detail: "already up to date",
    });
    assert.deepEqual((await row(user.id)).updated_at, after.updated_at);
  },
);

sqlTest(
  "apply_subscription_event() writes an event's copy only when created strictly after the stamp, for the same customer; else it writes nothing",
  async () => {
    const { user, state } = await mirroredRow();
    const t = Math.floor(Date.now() / 1000);
    const unproven = async (
      label: string,
      s: SubscriptionState,
      evt: ReturnType<typeof event>,
    ) => {
      const before = await row(user.id);
      assert.deepEqual(await applySigned(s, evt), { outcome: "unproven", detail: null }, label);
      assert.deepEqual(await row(user.id), before, label);
      assert.equal(
        (await db.pool.query("select 1 from public.payproc_events where id = $1", [evt.id]))
          .rowCount,
        0,
        label,
      );
    };
    await unproven("no stamp", state, { ...event(), created: t });
    await stamp(user.id, t);
    await unproven("the stamp's second", state, { ...event(), created: t });
    await unproven("older", state, { ...event(), created: t - 1 });
    await unproven("another customer", { ...state, customerId: "cus_other" }, {
      ...event(),
      created: t + 1,
    });
    await unproven("no row", { ...state, subscriptionId: "sub_none" }, {
      ...event(),
      created: t + 1,
    });

    const newer = { ...event(), created: t + 1 };
    const now = new Date();
    assert.deepEqual(await applySigned(state, newer, now), { outcome: "applied", detail: null });
    const after = await row(user.id);
    assert.equal(after.subscription_status, "past_due");
    assert.deepEqual(after.payproc_state_at, new Date((t + 1) * 1000));
    assert.deepEqual(after.payproc_event_created, new Date((t + 1) * 1000));
    assert.deepEqual(after.payproc_synced_at, now, "a read begun before now is older");
    // A repeat, even of a newer copy, is a duplicate and changes nothing.
    assert.deepEqual(await applySigned({ ...state, status: "active" }, newer), {
      outcome: "duplicate",
      detail: null,
    });
    assert.equal((await row(user.id)).subscription_status, "past_due");
    await assert.rejects(
      db.pool.query("select * from public.apply_subscription_event($1::jsonb, $2::jsonb, null)", [
        JSON.stringify(mirroredObject(state)),
        JSON.stringify({ ...event(), created: t + 2 }),
      ]),
      /current time are required/,
    );
  },
);

sqlTest(
  "subscriptions: an update of the processor bookkeeping alone neither moves updated_at nor broadcasts; any other does",
  async () => {
    const { user } = await mirroredRow();
    const broadcasts = () =>
      db.pool.query("select count(*)::int as n from realtime.messages where topic = $1", [
        `user:${user.id}`,
      ]).then((r) => r.rows[0].n as number);
    const before = await row(user.id);
    const sent = await broadcasts();
    await db.pool.query(
      `update public.subscriptions set payproc_state_at = now(), payproc_synced_at = now(),
         payproc_event_created = now() where user_id = $1`,
      [user.id],
    );
    assert.deepEqual((await row(user.id)).updated_at, before.updated_at);
    assert.equal(await broadcasts(), sent);
    // An update that changes nothing at all still counts, as before.
    await db.pool.query("update public.subscriptions set source = source where user_id = $1", [
      user.id,
    ]);
    assert.ok(((await row(user.id)).updated_at as Date) > (before.updated_at as Date));
    assert.equal(await broadcasts(), sent + 1);
    await db.pool.query(
      "update public.subscriptions set cancel_at_period_end = true, payproc_state_at = now() where user_id = $1",
      [user.id],
    );
    assert.equal(await broadcasts(), sent + 2);
  },
);

sqlTest(
  "mirror_subscription() keeps the stamp: the Date of the read (a read answered earlier is stale), cleared by a read without one, moved when the values are the same",
  async () => {
    const { user, state } = await mirroredRow();
    const t = Math.floor(Date.now() / 1000);
    await stamp(user.id, t);
    const at = (seconds: number) => new Date(seconds * 1000);
    const mirrorAt = async (s: SubscriptionState, stateAt: Date | null) =>
      (await db.pool.query<Verdict>(
        "select * from public.mirror_subscription($1::jsonb, $2, null, null, null, $3)",
        [JSON.stringify(mirroredObject(s)), new Date(), stateAt],
      )).rows[0];

    const earlier = await mirrorAt(state, at(t - 1));
    assert.deepEqual([earlier?.fresh, earlier?.changed], [false, false]);
    assert.equal((await row(user.id)).subscription_status, "active");

    const later = await mirrorAt(state, at(t + 5));
    assert.deepEqual([later?.fresh, later?.changed], [true, true]);
    assert.deepEqual((await row(user.id)).payproc_state_at, at(t + 5));

    const updatedAt = (await row(user.id)).updated_at;
    const same = await mirrorAt(state, at(t + 9));
    assert.deepEqual([same?.same, same?.changed], [true, false]);
    assert.deepEqual((await row(user.id)).payproc_state_at, at(t + 9));
    assert.deepEqual((await row(user.id)).updated_at, updatedAt);

    await mirrorAt(state, null);
    assert.equal((await row(user.id)).payproc_state_at, null);
  },
);

sqlTest("apply_subscription_event() is the service's only", async () => {
  const user = await createUser(db.pool);
  for (const role of ["anon", "authenticated"] as const) {
    await assert.rejects(
      asRole(
        db.pool,
        { role, userId: user.id },
        (c) =>
          c.query("select * from public.apply_subscription_event('{}'::jsonb, '{}'::jsonb, now())"),
      ),
      /permission denied/,
    );
  }
});

sqlTest(
  "apply_subscription_events() applies a batch as one by one would: oldest first per subscription, a repeat within it a duplicate, answers by position",
  async () => {
    const a = await mirroredRow();
    const b = await mirroredRow();
    const t = Math.floor(Date.now() / 1000);
    await stamp(a.user.id, t);
    await stamp(b.user.id, t);
    const newer = { ...event(), created: t + 2 };
    const older = { ...event(), created: t + 1 };
    const other = { ...event(), created: t + 1 };
    const stale = { ...event(), created: t };
    const items = [
      { mirror: mirroredObject({ ...a.state, status: "unpaid" }), event: newer },
      { mirror: mirroredObject(a.state), event: older },
      { mirror: mirroredObject(b.state), event: other },
      { mirror: mirroredObject(b.state), event: other },
      { mirror: mirroredObject(b.state), event: stale },
    ];
    const { rows } = await db.pool.query(
      "select * from public.apply_subscription_events($1::jsonb, now()) order by item",
      [JSON.stringify(items)],
    );
    assert.deepEqual(rows.map((r) => [r.item, r.outcome]), [
      [1, "applied"],
      [2, "applied"], // applied first: older
      [3, "applied"],
      [4, "duplicate"],
      [5, "unproven"],
    ]);
    assert.equal((await row(a.user.id)).subscription_status, "unpaid", "the newest wins");
    assert.deepEqual((await row(a.user.id)).payproc_state_at, new Date((t + 2) * 1000));
    assert.equal((await row(b.user.id)).subscription_status, "past_due");

    for (const bad of ["{}", JSON.stringify(Array.from({ length: 101 }, () => items[0]))]) {
      await assert.rejects(
        db.pool.query("select * from public.apply_subscription_events($1::jsonb, now())", [bad]),
        /at most 100/,
      );
    }
  },
);
