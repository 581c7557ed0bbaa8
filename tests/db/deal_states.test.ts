/**
 * The deal state machine (migration 20261123001700_deal_states) and the
 * settlements table (20261123001800_deal_settlements): the state table,
 * transition_deal() as the only writer of deals.status, its audit in
 * deal_events, the frozen commission, cancel_deal(), the realtime broadcasts,
 * RLS, the settlement constraints and concurrent transitions.
 *
 * @module
 */
import assert from "node:assert/strict";
import pg from "pg";
import { createTestDatabase, sqlTest } from "../support/db.ts";
import { messagesFor } from "../support/realtime.ts";
import { asRole, createUser, type TestUser } from "../support/sql.ts";
import { createListing, rejectsWith, sqlState } from "./core_fixtures.ts";

const db = await createTestDatabase();

const STATES = [
  "pending_payment",
  "funded",
  "in_handover",
  "completed",
  "cancelled",
  "refunded",
  "disputed",
] as const;
type DealState = typeof STATES[number];

/**
 * The state table of the migration's header, written out pair by pair (with
 * the escrow release migration's disputed → in_handover).
 */
const ALLOWED: ReadonlyArray<readonly [DealState, DealState]> = [
  ["pending_payment", "funded"],
  ["pending_payment", "cancelled"],
  ["funded", "in_handover"],
  ["funded", "completed"],
  ["in_handover", "completed"],
  ["funded", "refunded"],
  ["in_handover", "refunded"],
  ["funded", "disputed"],
  ["in_handover", "disputed"],
  ["disputed", "funded"],
  ["disputed", "in_handover"],
  ["disputed", "refunded"],
  ["completed", "refunded"],
];
const allowed = (from: DealState, to: DealState) =>
  ALLOWED.some(([f, t]) => f === from && t === to);

/** A legal way from pending_payment to each state. */
const PATH_TO: Record<DealState, DealState[]> = {
  pending_payment: [],
  funded: ["funded"],
  in_handover: ["funded", "in_handover"],
  completed: ["funded", "completed"],
  cancelled: ["cancelled"],
  refunded: ["funded", "refunded"],
  disputed: ["funded", "disputed"],
};

/** A deal between a new buyer and a new seller (on the free plan). */
interface TestDeal {
  id: string;
  buyer: TestUser;
  seller: TestUser;
  amount: string;
}

async function newDeal(amount = "1250.00"): Promise<TestDeal> {
  const seller = await createUser(db.pool);
  const buyer = await createUser(db.pool);
  const listing = await createListing(db.pool, seller.id, "approved");
  const { rows } = await db.pool.query<{ id: string }>(
    `insert into public.deals (listing_id, buyer_id, seller_id, amount, currency)
     values ($1, $2, $3, $4, 'USD') returning id`,
    [listing.id, buyer.id, seller.id, amount],
  );
  return { id: rows[0]!.id, buyer, seller, amount };
}

interface DealRow {
  status: DealState;
  commission: string | null;
  funded_at: Date | null;
  closed_at: Date | null;
  updated_at: Date;
}

/** transition_deal() on the service connection; the deal row it returns. */
async function transition(
  client: pg.Pool | pg.PoolClient,
  dealId: string,
  to: string,
  cause = `test_${to}`,
  payprocObject: string | null = null,
  actor: string | null = null,
): Promise<DealRow> {
  const { rows } = await client.query<DealRow>(
    "select * from public.transition_deal($1, $2, $3, $4, $5)",
    [dealId, to, cause, payprocObject, actor],
  );
  return rows[0]!;
}

async function dealInState(state: DealState, amount?: string): Promise<TestDeal> {
  const deal = await newDeal(amount);
  for (const next of PATH_TO[state]) await transition(db.pool, deal.id, next);
  return deal;
}

async function dealRow(dealId: string): Promise<DealRow> {
  const { rows } = await db.pool.query<DealRow>(
    "select status, commission, funded_at, closed_at, updated_at from public.deals where id = $1",
    [dealId],
  );
  return rows[0]!;
}

interface DealEvent {
  from_status: string | null;
  to_status: string;
  cause: string;
  payproc_object_id: string | null;
  actor_id: string | null;
}

