/**
 * Letters of intent (the letters of intent migration): offers with terms,
 * counter-offers, accepting an LOI into due diligence, the listing held off
 * the market, and every move out of diligence — each allowed move, each
 * refused one, and the races between them.
 */
import assert from "node:assert/strict";
import { LISTING_UNDER_LOI, OFFER_MOVES, OFFER_STATUSES } from "../../shared/offer_terms.ts";
import { createTestDatabase, sqlTest } from "../support/db.ts";
import {
  accessBuyersOutOfSync,
  accessRequest,
  makeConfidential,
  queuedNotices,
  requestStatus,
} from "../support/listing_access.ts";
import {
  ageDiligence,
  counterOffer,
  dealEvents,
  dealOf,
  LOI_TERMS,
  makeLoiOffer,
  offerOf,
} from "../support/loi.ts";
import { messagesFor } from "../support/realtime.ts";
import {
  createUser,
  failureAs,
  raceCalls,
  settledCode,
  type SqlIdentity,
  type TestUser,
  valueAs,
} from "../support/sql.ts";
import { createListing, type TestListing } from "./core_fixtures.ts";

const db = await createTestDatabase();

const seller = await createUser(db.pool);
const buyer = await createUser(db.pool);
const rival = await createUser(db.pool);
const stranger = await createUser(db.pool);
const admin = await createUser(db.pool, { admin: true });

const SERVICE: SqlIdentity = { role: "service_role" };

/** A signed-in user's identity. */
function as(user: TestUser): SqlIdentity {
  return { role: "authenticated", userId: user.id };
}

/** Runs `sql` as `who` and commits; answers the first column of its first row. */
function callAs<T = unknown>(who: SqlIdentity, sql: string, params: unknown[] = []): Promise<T> {
  return valueAs<T>(db.pool, who, sql, params);
}

/** The error `sql` fails with as `who` (nothing is committed). */
function errorOf(who: SqlIdentity, sql: string, params: unknown[] = []) {
  return failureAs(db.pool, who, sql, params);
}

const COUNTER = "select public.counter_offer($1, $2, $3::jsonb, $4)";
const ACCEPT = "select public.accept_offer($1)";
const DECLINE = "select public.decline_offer($1)";
const WITHDRAW = "select public.withdraw_offer($1)";
const CONFIRM = "select (public.confirm_diligence($1)).status";
const WITHDRAW_DEAL = "select (public.withdraw_from_deal($1, $2)).status";
const EXTEND = "select (public.extend_exclusivity($1, $2)).exclusive_until";
const INSERT_OFFER = `insert into public.offers (listing_id, amount, currency, terms)
  values ($1, $2, 'USD', $3::jsonb) returning id`;

/** A new approved listing of the seller; confidential when `nda`. */
async function listing(nda = false): Promise<TestListing> {
  const made = await createListing(db.pool, seller.id, "approved");
  if (nda) await makeConfidential(db.pool, made.id);
  return made;
}

/** `who` counters `offerId` with `amount` and `terms`; answers the new version's id. */
function counter(
  who: TestUser,
  offerId: string,
  amount: string,
  terms: object | null = LOI_TERMS,
  message: string | null = null,
): Promise<string> {
  return counterOffer(db.pool, who, offerId, amount, terms, message);
}

/**
 * An LOI deal in due diligence on a new listing: buyer's offer, accepted by
 * the seller. `before` runs on the listing first (access requests made before
 * the accept: approved ones are suspended by it).
 */
async function diligenceDeal(nda = false, before?: (listingId: string) => Promise<void>) {
  const where = await listing(nda);
  if (nda) await accessRequest(db.pool, where.id, buyer.id, "approved");
  await before?.(where.id);
  const offerId = await makeLoiOffer(db.pool, buyer, where.id);
  const dealId = await callAs<string>(as(seller), ACCEPT, [offerId]);
  return { listingId: where.id, offerId, dealId };
}

async function count(sql: string, params: unknown[] = []): Promise<number> {
  const { rows } = await db.pool.query<{ n: number }>(`select (${sql})::int as n`, params);
  return rows[0]!.n;
}

// -----------------------------------------------------------------------------
// Terms on an offer
// -----------------------------------------------------------------------------

sqlTest("offers.terms: stored normalized, defaults filled; a plain offer has none", async () => {
  const where = await listing();
  const offerId = await makeLoiOffer(db.pool, buyer, where.id, "1000.00", {
    cash_at_close: "900.5",
    holdback_days: 30,
    conditions: ["  Domain transferred first \r\n", "Revenue verified"],
  });
  assert.deepEqual((await offerOf(db.pool, offerId)).terms, {
    cash_at_close: "900.50",
    holdback_days: 30,
    inspection_days: 7,
    exclusivity_days: 14,
    proposed_close_date: null,
    conditions: ["Domain transferred first", "Revenue verified"],
  });
  const plain = await callAs<string>(as(rival), INSERT_OFFER, [where.id, "800.00", null]);
  assert.equal((await offerOf(db.pool, plain)).terms, null);
  const offer = await offerOf(db.pool, offerId);
  assert.equal(offer.proposed_by, "buyer");
  assert.equal(offer.parent_offer_id, null);
});