async function eventsOf(dealId: string): Promise<DealEvent[]> {
  const { rows } = await db.pool.query<DealEvent>(
    `select from_status, to_status, cause, payproc_object_id, actor_id
     from public.deal_events where deal_id = $1 order by id`,
    [dealId],
  );
  return rows;
}

/** Everything a transition could write: the deal row, its events and its broadcasts. */
async function footprint(deal: TestDeal): Promise<unknown> {
  const { rows } = await db.pool.query(
    `select (select to_jsonb(d) from public.deals d where d.id = $1) as deal,
            (select count(*)::int from public.deal_events e where e.deal_id = $1) as events,
            (select count(*)::int from realtime.messages m where m.topic in ($2, $3)) as messages`,
    [deal.id, `user:${deal.buyer.id}`, `user:${deal.seller.id}`],
  );
  return rows[0];
}

/** A matcher for `assert.rejects`: SQLSTATE `code` from constraint `constraint`. */
function violates(code: string, constraint: string): (error: unknown) => boolean {
  return (error: unknown) => {
    sqlState(code)(error);
    assert.equal((error as { constraint?: unknown }).constraint, constraint);
    return true;
  };
}

// -----------------------------------------------------------------------------
// The state table
// -----------------------------------------------------------------------------

sqlTest("deal_transition_allowed(): of all 7×7 pairs, exactly the state table's", async () => {
  const { rows } = await db.pool.query<{ f: DealState; t: DealState; ok: boolean | null }>(
    `select f.s as f, t.s as t, public.deal_transition_allowed(f.s, t.s) as ok
     from unnest($1::text[]) f (s) cross join unnest($1::text[]) t (s)`,
    [STATES],
  );
  assert.equal(rows.length, 49);
  for (const row of rows) {
    assert.equal(typeof row.ok, "boolean", `${row.f} → ${row.t} answered ${String(row.ok)}`);
  }
  const got = rows.filter((r) => r.ok).map((r) => `${r.f} → ${r.t}`).sort();
  const expected = ALLOWED.map(([f, t]) => `${f} → ${t}`).sort();
  assert.deepEqual(got, expected);
  // completed, cancelled and refunded are final, except a completed deal's refund.
  assert.deepEqual(
    rows.filter((r) => r.ok && ["cancelled", "refunded"].includes(r.f)),
    [],
  );
});

sqlTest(
  "transition_deal(): every pair outside the table is PT409 and writes nothing; every pair in it succeeds",
  async () => {
    let refused = 0;
    for (const from of STATES) {
      const deal = await dealInState(from);
      assert.equal((await dealRow(deal.id)).status, from);
      const before = await footprint(deal);
      for (const to of STATES) {
        if (allowed(from, to)) continue;
        await assert.rejects(
          transition(db.pool, deal.id, to),
          sqlState("PT409"),
          `${from} → ${to} should be refused`,
        );
        assert.deepEqual(await footprint(deal), before, `${from} → ${to} wrote something`);
        refused += 1;
      }
      // The legal ones, each in a transaction rolled back to the same start.
      const client = await db.pool.connect();
      try {
        await client.query("begin");
        for (const to of STATES) {
          if (!allowed(from, to)) continue;
          await client.query("savepoint legal");
          const row = await transition(client, deal.id, to);
          assert.equal(row.status, to, `${from} → ${to}`);
          await client.query("rollback to savepoint legal");
        }
      } finally {
        await client.query("rollback").catch(() => {});
        client.release();
      }
      assert.deepEqual(await footprint(deal), before);
    }
    assert.equal(refused, 49 - ALLOWED.length);

    // An unknown target state is refused the same way (not by the check constraint),
    // and an unknown deal is P0002.
    const deal = await newDeal();
    const before = await footprint(deal);
    await assert.rejects(transition(db.pool, deal.id, "shipped"), sqlState("PT409"));
    assert.deepEqual(await footprint(deal), before);
    await assert.rejects(transition(db.pool, crypto.randomUUID(), "funded"), sqlState("P0002"));
  },
);

sqlTest(
  "a legal path pending_payment → funded → in_handover → completed records one event per transition",
  async () => {
    const admin = await createUser(db.pool, { admin: true });
    const deal = await newDeal();
    const created = await dealRow(deal.id);
    assert.equal(created.status, "pending_payment");
    assert.equal(created.commission, null);
    assert.equal(created.funded_at, null);
    assert.equal(created.closed_at, null);
    assert.deepEqual(await eventsOf(deal.id), [
      {
        from_status: null,
        to_status: "pending_payment",
        cause: "created",
        payproc_object_id: null,
        actor_id: null,
      },
    ]);

    const funded = await transition(db.pool, deal.id, "funded", "payment_succeeded", "pi_path_1");
    assert.equal(funded.status, "funded");
    assert.ok(funded.funded_at instanceof Date, "funded_at is set on funding");
    assert.equal(funded.closed_at, null);
    const stored = await db.pool.query("select * from public.deals where id = $1", [deal.id]);
    assert.deepEqual(stored.rows, [funded], "transition_deal returns the stored row");

    const handover = await transition(
      db.pool,
      deal.id,
      "in_handover",
      "handover_started",
      null,
      deal.seller.id,
    );
    assert.equal(handover.status, "in_handover");
    assert.deepEqual(handover.funded_at, funded.funded_at);
    assert.equal(handover.closed_at, null);

    const completed = await transition(
      db.pool,
      deal.id,
      "completed",
      "payout_released",
      "tr_path_1",
      admin.id,
    );
    assert.equal(completed.status, "completed");
    assert.deepEqual(completed.funded_at, funded.funded_at);
    assert.ok(completed.closed_at instanceof Date, "closed_at is set on completion");
    assert.ok(completed.closed_at >= funded.funded_at!);

    assert.deepEqual(await eventsOf(deal.id), [
      {
        from_status: null,
        to_status: "pending_payment",
        cause: "created",
        payproc_object_id: null,
        actor_id: null,
      },
      {
        from_status: "pending_payment",
        to_status: "funded",
        cause: "payment_succeeded",
        payproc_object_id: "pi_path_1",
        actor_id: null,
      },
      {
        from_status: "funded",
        to_status: "in_handover",
        cause: "handover_started",
        payproc_object_id: null,
        actor_id: deal.seller.id,
      },
      {
        from_status: "in_handover",
        to_status: "completed",
        cause: "payout_released",
        payproc_object_id: "tr_path_1",
        actor_id: admin.id,
      },
    ]);
  },
);

sqlTest("the creation event takes its cause from marketplace.deal_cause", async () => {
  const seller = await createUser(db.pool);
  const buyer = await createUser(db.pool);
  const listing = await createListing(db.pool, seller.id, "approved");
  const client = await db.pool.connect();
  let id: string;
  try {
    await client.query("begin");
    await client.query("select set_config('marketplace.deal_cause', 'offer_accepted', true)");
    const { rows } = await client.query<{ id: string }>(
      `insert into public.deals (listing_id, buyer_id, seller_id, amount, currency)
       values ($1, $2, $3, 10, 'USD') returning id`,
      [listing.id, buyer.id, seller.id],
    );
    id = rows[0]!.id;
    await client.query("commit");
  } finally {
    client.release();
  }
  assert.deepEqual((await eventsOf(id)).map((e) => [e.from_status, e.to_status, e.cause]), [
    [null, "pending_payment", "offer_accepted"],
  ]);
});

// -----------------------------------------------------------------------------
// Commission and the guard
// -----------------------------------------------------------------------------