sqlTest("offers.terms: broken terms are refused with 23514 and nothing is written", async () => {
  const where = await listing();
  const broken: Record<string, unknown>[] = [
    { cash_at_close: "1000.01" },
    { cash_at_close: 900 },
    { cash_at_close: "0" },
    { cash_at_close: "900.00" }, // a holdback without holdback_days
    { cash_at_close: "900.00", holdback_days: 61 },
    { holdback_days: 5 }, // holdback days without a holdback
    { inspection_days: 0 },
    { inspection_days: 31 },
    { inspection_days: 7.5 },
    { exclusivity_days: 46 },
    { exclusivity_days: -1 },
    { proposed_close_date: "2020-01-01" },
    { proposed_close_date: "2027-02-30" },
    { conditions: "one" },
    { conditions: Array.from({ length: 11 }, (_, i) => `Condition ${i}`) },
    { conditions: [""] },
    { conditions: ["x".repeat(501)] },
    { conditions: ["bell\u0007"] },
    { conditions: [42] },
    { surprise: true },
  ];
  for (const terms of broken) {
    const error = await errorOf(as(buyer), INSERT_OFFER, [
      where.id,
      "1000.00",
      JSON.stringify(terms),
    ]);
    assert.equal(error.code, "23514", `${JSON.stringify(terms)}: ${error.message}`);
  }
  assert.equal(
    await count("select count(*) from public.offers where listing_id = $1", [where.id]),
    0,
  );
});

// -----------------------------------------------------------------------------
// Counter-offers
// -----------------------------------------------------------------------------

sqlTest(
  "counter_offer(): the sides take turns; each version links to the one it counters, is immutable and read by both",
  async () => {
    const where = await listing();
    const v1 = await makeLoiOffer(db.pool, buyer, where.id, "1000.00");
    const v2 = await counter(seller, v1, "1200.00", { exclusivity_days: 10 }, "Closer to asking");
    assert.equal((await offerOf(db.pool, v1)).status, "countered");
    assert.ok((await offerOf(db.pool, v1)).decided_at instanceof Date);
    const second = await offerOf(db.pool, v2);
    assert.equal(second.status, "pending");
    assert.equal(second.parent_offer_id, v1);
    assert.equal(second.proposed_by, "seller");
    assert.equal(second.buyer_id, buyer.id);
    assert.equal(second.amount, "1200.00");
    assert.equal(second.message, "Closer to asking");
    assert.equal(second.terms?.exclusivity_days, 10);
    assert.deepEqual(await queuedNotices(db.pool, v2), [
      { kind: "offer_countered", user_id: buyer.id, status: "pending", due_at: second.created_at },
    ]);

    const v3 = await counter(buyer, v2, "1100.00", null);
    const third = await offerOf(db.pool, v3);
    assert.equal(third.proposed_by, "buyer");
    assert.equal(third.terms, null, "a counter may drop the terms: a plain offer");
    assert.equal((await queuedNotices(db.pool, v3))[0]?.user_id, seller.id);

    // Both sides read every version; strangers none.
    for (const who of [buyer, seller]) {
      assert.equal(
        await callAs<number>(
          as(who),
          "select count(*)::int from public.offers where id = any ($1::uuid[])",
          [[v1, v2, v3]],
        ),
        3,
      );
    }
    assert.equal(
      await callAs<number>(
        as(stranger),
        "select count(*)::int from public.offers where id = any ($1::uuid[])",
        [[v1, v2, v3]],
      ),
      0,
    );
    // No version changes, not even on the service connection.
    for (
      const change of [
        "amount = 1",
        "terms = '{}'::jsonb",
        "parent_offer_id = null",
        "proposed_by = 'buyer'",
        "message = 'edited'",
      ]
    ) {
      const error = await errorOf(SERVICE, `update public.offers set ${change} where id = $1`, [
        v2,
      ]);
      assert.equal(error.code, "PT409", change);
    }
  },
);

sqlTest(
  "offer versions: every move the table allows works for its side, and every other is refused and changes nothing",
  async () => {
    const actions = {
      accept: { sql: ACCEPT, to: "accepted", params: [] as unknown[] },
      decline: { sql: DECLINE, to: "declined", params: [] as unknown[] },
      counter: {
        sql: "select public.counter_offer($1, 1500, null)",
        to: "countered",
        params: [] as unknown[],
      },
      withdraw: { sql: WITHDRAW, to: "withdrawn", params: [] as unknown[] },
    } as const;
    let allowed = 0;
    let refused = 0;
    // A version written by each side; each action by each side.
    for (const author of ["buyer", "seller"] as const) {
      for (const [name, action] of Object.entries(actions)) {
        for (const side of ["buyer", "seller"] as const) {
          const where = await listing();
          const v1 = await makeLoiOffer(db.pool, buyer, where.id, "1000.00");
          const version = author === "buyer" ? v1 : await counter(seller, v1, "1300.00");
          const caller = side === "buyer" ? buyer : seller;
          const role = side === author ? "author" : "recipient";
          const legal = OFFER_MOVES.some((m) =>
            m.from === "pending" && m.to === action.to && m.by === role && m.rpc !== null
          );
          if (legal) {
            await callAs(as(caller), action.sql, [version]);
            assert.equal(
              (await offerOf(db.pool, version)).status,
              action.to,
              `${author}'s version: ${side} ${name}`,
            );
            allowed++;
          } else {
            const error = await errorOf(as(caller), action.sql, [version]);
            assert.equal(
              error.code,
              "42501",
              `${author}'s version: ${side} ${name}: ${error.message}`,
            );
            assert.equal((await offerOf(db.pool, version)).status, "pending");
            refused++;
          }
        }
      }
    }
    assert.equal(allowed, 8);
    assert.equal(refused, 8);

    // Every decided status refuses every action, with PT409, changing nothing.
    for (const from of OFFER_STATUSES.filter((s) => s !== "pending")) {
      const where = await listing();
      const v1 = await makeLoiOffer(db.pool, buyer, where.id, "1000.00", { exclusivity_days: 0 });
      if (from === "accepted") await callAs(as(seller), ACCEPT, [v1]);
      if (from === "declined") await callAs(as(seller), DECLINE, [v1]);
      if (from === "withdrawn") await callAs(as(buyer), WITHDRAW, [v1]);
      if (from === "countered") await counter(seller, v1, "1100.00");
      if (from === "expired") {
        await db.pool.query("update public.offers set status = 'expired' where id = $1", [v1]);
      }
      for (const [name, action] of Object.entries(actions)) {
        const caller = name === "withdraw" ? buyer : seller;
        const error = await errorOf(as(caller), action.sql, [v1]);
        assert.equal(error.code, "PT409", `${from}: ${name}: ${error.message}`);
        assert.equal((await offerOf(db.pool, v1)).status, from);
      }
      if (from === "countered") {
        const error = await errorOf(as(seller), ACCEPT, [v1]);
        assert.match(error.hint ?? "", /counter-offer is "[0-9a-f-]{36}"/);
      }
    }

    // Strangers learn nothing; admins read but do not negotiate; anon sessions change nothing.
    const where = await listing();
    const v1 = await makeLoiOffer(db.pool, buyer, where.id);
    for (const sql of [ACCEPT, DECLINE, WITHDRAW, "select public.counter_offer($1, 1, null)"]) {
      assert.equal((await errorOf(as(stranger), sql, [v1])).code, "PT404", sql);
      assert.equal((await errorOf(as(admin), sql, [v1])).code, "42501", sql);
      assert.equal((await errorOf({ role: "anon" }, sql, [v1])).code, "42501", sql);
      assert.equal((await errorOf(as(seller), sql, [crypto.randomUUID()])).code, "PT404", sql);
    }
    assert.equal((await offerOf(db.pool, v1)).status, "pending");
  },
);