sqlTest(
  "the commission is frozen on entering funded: calculate_commission() then, not after a rate change",
  async () => {
    const deal = await newDeal("1234.56");
    assert.equal((await dealRow(deal.id)).commission, null);
    const fee = async () =>
      (await db.pool.query<{ fee: string }>(
        "select public.calculate_commission($1, $2) as fee",
        [deal.amount, deal.seller.id],
      )).rows[0]!.fee;
    // Free plan: 10 % of 1234.56 = 123.456, rounded half-up.
    const atFunding = await fee();
    assert.equal(atFunding, "123.46");
    const funded = await transition(db.pool, deal.id, "funded", "payment_succeeded");
    assert.equal(funded.commission, atFunding);

    const { rows } = await db.pool.query<{ rate: string }>(
      "select rate from public.commission_tiers where plan = 'free'",
    );
    const rate = rows[0]!.rate;
    assert.equal(rate, "0.1000");
    try {
      await db.pool.query("update public.commission_tiers set rate = 0.2 where plan = 'free'");
      assert.equal(await fee(), "246.91");
      // Through a dispute won (funded again), the handover and the payout.
      for (const next of ["disputed", "funded", "in_handover", "completed"] as const) {
        const row = await transition(db.pool, deal.id, next);
        assert.equal(row.commission, "123.46", `commission after → ${next}`);
        assert.deepEqual(row.funded_at, funded.funded_at, `funded_at after → ${next}`);
      }
      // A deal funded after the change gets the new rate.
      const later = await dealInState("funded", "1234.56");
      assert.equal((await dealRow(later.id)).commission, "246.91");
    } finally {
      await db.pool.query("update public.commission_tiers set rate = $1 where plan = 'free'", [
        rate,
      ]);
    }
    assert.equal((await dealRow(deal.id)).commission, "123.46");
  },
);

sqlTest(
  "the service connection cannot write status, commission, funded_at or closed_at directly (PT409)",
  async () => {
    const deal = await dealInState("funded");
    const before = await footprint(deal);
    for (
      const set of [
        "status = 'completed'",
        "status = 'pending_payment'",
        "commission = 1",
        "commission = null",
        "funded_at = now() - interval '1 day'",
        "closed_at = now()",
      ]
    ) {
      await assert.rejects(
        db.pool.query(`update public.deals set ${set} where id = $1`, [deal.id]),
        sqlState("PT409"),
        `set ${set}`,
      );
    }
    assert.deepEqual(await footprint(deal), before);

    const client = await db.pool.connect();
    try {
      await client.query("begin");
      // The permission of a transition is for its own deal and statement only.
      const other = await newDeal();
      await client.query("select set_config('marketplace.deal_transition', $1, true)", [
        other.id,
      ]);
      await rejectsWith(
        client,
        "PT409",
        "update public.deals set status = 'completed' where id = $1",
        [
          deal.id,
        ],
      );
      await transition(client, deal.id, "in_handover");
      await rejectsWith(
        client,
        "PT409",
        "update public.deals set status = 'completed' where id = $1",
        [
          deal.id,
        ],
      );
      await rejectsWith(client, "PT409", "update public.deals set commission = 0 where id = $1", [
        deal.id,
      ]);
    } finally {
      await client.query("rollback").catch(() => {});
      client.release();
    }

    // Other columns stay writable.
    await db.pool.query("update public.deals set payment_status = 'succeeded' where id = $1", [
      deal.id,
    ]);
    assert.equal((await dealRow(deal.id)).status, "funded");
  },
);

sqlTest(
  "a deal is created pending_payment without commission or stamps (PT409 otherwise)",
  async () => {
    const seller = await createUser(db.pool);
    const buyer = await createUser(db.pool);
    const listing = await createListing(db.pool, seller.id, "approved");
    const insert = (columns: string, values: string) =>
      db.pool.query(
        `insert into public.deals (listing_id, buyer_id, seller_id, amount, currency${columns})
       values ($1, $2, $3, 100, 'USD'${values})`,
        [listing.id, buyer.id, seller.id],
      );
    for (const status of STATES.filter((s) => s !== "pending_payment")) {
      await assert.rejects(insert(", status", `, '${status}'`), sqlState("PT409"), status);
    }
    await assert.rejects(insert(", commission", ", 10"), sqlState("PT409"));
    await assert.rejects(insert(", funded_at", ", now()"), sqlState("PT409"));
    await assert.rejects(insert(", closed_at", ", now()"), sqlState("PT409"));
    const { rows } = await db.pool.query(
      "select count(*)::int as n from public.deals where listing_id = $1",
      [listing.id],
    );
    assert.equal(rows[0].n, 0);
    await insert(", status", ", 'pending_payment'");
  },
);

// -----------------------------------------------------------------------------
// Who may move a deal
// -----------------------------------------------------------------------------

sqlTest("transition_deal() is not executable by clients (42501); service_role may", async () => {
  const deal = await newDeal();
  const admin = await createUser(db.pool, { admin: true });
  for (const who of [deal.buyer, deal.seller, admin]) {
    await asRole(db.pool, { role: "authenticated", userId: who.id }, async (c) => {
      await rejectsWith(
        c,
        "42501",
        "select * from public.transition_deal($1, 'funded', 'payment_succeeded')",
        [deal.id],
      );
      await rejectsWith(c, "42501", "select * from public.transition_deal($1, 'cancelled', 'x')", [
        deal.id,
      ]);
    });
  }
  await asRole(db.pool, { role: "anon" }, async (c) => {
    await rejectsWith(c, "42501", "select * from public.transition_deal($1, 'funded', 'x')", [
      deal.id,
    ]);
  });
  await asRole(db.pool, { role: "service_role" }, async (c) => {
    const { rows } = await c.query(
      "select status from public.transition_deal($1, 'funded', 'payment_succeeded')",
      [deal.id],
    );
    assert.deepEqual(rows, [{ status: "funded" }]);
  });
  assert.equal((await dealRow(deal.id)).status, "pending_payment");
  assert.equal((await eventsOf(deal.id)).length, 1);
});

sqlTest(
  "cancel_deal(): the buyer, the seller and admins while pending_payment; 42501 for a stranger; PT409 once funded",
  async () => {
    const deal = await newDeal();
    const stranger = await createUser(db.pool);
    const admin = await createUser(db.pool, { admin: true });

    // Each cancel is rolled back by asRole, so the next one starts pending again.
    for (const who of [deal.buyer, deal.seller, admin]) {
      await asRole(db.pool, { role: "authenticated", userId: who.id }, async (c) => {
        const { rows } = await c.query<DealRow>("select * from public.cancel_deal($1)", [deal.id]);
        assert.equal(rows[0]!.status, "cancelled");
        assert.ok(rows[0]!.closed_at instanceof Date);
        const events = await c.query(
          `select from_status, to_status, cause, actor_id from public.deal_events
           where deal_id = $1 order by id desc limit 1`,
          [deal.id],
        );
        assert.deepEqual(events.rows, [
          {
            from_status: "pending_payment",
            to_status: "cancelled",
            cause: "cancelled",
            actor_id: who.id,
          },
        ]);
      });
    }
    await asRole(db.pool, { role: "authenticated", userId: stranger.id }, async (c) => {
      await rejectsWith(c, "42501", "select public.cancel_deal($1)", [deal.id]);
    });
    await asRole(db.pool, { role: "anon" }, async (c) => {
      await rejectsWith(c, "42501", "select public.cancel_deal($1)", [deal.id]);
    });
    assert.equal((await dealRow(deal.id)).status, "pending_payment");

    // Committed by the seller: final, and a cancelled deal cannot be funded.
    await asRole(db.pool, { role: "authenticated", userId: deal.seller.id }, async (c) => {
      await c.query("select public.cancel_deal($1)", [deal.id]);
      await c.query("commit");
    });
    const cancelled = await dealRow(deal.id);
    assert.equal(cancelled.status, "cancelled");
    assert.ok(cancelled.closed_at instanceof Date);
    await assert.rejects(
      transition(db.pool, deal.id, "funded", "payment_succeeded", "pi_late"),
      sqlState("PT409"),
    );
    await asRole(db.pool, { role: "authenticated", userId: deal.buyer.id }, async (c) => {
      await rejectsWith(c, "PT409", "select public.cancel_deal($1)", [deal.id]);
    });
    assert.deepEqual(
      (await eventsOf(deal.id)).map((e) => [e.to_status, e.actor_id]),
      [["pending_payment", null], ["cancelled", deal.seller.id]],
    );

    // Once funded, nobody cancels: participants, admins and the service connection get PT409.
    const funded = await dealInState("funded");
    for (const who of [funded.buyer, funded.seller, admin]) {
      await asRole(db.pool, { role: "authenticated", userId: who.id }, async (c) => {
        await rejectsWith(c, "PT409", "select public.cancel_deal($1)", [funded.id]);
      });
    }
    await asRole(db.pool, { role: "authenticated", userId: stranger.id }, async (c) => {
      await rejectsWith(c, "42501", "select public.cancel_deal($1)", [funded.id]);
    });
    await assert.rejects(
      db.pool.query("select public.cancel_deal($1)", [funded.id]),
      sqlState("PT409"),
    );
    assert.equal((await dealRow(funded.id)).status, "funded");

    // The service connection cancels a pending deal, without an actor.
    const other = await newDeal();
    await db.pool.query("select public.cancel_deal($1)", [other.id]);
    assert.deepEqual(
      (await eventsOf(other.id)).map((e) => [e.to_status, e.actor_id]),
      [["pending_payment", null], ["cancelled", null]],
    );
  },
);