sqlTest(
  "counter_offer(): bad arguments are refused and the countered version stays live",
  async () => {
    const where = await listing();
    const v1 = await makeLoiOffer(db.pool, buyer, where.id, "1000.00");
    const cases: Array<[unknown[], string]> = [
      [[v1, "1200.00", JSON.stringify({ inspection_days: 99 }), null], "23514"],
      [[v1, "1200.00", JSON.stringify({ cash_at_close: "1300.00" }), null], "23514"],
      [[v1, null, null, null], "22023"],
      [[v1, "0", null, null], "23514"],
      [[v1, "1200.00", null, "x".repeat(2001)], "22023"],
      [[v1, "1200.00", null, "bell\u0007"], "22023"],
    ];
    for (const [params, code] of cases) {
      const error = await errorOf(as(seller), COUNTER, params);
      assert.equal(error.code, code, `${JSON.stringify(params).slice(0, 80)}: ${error.message}`);
    }
    assert.equal((await offerOf(db.pool, v1)).status, "pending");
    assert.equal(
      await count("select count(*) from public.offers where parent_offer_id = $1", [v1]),
      0,
    );
  },
);

sqlTest(
  "counter_offer(): a chain holds at most 20 versions; counters per day are limited",
  async () => {
    const where = await listing();
    let live = await makeLoiOffer(db.pool, buyer, where.id, "1000.00");
    for (let version = 2; version <= 20; version++) {
      live = await counter(version % 2 === 0 ? seller : buyer, live, `${1000 + version}.00`, null);
    }
    const error = await errorOf(as(buyer), COUNTER, [live, "2000.00", null, null]);
    assert.equal(error.code, "PT409", error.message);
    assert.match(error.message, /20 versions/);
    assert.equal((await offerOf(db.pool, live)).status, "pending");

    await db.pool.query(
      "update public.client_limits set max_hits = 1 where name = 'offer_counter:per_day'",
    );
    try {
      const other = await listing();
      const first = await makeLoiOffer(db.pool, rival, other.id, "1000.00");
      // The seller has countered 10 times above: over a limit of 1 already.
      const limited = await errorOf(as(seller), COUNTER, [first, "1100.00", null, null]);
      assert.equal(limited.code, "PT429", limited.message);
      assert.equal((await offerOf(db.pool, first)).status, "pending", "nothing written");
      // Another seller's first counter of the day goes through; the second does not.
      const otherSeller = await createUser(db.pool);
      const theirs = [
        await makeLoiOffer(db.pool, rival, (await createListing(db.pool, otherSeller.id)).id),
        await makeLoiOffer(db.pool, rival, (await createListing(db.pool, otherSeller.id)).id),
      ];
      await counter(otherSeller, theirs[0]!, "1200.00", null);
      const second = await errorOf(as(otherSeller), COUNTER, [theirs[1], "1200.00", null, null]);
      assert.equal(second.code, "PT429");
    } finally {
      await db.pool.query(
        "update public.client_limits set max_hits = 50 where name = 'offer_counter:per_day'",
      );
    }
  },
);

// -----------------------------------------------------------------------------
// Accepting
// -----------------------------------------------------------------------------