// -----------------------------------------------------------------------------
// Realtime
// -----------------------------------------------------------------------------

sqlTest(
  "realtime: a new deal and each status change are broadcast to the buyer and the seller; nobody else",
  async () => {
    const stranger = await createUser(db.pool);
    const deal = await newDeal();
    await transition(db.pool, deal.id, "funded", "payment_succeeded");
    // Neither a refused transition nor another column's change is broadcast.
    await assert.rejects(transition(db.pool, deal.id, "cancelled"), sqlState("PT409"));
    await db.pool.query("update public.deals set payment_status = 'succeeded' where id = $1", [
      deal.id,
    ]);
    await transition(db.pool, deal.id, "in_handover");
    await transition(db.pool, deal.id, "completed");

    for (const who of [deal.buyer, deal.seller]) {
      // (The seller's topic also carries their listing's review status changes.)
      const messages = (await messagesFor(db.pool, who.id)).filter((m) =>
        m.payload.table === "deals"
      );
      assert.deepEqual(
        messages.map((m) => [
          m.event,
          m.payload.old_record?.status ?? null,
          m.payload.record?.status ?? null,
        ]),
        [
          ["INSERT", null, "pending_payment"],
          ["UPDATE", "pending_payment", "funded"],
          ["UPDATE", "funded", "in_handover"],
          ["UPDATE", "in_handover", "completed"],
        ],
      );
      for (const m of messages) {
        assert.equal(m.topic, `user:${who.id}`);
        assert.equal(m.private, true);
        assert.equal(m.payload.schema, "public");
        assert.equal(m.payload.operation, m.event);
        assert.equal(m.payload.record?.id, deal.id);
      }
    }
    assert.deepEqual(await messagesFor(db.pool, stranger.id), []);
    const { rows } = await db.pool.query(
      `select count(*)::int as n from realtime.messages
       where payload -> 'record' ->> 'id' = $1 and topic not in ($2, $3)`,
      [deal.id, `user:${deal.buyer.id}`, `user:${deal.seller.id}`],
    );
    assert.equal(rows[0].n, 0, "the deal is broadcast to no other topic");

    // A stranger cannot join a participant's topic either.
    await asRole(db.pool, { role: "authenticated", userId: stranger.id }, async (c) => {
      await c.query("select set_config('realtime.topic', $1, true)", [`user:${deal.buyer.id}`]);
      const read = await c.query("select topic from realtime.messages");
      assert.deepEqual(read.rows, []);
    });
  },
);

// -----------------------------------------------------------------------------
// RLS on deal_events and deal_settlements
// -----------------------------------------------------------------------------