sqlTest(
  "accept_offer() of an LOI: the deal starts in due diligence with the frozen terms and the window; the listing is off the market",
  async () => {
    const where = await listing(true);
    await accessRequest(db.pool, where.id, buyer.id, "approved");
    const rivalAccess = await accessRequest(db.pool, where.id, rival.id, "approved");
    const strangerPending = await accessRequest(db.pool, where.id, stranger.id, "pending");
    const rivalOffer = await makeLoiOffer(db.pool, rival, where.id, "900.00", null);
    const offerId = await makeLoiOffer(db.pool, buyer, where.id, "1000.00");

    const before = Date.now();
    const dealId = await callAs<string>(as(seller), ACCEPT, [offerId]);
    const deal = await dealOf(db.pool, dealId);
    assert.equal(deal.status, "in_diligence");
    assert.deepEqual(deal.terms, (await offerOf(db.pool, offerId)).terms);
    const window = deal.exclusive_until!.getTime() - before;
    assert.ok(Math.abs(window - 14 * 86_400_000) < 60_000, `14 days, not ${window} ms`);
    assert.deepEqual(
      (await dealEvents(db.pool, dealId)).map((e) => [e.from_status, e.to_status, e.cause]),
      [[null, "in_diligence", "offer_accepted"]],
    );
    const accepted = await offerOf(db.pool, offerId);
    assert.equal(accepted.status, "accepted");
    assert.equal(accepted.deal_id, dealId);
    const declined = await offerOf(db.pool, rivalOffer);
    assert.equal(declined.status, "declined");
    assert.equal(declined.decline_reason, LISTING_UNDER_LOI);

    // Access: the rival's is suspended (fields hidden again); the LOI buyer's stays.
    assert.equal(await requestStatus(db.pool, rivalAccess), "suspended");
    assert.equal(await requestStatus(db.pool, strangerPending), "pending");
    assert.deepEqual(
      (await db.pool.query("select access_buyers from public.listings where id = $1", [where.id]))
        .rows[0].access_buyers,
      [buyer.id],
    );
    for (const [who, access] of [[rival, false], [buyer, true]] as const) {
      assert.equal(
        await callAs(SERVICE, "select public.has_listing_access($1, $2)", [where.id, who.id]),
        access,
      );
    }

    // Told: the author of the accepted version; both reminded 48 hours before the end.
    assert.deepEqual(
      (await queuedNotices(db.pool, offerId)).map((n) => [n.kind, n.user_id]),
      [["offer_accepted", buyer.id]],
    );
    const reminders = await queuedNotices(db.pool, dealId);
    assert.deepEqual(
      reminders.map((n) => [n.kind, n.user_id]).sort(),
      [["deal_exclusivity_ending", buyer.id], ["deal_exclusivity_ending", seller.id]].sort(),
    );
    for (const reminder of reminders) {
      assert.equal(
        reminder.due_at.getTime(),
        deal.exclusive_until!.getTime() - 48 * 3_600_000,
      );
    }
    assert.equal(
      await callAs({ role: "anon" }, "select public.listing_under_loi($1)", [where.id]),
      true,
    );
  },
);

sqlTest(
  "accept_offer(): a plain offer, or terms without exclusivity, goes straight to pending_payment",
  async () => {
    const plainListing = await listing();
    const rivalOffer = await makeLoiOffer(db.pool, rival, plainListing.id, "900.00", null);
    const plain = await makeLoiOffer(db.pool, buyer, plainListing.id, "1000.00", null);
    const plainDeal = await dealOf(db.pool, await callAs<string>(as(seller), ACCEPT, [plain]));
    assert.equal(plainDeal.status, "pending_payment");
    assert.equal(plainDeal.terms, null);
    assert.equal(plainDeal.exclusive_until, null);
    assert.equal((await offerOf(db.pool, rivalOffer)).decline_reason, "another_offer_accepted");
    assert.equal(
      await callAs({ role: "anon" }, "select public.listing_under_loi($1)", [plainListing.id]),
      false,
    );

    const noWindow = await listing();
    const offerId = await makeLoiOffer(db.pool, buyer, noWindow.id, "1000.00", {
      exclusivity_days: 0,
      inspection_days: 3,
    });
    const deal = await dealOf(db.pool, await callAs<string>(as(seller), ACCEPT, [offerId]));
    assert.equal(deal.status, "pending_payment");
    assert.equal(deal.terms?.inspection_days, 3);
    assert.equal(deal.exclusive_until, null);
    assert.deepEqual(await queuedNotices(db.pool, deal.id), [], "no window, no reminder");
  },
);

sqlTest(
  "accept_offer(): the buyer accepts the seller's counter-offer; the seller is told",
  async () => {
    const where = await listing();
    const v1 = await makeLoiOffer(db.pool, buyer, where.id, "1000.00");
    const v2 = await counter(seller, v1, "1150.00", { ...LOI_TERMS, exclusivity_days: 7 });
    assert.equal((await errorOf(as(seller), ACCEPT, [v2])).code, "42501", "not one's own version");
    assert.equal((await errorOf(as(seller), ACCEPT, [v1])).code, "PT409", "not an older version");
    const dealId = await callAs<string>(as(buyer), ACCEPT, [v2]);
    const deal = await dealOf(db.pool, dealId);
    assert.equal(deal.status, "in_diligence");
    assert.equal(deal.amount, "1150.00");
    assert.equal(deal.offer_id, v2);
    assert.deepEqual(
      (await queuedNotices(db.pool, v2)).map((n) => [n.kind, n.user_id]),
      [["offer_countered", buyer.id], ["offer_accepted", seller.id]],
    );
  },
);

// -----------------------------------------------------------------------------
// Exclusivity
// -----------------------------------------------------------------------------