sqlTest(
  "deal_events and deal_settlements RLS: participants and admins read; strangers nothing; clients write nothing",
  async () => {
    const deal = await dealInState("completed");
    const admin = await createUser(db.pool, { admin: true });
    const stranger = await createUser(db.pool);
    await db.pool.query(
      `insert into public.deal_settlements (deal_id, kind, status, amount, currency,
         destination_account, payproc_id)
       values ($1, 'payout', 'succeeded', 1125, 'USD', 'acct_rls', 'tr_rls')`,
      [deal.id],
    );
    const { rows: settlementRows } = await db.pool.query<{ id: string }>(
      "select id from public.deal_settlements where deal_id = $1",
      [deal.id],
    );
    const settlement = settlementRows[0]!.id;
    const eventCount = (await eventsOf(deal.id)).length;
    assert.equal(eventCount, 3);

    for (const who of [deal.buyer, deal.seller, admin]) {
      await asRole(db.pool, { role: "authenticated", userId: who.id }, async (c) => {
        const events = await c.query(
          "select to_status from public.deal_events where deal_id = $1",
          [
            deal.id,
          ],
        );
        assert.equal(events.rows.length, eventCount);
        const settlements = await c.query(
          "select id, kind from public.deal_settlements where deal_id = $1",
          [deal.id],
        );
        assert.deepEqual(settlements.rows, [{ id: settlement, kind: "payout" }]);
      });
    }
    await asRole(db.pool, { role: "authenticated", userId: stranger.id }, async (c) => {
      const events = await c.query("select id from public.deal_events");
      assert.deepEqual(events.rows, []);
      const settlements = await c.query("select id from public.deal_settlements");
      assert.deepEqual(settlements.rows, []);
    });
    await asRole(db.pool, { role: "anon" }, async (c) => {
      await rejectsWith(c, "42501", "select id from public.deal_events");
      await rejectsWith(c, "42501", "select id from public.deal_settlements");
    });

    for (const who of [deal.buyer, deal.seller, admin, stranger]) {
      await asRole(db.pool, { role: "authenticated", userId: who.id }, async (c) => {
        await rejectsWith(
          c,
          "42501",
          `insert into public.deal_events (deal_id, from_status, to_status, cause)
           values ($1, 'completed', 'refunded', 'forged')`,
          [deal.id],
        );
        await rejectsWith(
          c,
          "42501",
          "update public.deal_events set cause = 'forged' where deal_id = $1",
          [
            deal.id,
          ],
        );
        await rejectsWith(c, "42501", "delete from public.deal_events where deal_id = $1", [
          deal.id,
        ]);
        await rejectsWith(
          c,
          "42501",
          `insert into public.deal_settlements (deal_id, kind, amount, currency)
           values ($1, 'refund', 1250, 'USD')`,
          [deal.id],
        );
        await rejectsWith(
          c,
          "42501",
          "update public.deal_settlements set destination_account = 'acct_evil' where id = $1",
          [settlement],
        );
        await rejectsWith(c, "42501", "delete from public.deal_settlements where id = $1", [
          settlement,
        ]);
      });
    }
    assert.equal((await eventsOf(deal.id)).length, eventCount);
    const { rows } = await db.pool.query(
      "select destination_account from public.deal_settlements where deal_id = $1",
      [deal.id],
    );
    assert.deepEqual(rows, [{ destination_account: "acct_rls" }]);
  },
);

// -----------------------------------------------------------------------------
// deal_settlements constraints
// -----------------------------------------------------------------------------

sqlTest(
  "deal_settlements: one payout and one refund per deal; reversed only for payouts; succeeded needs payproc_id; a payout needs a destination",
  async () => {
    const deal = await dealInState("completed");
    const insert = (fields: Record<string, string | null>) => {
      const row = { deal_id: deal.id, amount: "1125.00", currency: "USD", ...fields };
      const columns = Object.keys(row);
      return db.pool.query(
        `insert into public.deal_settlements (${columns.join(", ")})
         values (${columns.map((_, i) => `$${i + 1}`).join(", ")})`,
        Object.values(row),
      );
    };

    // A payout needs its destination; a refund does not.
    await assert.rejects(
      insert({ kind: "payout" }),
      violates("23514", "deal_settlements_payout_has_destination"),
    );
    // succeeded (and reversed) need the processor's id.
    await assert.rejects(
      insert({ kind: "payout", status: "succeeded", destination_account: "acct_1" }),
      violates("23514", "deal_settlements_succeeded_has_id"),
    );
    await assert.rejects(
      insert({ kind: "refund", status: "succeeded" }),
      violates("23514", "deal_settlements_succeeded_has_id"),
    );
    // reversed only for payouts.
    await assert.rejects(
      insert({ kind: "refund", status: "reversed", payproc_id: "re_rev" }),
      violates("23514", "deal_settlements_only_payouts_reverse"),
    );

    await insert({ kind: "payout", destination_account: "acct_1" });
    await assert.rejects(
      insert({ kind: "payout", destination_account: "acct_2" }),
      violates("23505", "deal_settlements_one_per_kind"),
    );
    await insert({ kind: "refund" });
    await assert.rejects(
      insert({ kind: "refund" }),
      violates("23505", "deal_settlements_one_per_kind"),
    );

    // The same rules hold for updates of the existing rows.
    const update = (kind: string, set: string) =>
      db.pool.query(
        `update public.deal_settlements set ${set} where deal_id = $1 and kind = $2`,
        [deal.id, kind],
      );
    await assert.rejects(
      update("payout", "status = 'succeeded'"),
      violates("23514", "deal_settlements_succeeded_has_id"),
    );
    await assert.rejects(
      update("payout", "destination_account = null"),
      violates("23514", "deal_settlements_payout_has_destination"),
    );
    await update("payout", "status = 'succeeded', payproc_id = 'tr_1'");
    await update("payout", "status = 'reversed', payproc_reversal_id = 'trr_1'");
    await update("refund", "status = 'succeeded', payproc_id = 're_1'");
    await assert.rejects(
      update("refund", "status = 'reversed'"),
      violates("23514", "deal_settlements_only_payouts_reverse"),
    );

    const { rows } = await db.pool.query(
      "select kind, status from public.deal_settlements where deal_id = $1 order by kind",
      [deal.id],
    );
    assert.deepEqual(rows, [
      { kind: "payout", status: "reversed" },
      { kind: "refund", status: "succeeded" },
    ]);
  },
);