sqlTest(
  "exclusivity: a listing under an LOI refuses new offers, access requests and approvals with 42501 listing_under_loi",
  async () => {
    let pendingRequest = "";
    let suspended = "";
    const { listingId, dealId } = await diligenceDeal(true, async (id) => {
      pendingRequest = await accessRequest(db.pool, id, rival.id, "pending");
      suspended = await accessRequest(db.pool, id, stranger.id, "approved");
    });
    assert.equal(await requestStatus(db.pool, suspended), "suspended");

    const offerError = await errorOf(as(rival), INSERT_OFFER, [listingId, "2000.00", null]);
    assert.equal(offerError.code, "42501", offerError.message);
    assert.equal(offerError.hint, LISTING_UNDER_LOI);
    const serviceOffer = await failureAs(
      db.pool,
      SERVICE,
      "insert into public.offers (listing_id, buyer_id, amount, currency) values ($1, $2, 5, 'USD')",
      [listingId, rival.id],
    );
    assert.equal(serviceOffer.hint, LISTING_UNDER_LOI);

    const newcomer = await createUser(db.pool);
    const requestError = await errorOf(
      as(newcomer),
      "select public.request_listing_access($1, '1')",
      [listingId],
    );
    assert.equal(requestError.code, "42501", requestError.message);
    assert.equal(requestError.hint, LISTING_UNDER_LOI);
    const suspendedAsks = await errorOf(
      as(stranger),
      "select public.request_listing_access($1, '1')",
      [listingId],
    );
    assert.equal(suspendedAsks.hint, LISTING_UNDER_LOI);

    const approve = await errorOf(
      as(seller),
      "select public.decide_listing_access($1, true)",
      [pendingRequest],
    );
    assert.equal(approve.code, "42501", approve.message);
    assert.equal(approve.hint, LISTING_UNDER_LOI);
    assert.equal(await requestStatus(db.pool, pendingRequest), "pending");
    // Declining is still the seller's to do; revoking a suspended access too.
    await callAs(as(seller), "select public.decide_listing_access($1, false)", [pendingRequest]);
    await callAs(as(seller), "select public.revoke_listing_access($1)", [suspended]);
    assert.equal(await requestStatus(db.pool, suspended), "revoked");
    assert.equal(
      await count(
        "select count(*) from public.offers where listing_id = $1 and status = 'pending'",
        [listingId],
      ),
      0,
    );
    // The data room's conversation stays open for the LOI buyer.
    const conversation = await callAs<string>(
      as(buyer),
      "select public.start_conversation($1)",
      [listingId],
    );
    await callAs(as(buyer), "select public.send_message($1, 'Sharing the P&L')", [conversation]);
    await callAs(as(seller), "select public.send_message($1, 'Thanks')", [conversation]);
    assert.equal((await dealOf(db.pool, dealId)).status, "in_diligence");
  },
);

sqlTest(
  "exclusivity: when the deal is cancelled the listing reopens and suspended access is approved again",
  async () => {
    let rivalAccess = "";
    const { listingId, dealId } = await diligenceDeal(true, async (id) => {
      rivalAccess = await accessRequest(db.pool, id, rival.id, "approved");
    });
    assert.equal(await requestStatus(db.pool, rivalAccess), "suspended");
    const before = await db.pool.query(
      "select decided_at, decided_by from public.listing_access_requests where id = $1",
      [rivalAccess],
    );
    await callAs(as(seller), WITHDRAW_DEAL, [dealId, "We could not agree on the earn-out"]);
    assert.equal(await requestStatus(db.pool, rivalAccess), "approved");
    const after = await db.pool.query(
      "select decided_at, decided_by from public.listing_access_requests where id = $1",
      [rivalAccess],
    );
    assert.deepEqual(after.rows, before.rows, "the seller's decision stands as it was");
    assert.deepEqual(await accessBuyersOutOfSync(db.pool), []);
    assert.equal(
      await callAs(SERVICE, "select public.has_listing_access($1, $2)", [listingId, rival.id]),
      true,
    );
    assert.equal(await callAs(SERVICE, "select public.listing_under_loi($1)", [listingId]), false);
    assert.equal(
      await callAs(SERVICE, "select public.listing_open_for_offers($1)", [listingId]),
      true,
    );
    // The rival offers again.
    const again = await callAs<string>(as(rival), INSERT_OFFER, [listingId, "1500.00", null]);
    assert.equal((await offerOf(db.pool, again)).status, "pending");
  },
);

sqlTest(
  "exclusivity: after the buyer confirms, suspended access stays suspended until the deal ends without the sale",
  async () => {
    const where = await listing(true);
    await accessRequest(db.pool, where.id, buyer.id, "approved");
    const rivalAccess = await accessRequest(db.pool, where.id, rival.id, "approved");
    const offerId = await makeLoiOffer(db.pool, buyer, where.id);
    const dealId = await callAs<string>(as(seller), ACCEPT, [offerId]);
    await callAs(as(buyer), CONFIRM, [dealId]);
    assert.equal(await requestStatus(db.pool, rivalAccess), "suspended");
    const asks = await errorOf(as(rival), "select public.request_listing_access($1, '1')", [
      where.id,
    ]);
    assert.equal(asks.code, "PT409", asks.message);
    assert.match(asks.message, /suspended/);
    await callAs(as(buyer), "select (public.cancel_deal($1)).status", [dealId]);
    assert.equal(await requestStatus(db.pool, rivalAccess), "approved");
  },
);

// -----------------------------------------------------------------------------
// Leaving diligence
// -----------------------------------------------------------------------------