// -----------------------------------------------------------------------------
// Concurrency
// -----------------------------------------------------------------------------

sqlTest(
  "10 concurrent transition_deal(…, 'funded') calls: exactly one succeeds, the others PT409, one funded event",
  async () => {
    const deal = await newDeal();
    const clients = await Promise.all(Array.from({ length: 10 }, () => db.pool.connect()));
    // Holds the deal's row lock so that all ten calls are waiting on it at once.
    const blocker = new pg.Client({ connectionString: db.url });
    const watcher = new pg.Client({ connectionString: db.url });
    await blocker.connect();
    await watcher.connect();
    // Settled as soon as it is made, so that no refusal is ever an unhandled rejection.
    let settled: Promise<PromiseSettledResult<pg.QueryResult<{ status: string }>>[]> = Promise
      .resolve([]);
    try {
      await blocker.query("begin");
      await blocker.query("select 1 from public.deals where id = $1 for update", [deal.id]);
      settled = Promise.allSettled(clients.map((c, i) =>
        c.query<{ status: string }>(
          "select status from public.transition_deal($1, 'funded', 'payment_succeeded', $2)",
          [deal.id, `pi_race_${i}`],
        )
      ));
      const deadline = Date.now() + 10_000;
      for (;;) {
        const { rows } = await watcher.query<{ n: number }>(
          `select count(*)::int as n from pg_stat_activity
           where datname = current_database() and wait_event_type = 'Lock'
             and query like '%public.transition_deal($1%'`,
        );
        if (rows[0]!.n === clients.length) break;
        assert.ok(Date.now() < deadline, `only ${rows[0]!.n} calls waiting on the deal's lock`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await blocker.query("commit");
    } finally {
      await blocker.query("rollback").catch(() => {});
      await settled;
      await blocker.end();
      await watcher.end();
      for (const c of clients) c.release();
    }
    // (The ten clients are back in the pool: the checks below need one.)
    const results = await settled;
    const fulfilled = results.flatMap((r, i) => r.status === "fulfilled" ? [{ i, r }] : []);
    const rejected = results.flatMap((r) => r.status === "rejected" ? [r.reason] : []);
    assert.equal(fulfilled.length, 1, "exactly one call succeeds");
    assert.deepEqual(fulfilled[0]!.r.value.rows, [{ status: "funded" }]);
    assert.equal(rejected.length, clients.length - 1);
    for (const reason of rejected) sqlState("PT409")(reason);

    const funded = (await eventsOf(deal.id)).filter((e) => e.to_status === "funded");
    assert.deepEqual(funded, [
      {
        from_status: "pending_payment",
        to_status: "funded",
        cause: "payment_succeeded",
        payproc_object_id: `pi_race_${fulfilled[0]!.i}`,
        actor_id: null,
      },
    ]);
    const row = await dealRow(deal.id);
    assert.equal(row.status, "funded");
    assert.equal(row.commission, "125.00");
  },
);