sqlTest(
  "confirm_diligence(): the buyer proceeds to payment; everyone else, and every other state, is refused",
  async () => {
    const { dealId } = await diligenceDeal();
    assert.equal((await errorOf(as(seller), CONFIRM, [dealId])).code, "42501");
    assert.equal((await errorOf(as(admin), CONFIRM, [dealId])).code, "42501");
    assert.equal((await errorOf(as(stranger), CONFIRM, [dealId])).code, "PT404");
    assert.equal((await errorOf({ role: "anon" }, CONFIRM, [dealId])).code, "42501");
    assert.equal((await errorOf(as(buyer), CONFIRM, [crypto.randomUUID()])).code, "PT404");
    assert.equal((await dealOf(db.pool, dealId)).status, "in_diligence");

    assert.equal(await callAs(as(buyer), CONFIRM, [dealId]), "pending_payment");
    const events = await dealEvents(db.pool, dealId);
    assert.deepEqual(events.at(-1), {
      from_status: "in_diligence",
      to_status: "pending_payment",
      cause: "diligence_confirmed",
      actor_id: buyer.id,
      detail: {},
    });
    assert.deepEqual(
      (await queuedNotices(db.pool, dealId)).filter((n) => n.kind === "deal_diligence_confirmed")
        .map((n) => n.user_id),
      [seller.id],
    );
    const again = await errorOf(as(buyer), CONFIRM, [dealId]);
    assert.equal(again.code, "PT409");
    assert.equal(again.hint, "cancel-deal");
    const withdraw = await errorOf(as(buyer), WITHDRAW_DEAL, [dealId, "Changed my mind"]);
    assert.equal(withdraw.code, "PT409");
    assert.equal(withdraw.hint, "cancel-deal");
    const extend = await errorOf(as(seller), EXTEND, [dealId, 3]);
    assert.equal(extend.code, "PT409");

    // A plain deal never was in diligence.
    const plain = await listing();
    const plainDeal = await callAs<string>(as(seller), ACCEPT, [
      await makeLoiOffer(db.pool, buyer, plain.id, "1000.00", null),
    ]);
    assert.equal((await errorOf(as(buyer), CONFIRM, [plainDeal])).code, "PT409");
  },
);

sqlTest(
  "withdraw_from_deal(): either side walks away with a reason; the other side is told",
  async () => {
    for (const side of [buyer, seller]) {
      const { dealId, listingId } = await diligenceDeal();
      assert.equal((await errorOf(as(stranger), WITHDRAW_DEAL, [dealId, "x"])).code, "PT404");
      assert.equal((await errorOf(as(admin), WITHDRAW_DEAL, [dealId, "x"])).code, "42501");
      for (const reason of [null, "   ", "x".repeat(501)]) {
        assert.equal((await errorOf(as(side), WITHDRAW_DEAL, [dealId, reason])).code, "22023");
      }
      assert.equal(
        await callAs(as(side), WITHDRAW_DEAL, [dealId, " Numbers did not hold \n"]),
        "cancelled",
      );
      const by = side === buyer ? "buyer" : "seller";
      assert.deepEqual((await dealEvents(db.pool, dealId)).at(-1), {
        from_status: "in_diligence",
        to_status: "cancelled",
        cause: "withdrawn",
        actor_id: side.id,
        detail: { reason: "Numbers did not hold", by },
      });
      assert.deepEqual(
        (await queuedNotices(db.pool, dealId)).filter((n) => n.kind === "deal_withdrawn")
          .map((n) => n.user_id),
        [side === buyer ? seller.id : buyer.id],
      );
      assert.ok((await dealOf(db.pool, dealId)).closed_at instanceof Date);
      assert.equal(
        await callAs(SERVICE, "select public.listing_open_for_offers($1)", [listingId]),
        true,
      );
      assert.equal((await errorOf(as(side), WITHDRAW_DEAL, [dealId, "again"])).code, "PT409");
      assert.equal((await errorOf(as(buyer), CONFIRM, [dealId])).code, "PT409");
    }
  },
);

sqlTest(
  "extend_exclusivity(): the seller extends within 45 days of acceptance; the reminder moves; the buyer is told",
  async () => {
    const { dealId } = await diligenceDeal();
    const start = (await dealOf(db.pool, dealId)).exclusive_until!;
    assert.equal((await errorOf(as(buyer), EXTEND, [dealId, 3])).code, "42501");
    assert.equal((await errorOf(as(stranger), EXTEND, [dealId, 3])).code, "PT404");
    for (const days of [0, -1, 46, null]) {
      assert.equal((await errorOf(as(seller), EXTEND, [dealId, days])).code, "22023", `${days}`);
    }
    const until = await callAs<Date>(as(seller), EXTEND, [dealId, 10]);
    assert.equal(until.getTime(), start.getTime() + 10 * 86_400_000);
    const event = (await dealEvents(db.pool, dealId)).at(-1)!;
    assert.equal(event.cause, "exclusivity_extended");
    assert.equal(event.from_status, "in_diligence");
    assert.equal(event.to_status, "in_diligence");
    assert.equal(event.actor_id, seller.id);
    assert.equal(event.detail.days, 10);
    const reminders = (await queuedNotices(db.pool, dealId)).filter((n) =>
      n.kind === "deal_exclusivity_ending"
    );
    assert.equal(reminders.length, 2, "moved, not doubled");
    for (const reminder of reminders) {
      assert.equal(reminder.due_at.getTime(), until.getTime() - 48 * 3_600_000);
    }
    assert.deepEqual(
      (await queuedNotices(db.pool, dealId)).filter((n) => n.kind === "deal_exclusivity_extended")
        .map((n) => n.user_id),
      [buyer.id],
    );
    // 14 + 10 = 24 days: 21 more at most.
    const over = await errorOf(as(seller), EXTEND, [dealId, 22]);
    assert.equal(over.code, "22023");
    assert.match(over.message, /21 more at most/);
    await callAs(as(seller), EXTEND, [dealId, 21]);
    assert.equal((await errorOf(as(seller), EXTEND, [dealId, 1])).code, "22023");
    // Pushed to both participants.
    for (const who of [buyer, seller]) {
      const pushes = (await messagesFor(db.pool, who.id)).filter((m) =>
        m.payload.table === "deals" && m.payload.record?.id === dealId
      );
      assert.ok(pushes.length >= 3, `${who.email}: the creation and two extensions`);
    }
    // Nobody moves the window earlier, even on the service connection.
    const earlier = await errorOf(
      SERVICE,
      "update public.deals set exclusive_until = exclusive_until - interval '1 day' where id = $1",
      [dealId],
    );
    assert.equal(earlier.code, "PT409");
    const terms = await errorOf(SERVICE, "update public.deals set terms = '{}' where id = $1", [
      dealId,
    ]);
    assert.equal(terms.code, "PT409");
  },
);

sqlTest(
  "the window's end: past exclusive_until confirm and extend are refused; the lapse cancels once and reopens the listing",
  async () => {
    let rivalAccess = "";
    const { dealId, listingId } = await diligenceDeal(true, async (id) => {
      rivalAccess = await accessRequest(db.pool, id, rival.id, "approved");
    });
    assert.equal(
      await callAs(SERVICE, "select public.lapse_deal_exclusivity($1)", [dealId]),
      false,
    );
    await ageDiligence(db.pool, dealId);
    assert.equal((await errorOf(as(buyer), CONFIRM, [dealId])).code, "PT409");
    assert.equal((await errorOf(as(seller), EXTEND, [dealId, 2])).code, "PT409");
    assert.equal((await dealOf(db.pool, dealId)).status, "in_diligence");

    const results = await raceCalls(
      db.url,
      Array.from({ length: 5 }, () => ({
        who: SERVICE,
        sql: "select public.lapse_deal_exclusivity($1) as lapsed",
        params: [dealId],
      })),
    );
    const lapsed = results.map((r) => r.status === "fulfilled" && r.value[0]?.lapsed === true);
    assert.equal(lapsed.filter(Boolean).length, 1, "exactly one call lapses it");
    assert.ok(results.every((r) => r.status === "fulfilled"));
    assert.deepEqual(
      (await dealEvents(db.pool, dealId)).filter((e) => e.to_status === "cancelled")
        .map((e) => [e.cause, e.actor_id]),
      [["exclusivity_lapsed", null]],
    );
    assert.deepEqual(
      (await queuedNotices(db.pool, dealId)).filter((n) => n.kind === "deal_exclusivity_lapsed")
        .map((n) => n.user_id).sort(),
      [buyer.id, seller.id].sort(),
    );
    assert.equal(await requestStatus(db.pool, rivalAccess), "approved");
    assert.equal(await callAs(SERVICE, "select public.listing_under_loi($1)", [listingId]), false);
  },
);

// -----------------------------------------------------------------------------
// Races
// -----------------------------------------------------------------------------

sqlTest("races: five accepts of one chain's live version make one deal", async () => {
  const where = await listing();
  const v1 = await makeLoiOffer(db.pool, buyer, where.id);
  const v2 = await counter(seller, v1, "1250.00");
  const results = await raceCalls(db.url, [
    ...Array.from({ length: 4 }, () => ({ who: as(buyer), sql: ACCEPT, params: [v2] })),
    { who: as(seller), sql: ACCEPT, params: [v1] },
  ]);
  assert.equal(results.filter((r) => r.status === "fulfilled").length, 1);
  assert.deepEqual(
    results.filter((r) => r.status === "rejected").map(settledCode),
    ["PT409", "PT409", "PT409", "PT409"],
  );
  assert.equal(
    await count("select count(*) from public.deals where listing_id = $1", [where.id]),
    1,
  );
  assert.equal((await offerOf(db.pool, v2)).status, "accepted");
});

sqlTest(
  "races: an accept racing a counter of the same version — one wins, the other changes nothing",
  async () => {
    const outcomes = new Set<string>();
    for (let round = 0; round < 4; round++) {
      const where = await listing();
      const v1 = await makeLoiOffer(db.pool, buyer, where.id);
      const results = await raceCalls(db.url, [
        { who: as(seller), sql: ACCEPT, params: [v1] },
        { who: as(seller), sql: "select public.counter_offer($1, 1400, null)", params: [v1] },
      ]);
      assert.equal(results.filter((r) => r.status === "fulfilled").length, 1, `round ${round}`);
      assert.deepEqual(results.filter((r) => r.status === "rejected").map(settledCode), ["PT409"]);
      const status = (await offerOf(db.pool, v1)).status;
      const deals = await count("select count(*) from public.deals where listing_id = $1", [
        where.id,
      ]);
      const versions = await count("select count(*) from public.offers where listing_id = $1", [
        where.id,
      ]);
      if (status === "accepted") assert.deepEqual([deals, versions], [1, 1]);
      else assert.deepEqual([status, deals, versions], ["countered", 0, 2]);
      outcomes.add(status);
    }
    assert.ok(outcomes.size >= 1);
  },
);

sqlTest("races: a withdrawal racing confirm_diligence — one move, the other refused", async () => {
  for (let round = 0; round < 4; round++) {
    const { dealId } = await diligenceDeal(true);
    const results = await raceCalls(db.url, [
      { who: as(buyer), sql: CONFIRM, params: [dealId] },
      { who: as(seller), sql: WITHDRAW_DEAL, params: [dealId, "Another buyer"] },
    ]);
    assert.equal(results.filter((r) => r.status === "fulfilled").length, 1, `round ${round}`);
    assert.deepEqual(results.filter((r) => r.status === "rejected").map(settledCode), ["PT409"]);
    const deal = await dealOf(db.pool, dealId);
    const moves = (await dealEvents(db.pool, dealId)).filter((e) =>
      e.from_status === "in_diligence"
    );
    assert.equal(moves.length, 1);
    assert.equal(moves[0]!.to_status, deal.status);
  }
});

sqlTest(
  "races: a new offer racing the LOI's accept is refused (listing_under_loi) or declined by it",
  async () => {
    for (let round = 0; round < 3; round++) {
      const where = await listing();
      const v1 = await makeLoiOffer(db.pool, buyer, where.id);
      const results = await raceCalls(db.url, [
        { who: as(seller), sql: ACCEPT, params: [v1] },
        { who: as(rival), sql: INSERT_OFFER, params: [where.id, "3000.00", null] },
      ]);
      assert.equal(results[0]!.status, "fulfilled");
      const late = results[1]!;
      if (late.status === "rejected") {
        assert.equal(settledCode(late), "42501");
        assert.equal((late.reason as { hint?: string }).hint, LISTING_UNDER_LOI);
      } else {
        const id = String(late.value[0]!.id);
        const offer = await offerOf(db.pool, id);
        assert.deepEqual([offer.status, offer.decline_reason], ["declined", LISTING_UNDER_LOI]);
      }
      assert.equal(
        await count(
          "select count(*) from public.offers where listing_id = $1 and status = 'pending'",
          [where.id],
        ),
        0,
      );
    }
  },
);

sqlTest(
  "the data room: during due diligence the seller drafts the handover checklist",
  async () => {
    const { dealId } = await diligenceDeal();
    const step = await callAs<string>(
      as(seller),
      "select (public.add_handover_step($1, 'Newsletter list (12k subscribers)')).id",
      [dealId],
    );
    assert.ok(step);
    assert.equal(
      (await errorOf(as(buyer), "select public.add_handover_step($1, 'Mine')", [dealId])).code,
      "42501",
    );
    await callAs(as(buyer), WITHDRAW_DEAL, [dealId, "Not for us"]);
    const closed = await errorOf(as(seller), "select public.add_handover_step($1, 'Late')", [
      dealId,
    ]);
    assert.equal(closed.code, "PT409");
  },
);

sqlTest(
  "races: two counters of one version, or a counter racing its author's withdrawal — one move",
  async () => {
    for (let round = 0; round < 3; round++) {
      const where = await listing();
      const v1 = await makeLoiOffer(db.pool, buyer, where.id);
      const counters = await raceCalls(db.url, [
        { who: as(seller), sql: COUNTER, params: [v1, "1300.00", null, null] },
        { who: as(seller), sql: COUNTER, params: [v1, "1400.00", null, null] },
      ]);
      assert.equal(counters.filter((r) => r.status === "fulfilled").length, 1, `round ${round}`);
      assert.deepEqual(counters.filter((r) => r.status === "rejected").map(settledCode), ["PT409"]);
      assert.equal(
        await count("select count(*) from public.offers where parent_offer_id = $1", [v1]),
        1,
      );

      const other = await listing();
      const first = await makeLoiOffer(db.pool, buyer, other.id);
      const moves = await raceCalls(db.url, [
        { who: as(seller), sql: COUNTER, params: [first, "1300.00", null, null] },
        { who: as(buyer), sql: WITHDRAW, params: [first] },
      ]);
      assert.equal(moves.filter((r) => r.status === "fulfilled").length, 1, `round ${round}`);
      assert.deepEqual(moves.filter((r) => r.status === "rejected").map(settledCode), ["PT409"]);
      const status = (await offerOf(db.pool, first)).status;
      const versions = await count("select count(*) from public.offers where listing_id = $1", [
        other.id,
      ]);
      assert.deepEqual(
        [status, versions],
        status === "countered" ? ["countered", 2] : ["withdrawn", 1],
      );
    }
  },
);

sqlTest(
  "races: the seller approving another buyer's access while accepting an LOI — that access never stays approved",
  async () => {
    for (let round = 0; round < 3; round++) {
      const where = await listing(true);
      await accessRequest(db.pool, where.id, buyer.id, "approved");
      const pending = await accessRequest(db.pool, where.id, rival.id, "pending");
      const offerId = await makeLoiOffer(db.pool, buyer, where.id);
      const results = await raceCalls(db.url, [
        { who: as(seller), sql: ACCEPT, params: [offerId] },
        {
          who: as(seller),
          sql: "select public.decide_listing_access($1, true)",
          params: [pending],
        },
      ]);
      assert.equal(results[0]!.status, "fulfilled");
      const status = await requestStatus(db.pool, pending);
      if (results[1]!.status === "fulfilled") {
        assert.equal(status, "suspended", "approved first, then suspended by the accept");
      } else {
        assert.equal(settledCode(results[1]!), "42501");
        assert.equal((results[1]!.reason as { hint?: string }).hint, LISTING_UNDER_LOI);
        assert.equal(status, "pending");
      }
      assert.equal(
        await callAs(SERVICE, "select public.has_listing_access($1, $2)", [where.id, rival.id]),
        false,
      );
      assert.deepEqual(await accessBuyersOutOfSync(db.pool), []);
    }
  },
);

sqlTest(
  "races: an extension racing the lapse of an overdue window — never extended; lapsed, or left for the next run",
  async () => {
    const { dealId } = await diligenceDeal();
    await ageDiligence(db.pool, dealId);
    const results = await raceCalls(db.url, [
      { who: as(seller), sql: EXTEND, params: [dealId, 5] },
      { who: SERVICE, sql: "select public.lapse_deal_exclusivity($1) as lapsed", params: [dealId] },
    ]);
    assert.equal(settledCode(results[0]!), "PT409", "an ended window is not extended");
    const deal = await dealOf(db.pool, dealId);
    assert.equal(
      deal.status,
      results[1]!.status === "fulfilled" && results[1]!.value[0]?.lapsed
        ? "cancelled"
        : "in_diligence",
    );
    assert.equal(
      await count(
        "select count(*) from public.deal_events where deal_id = $1 and cause = 'exclusivity_extended'",
        [dealId],
      ),
      0,
    );
  },
);
