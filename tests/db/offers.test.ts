import assert from "node:assert/strict";
import pg from "pg";
import { createTestDatabase, sqlTest } from "../support/db.ts";
import { asRole, createUser, type SqlIdentity, type TestUser } from "../support/sql.ts";
import { createListing, rejectsWith, type ReviewStatus, sqlState } from "./core_fixtures.ts";

const db = await createTestDatabase();

const seller = await createUser(db.pool);
const buyer = await createUser(db.pool);
const rival = await createUser(db.pool);
const stranger = await createUser(db.pool);
const admin = await createUser(db.pool, { admin: true });

/** Who calls: a signed-in user, or the service connection (role service_role). */
type Caller = TestUser | "service";

function identityOf(who: Caller): SqlIdentity {
  return who === "service" ? { role: "service_role" } : { role: "authenticated", userId: who.id };
}

const INSERT_OFFER = `insert into public.offers (listing_id, amount, currency, message)
  values ($1, $2, $3, $4) returning *`;

interface OfferRow {
  id: string;
  listing_id: string;
  buyer_id: string;
  amount: string;
  currency: string;
  message: string | null;
  status: string;
  expires_at: Date;
  deal_id: string | null;
  decided_at: Date | null;
}

/** `who` makes an offer through RLS, as supabase-js would, and commits it. */
async function makeOffer(
  who: TestUser,
  listingId: string,
  amount = "30000.00",
  currency = "USD",
): Promise<OfferRow> {
  return await asRole(db.pool, identityOf(who), async (c) => {
    const { rows } = await c.query<OfferRow>(INSERT_OFFER, [listingId, amount, currency, "Hi"]);
    await c.query("commit");
    return rows[0]!;
  });
}

/** Calls one of the offer functions as `who` and commits; returns its result as text. */
async function callAs(
  who: Caller,
  fn: "accept_offer" | "decline_offer" | "withdraw_offer",
  offerId: string,
  pool: pg.Pool = db.pool,
): Promise<string> {
  return await asRole(pool, identityOf(who), async (c) => {
    const { rows } = await c.query<{ result: string }>(
      `select public.${fn}($1)::text as result`,
      [offerId],
    );
    await c.query("commit");
    return rows[0]!.result;
  });
}

async function offer(id: string): Promise<OfferRow> {
  const { rows } = await db.pool.query<OfferRow>("select * from public.offers where id = $1", [id]);
  return rows[0]!;
}

async function dealsOn(listingId: string): Promise<Record<string, unknown>[]> {
  const { rows } = await db.pool.query(
    `select id, buyer_id, seller_id, amount, currency, status, offer_id
     from public.deals where listing_id = $1 order by created_at`,
    [listingId],
  );
  return rows;
}

/** Makes the offer lapse: its expiry is moved into the past (as the service connection). */
async function lapse(offerId: string): Promise<void> {
  await db.pool.query(
    "update public.offers set expires_at = now() - interval '1 minute' where id = $1",
    [offerId],
  );
}

/** Inserts a deal on the listing directly, as the service connection does. */
async function createDirectDeal(listingId: string, buyerId: string): Promise<string> {
  const { rows } = await db.pool.query<{ id: string }>(
    `insert into public.deals (listing_id, buyer_id, seller_id, amount, currency)
     values ($1, $2, $3, 100, 'USD') returning id`,
    [listingId, buyerId, seller.id],
  );
  return rows[0]!.id;
}

/**
 * Runs every call at once, each on its own connection of a pool of their
 * own: all transactions are open and ready before the first call is sent.
 */
async function race(
  calls: { who: Caller; offer: string }[],
): Promise<PromiseSettledResult<string>[]> {
  const pool = new pg.Pool({ connectionString: db.url, max: calls.length });
  try {
    let arrived = 0;
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    return await Promise.allSettled(
      calls.map(({ who, offer }) =>
        asRole(pool, identityOf(who), async (c) => {
          arrived += 1;
          if (arrived === calls.length) open();
          await gate;
          const { rows } = await c.query<{ id: string }>(
            "select public.accept_offer($1) as id",
            [offer],
          );
          await c.query("commit");
          return rows[0]!.id;
        })
      ),
    );
  } finally {
    await pool.end();
  }
}

function codeOf(result: PromiseSettledResult<unknown>): string | undefined {
  return result.status === "rejected" ? (result.reason as { code?: string }).code : undefined;
}

// -----------------------------------------------------------------------------
// Making offers (RLS, grants, triggers)
// -----------------------------------------------------------------------------

sqlTest(
  "offers: a buyer makes an offer on someone's approved listing; it starts pending for a week",
  async () => {
    const listing = await createListing(db.pool, seller.id, "approved");
    const made = await makeOffer(buyer, listing.id, "31000.50");
    assert.equal(made.buyer_id, buyer.id);
    assert.equal(made.amount, "31000.50");
    assert.equal(made.currency, "USD");
    assert.equal(made.message, "Hi");
    assert.equal(made.status, "pending");
    assert.equal(made.deal_id, null);
    assert.equal(made.decided_at, null);
    const week = made.expires_at.getTime() - Date.now();
    assert.ok(Math.abs(week - 7 * 86_400_000) < 60_000, `expires in ${week} ms`);

    // A chosen expiry in the future is kept.
    await asRole(db.pool, identityOf(rival), async (c) => {
      const { rows } = await c.query<{ days: number }>(
        `insert into public.offers (listing_id, amount, currency, expires_at)
         values ($1, 1, 'USD', now() + interval '2 days')
         returning round(extract(epoch from expires_at - now()) / 86400)::int as days`,
        [listing.id],
      );
      assert.equal(rows[0]!.days, 2);
    });
  },
);

sqlTest(
  "offers RLS: the buyer, the listing's seller and admins read an offer; strangers and anon do not",
  async () => {
    const listing = await createListing(db.pool, seller.id, "approved");
    const made = await makeOffer(buyer, listing.id);
    for (const who of [buyer, seller, admin]) {
      await asRole(db.pool, identityOf(who), async (c) => {
        const { rows } = await c.query("select id from public.offers where id = $1", [made.id]);
        assert.deepEqual(rows, [{ id: made.id }], who === admin ? "admin" : who.email);
      });
    }
    for (const who of [stranger, rival]) {
      await asRole(db.pool, identityOf(who), async (c) => {
        const { rows } = await c.query("select id from public.offers where listing_id = $1", [
          listing.id,
        ]);
        assert.deepEqual(rows, []);
      });
    }
    await asRole(db.pool, { role: "anon" }, async (c) => {
      await rejectsWith(c, "42501", "select id from public.offers");
    });
  },
);

sqlTest(
  "offers RLS: no offer on one's own listing, on a listing not approved, or with an active deal",
  async () => {
    const own = await createListing(db.pool, seller.id, "approved");
    await asRole(db.pool, identityOf(seller), async (c) => {
      await rejectsWith(c, "42501", INSERT_OFFER, [own.id, "1", "USD", null], "own listing");
    });

    const statuses: ReviewStatus[] = ["draft", "pending_review", "rejected", "archived"];
    for (const status of statuses) {
      const listing = await createListing(db.pool, seller.id, status);
      await asRole(db.pool, identityOf(buyer), async (c) => {
        await rejectsWith(c, "42501", INSERT_OFFER, [listing.id, "1", "USD", null], status);
      });
    }

    const dealt = await createListing(db.pool, seller.id, "approved");
    const deal = await createDirectDeal(dealt.id, rival.id);
    await asRole(db.pool, identityOf(buyer), async (c) => {
      await rejectsWith(c, "42501", INSERT_OFFER, [dealt.id, "1", "USD", null], "active deal");
    });
    // A cancelled deal is not active: the listing takes offers again.
    await db.pool.query("select public.transition_deal($1, 'cancelled', 'cancelled')", [deal]);
    await asRole(db.pool, identityOf(buyer), async (c) => {
      const { rows } = await c.query(INSERT_OFFER, [dealt.id, "1", "USD", null]);
      assert.equal(rows.length, 1);
    });

    await asRole(db.pool, { role: "anon" }, async (c) => {
      await rejectsWith(c, "42501", INSERT_OFFER, [own.id, "1", "USD", null], "anon");
    });
    const { rows } = await db.pool.query(
      "select count(*)::int as n from public.offers o join public.listings l on l.id = o.listing_id where l.seller_id = $1 and o.buyer_id = $2",
      [seller.id, seller.id],
    );
    assert.equal(rows[0].n, 0);
  },
);

sqlTest(
  "offers RLS: one pending offer per buyer and listing; no status, deal or buyer of one's choosing; terms checked",
  async () => {
    const listing = await createListing(db.pool, seller.id, "approved");
    const first = await makeOffer(buyer, listing.id);
    const { rows: deals } = await db.pool.query<{ id: string }>(
      "select id from public.deals limit 1",
    );
    const anyDeal = deals[0]?.id ?? crypto.randomUUID();

    await asRole(db.pool, identityOf(buyer), async (c) => {
      await rejectsWith(c, "23505", INSERT_OFFER, [listing.id, "2", "USD", null], "second");
      const insert = (column: string, value: string) =>
        `insert into public.offers (listing_id, amount, currency, ${column})
         values ($1, 5, 'USD', ${value})`;
      await rejectsWith(c, "42501", insert("status", "'accepted'"), [listing.id], "status");
      await rejectsWith(c, "42501", insert("status", "'pending'"), [listing.id], "status");
      await rejectsWith(c, "42501", insert("deal_id", "$2"), [listing.id, anyDeal], "deal");
      await rejectsWith(c, "42501", insert("buyer_id", "$2"), [listing.id, rival.id], "buyer");
      await rejectsWith(c, "42501", insert("decided_at", "now()"), [listing.id], "decided_at");
      // Clients never change an offer directly, not even their own.
      await rejectsWith(c, "42501", "update public.offers set status = 'withdrawn' where id = $1", [
        first.id,
      ]);
      await rejectsWith(c, "42501", "update public.offers set amount = 1 where id = $1", [
        first.id,
      ]);
      await rejectsWith(c, "42501", "delete from public.offers where id = $1", [first.id]);
    });

    // Invalid terms, from a buyer with no pending offer on the listing.
    await asRole(db.pool, identityOf(rival), async (c) => {
      await rejectsWith(c, "23514", INSERT_OFFER, [listing.id, "10", "EUR", null], "currency");
      await rejectsWith(c, "23514", INSERT_OFFER, [listing.id, "10", "usd", null], "lower case");
      await rejectsWith(c, "23514", INSERT_OFFER, [listing.id, "0", "USD", null], "amount 0");
      await rejectsWith(c, "23514", INSERT_OFFER, [listing.id, "-5", "USD", null], "negative");
      await rejectsWith(
        c,
        "23514",
        INSERT_OFFER,
        [listing.id, "10", "USD", "x".repeat(2001)],
        "message",
      );
      await rejectsWith(
        c,
        "23514",
        `insert into public.offers (listing_id, amount, currency, expires_at)
         values ($1, 10, 'USD', now() - interval '1 second')`,
        [listing.id],
        "expiry in the past",
      );
      const { rows } = await c.query(INSERT_OFFER, [listing.id, "10", "USD", "x".repeat(2000)]);
      assert.equal(rows.length, 1);
    });

    const { rows } = await db.pool.query<{ id: string }>(
      "select id from public.offers where listing_id = $1",
      [listing.id],
    );
    assert.deepEqual(rows, [{ id: first.id }]);
  },
);

sqlTest(
  "offers trigger: every writer's new offer starts pending, without a deal, on an open listing of someone else",
  async () => {
    const listing = await createListing(db.pool, seller.id, "approved");
    const draft = await createListing(db.pool, seller.id, "draft");
    const service = (columns: string, values: string, params: unknown[]) =>
      db.pool.query(
        `insert into public.offers (listing_id, buyer_id, amount, currency${columns})
         values ($1, $2, 10, 'USD'${values})`,
        params,
      );
    for (const status of ["accepted", "declined", "withdrawn", "expired"]) {
      await assert.rejects(
        service(", status", ", $3", [listing.id, buyer.id, status]),
        sqlState("PT409"),
      );
    }
    const deal = await createDirectDeal(listing.id, rival.id);
    await assert.rejects(
      service(", deal_id", ", $3", [listing.id, buyer.id, deal]),
      sqlState("PT409"),
    );
    await db.pool.query("select public.transition_deal($1, 'cancelled', 'cancelled')", [deal]);
    await assert.rejects(service("", "", [listing.id, seller.id]), sqlState("23514"));
    await assert.rejects(service("", "", [draft.id, buyer.id]), sqlState("PT409"));
    await assert.rejects(
      db.pool.query(
        `insert into public.offers (listing_id, buyer_id, amount, currency) values ($1, $2, 10, 'EUR')`,
        [listing.id, buyer.id],
      ),
      sqlState("23514"),
    );
    const { rows } = await db.pool.query(
      "select count(*)::int as n from public.offers where listing_id in ($1, $2)",
      [
        listing.id,
        draft.id,
      ],
    );
    assert.equal(rows[0].n, 0);
  },
);

sqlTest(
  "offers trigger: decided offers are final and an offer's terms never change",
  async () => {
    const listing = await createListing(db.pool, seller.id, "approved");
    const pending = await makeOffer(buyer, listing.id);
    const set = (assignments: string, id: string) =>
      db.pool.query(`update public.offers set ${assignments} where id = $1`, [id]);
    await assert.rejects(set("amount = 1", pending.id), sqlState("PT409"));
    await assert.rejects(set("currency = 'EUR'", pending.id), sqlState("PT409"));
    await assert.rejects(set("message = 'changed'", pending.id), sqlState("PT409"));
    await assert.rejects(set(`buyer_id = '${rival.id}'`, pending.id), sqlState("PT409"));
    await assert.rejects(set("status = 'accepted'", pending.id), sqlState("PT409"));
    await assert.rejects(set("decided_at = now()", pending.id), sqlState("PT409"));
    await assert.rejects(set("status = 'bogus'", pending.id), sqlState("PT409"));

    await callAs(buyer, "withdraw_offer", pending.id);
    for (const to of ["pending", "declined", "expired", "accepted"]) {
      await assert.rejects(set(`status = '${to}'`, pending.id), sqlState("PT409"), to);
    }
    await assert.rejects(
      set("expires_at = now() + interval '1 day'", pending.id),
      sqlState("PT409"),
    );
    assert.equal((await offer(pending.id)).status, "withdrawn");
  },
);

// -----------------------------------------------------------------------------
// accept_offer()
// -----------------------------------------------------------------------------

sqlTest(
  "accept_offer() creates the deal at the offered price, records offer_accepted, links both ways and declines the rivals",
  async () => {
    const listing = await createListing(db.pool, seller.id, "approved");
    const other = await createListing(db.pool, seller.id, "approved");
    const accepted = await makeOffer(buyer, listing.id, "31000.50");
    const rivalOffer = await makeOffer(rival, listing.id, "32000.00");
    const strangerOffer = await makeOffer(stranger, listing.id, "29000.00");
    const elsewhere = await makeOffer(buyer, other.id, "1000.00");
    const withdrawn = await makeOffer(admin, listing.id, "1.00");
    await callAs(admin, "withdraw_offer", withdrawn.id);

    const dealId = await asRole(db.pool, identityOf(seller), async (c) => {
      const { rows } = await c.query<{ id: string }>("select public.accept_offer($1) as id", [
        accepted.id,
      ]);
      // The deal's cause does not stick to the rest of the transaction.
      const cause = await c.query<{ v: string | null }>(
        "select current_setting('marketplace.deal_cause', true) as v",
      );
      assert.equal(cause.rows[0]!.v, "");
      await c.query("commit");
      return rows[0]!.id;
    });

    assert.deepEqual(await dealsOn(listing.id), [{
      id: dealId,
      buyer_id: buyer.id,
      seller_id: seller.id,
      amount: "31000.50",
      currency: "USD",
      status: "pending_payment",
      offer_id: accepted.id,
    }]);
    const { rows: events } = await db.pool.query(
      "select from_status, to_status, cause, actor_id from public.deal_events where deal_id = $1",
      [dealId],
    );
    assert.deepEqual(events, [{
      from_status: null,
      to_status: "pending_payment",
      cause: "offer_accepted",
      actor_id: seller.id,
    }]);

    const after = await offer(accepted.id);
    assert.equal(after.status, "accepted");
    assert.equal(after.deal_id, dealId);
    assert.ok(after.decided_at instanceof Date);
    for (const id of [rivalOffer.id, strangerOffer.id]) {
      const declined = await offer(id);
      assert.equal(declined.status, "declined");
      assert.ok(declined.decided_at instanceof Date);
    }
    assert.equal((await offer(withdrawn.id)).status, "withdrawn");
    assert.equal((await offer(elsewhere.id)).status, "pending");

    // The listing has an active deal now: it takes no new offer.
    await asRole(db.pool, identityOf(stranger), async (c) => {
      await rejectsWith(c, "42501", INSERT_OFFER, [listing.id, "1", "USD", null]);
    });
    // Both participants see the deal with its offer.
    for (const who of [buyer, seller]) {
      await asRole(db.pool, identityOf(who), async (c) => {
        const { rows } = await c.query("select offer_id from public.deals where id = $1", [dealId]);
        assert.deepEqual(rows, [{ offer_id: accepted.id }]);
      });
    }
  },
);

sqlTest(
  "accept_offer(): only the listing's seller or the service connection; nothing is written otherwise",
  async () => {
    const listing = await createListing(db.pool, seller.id, "approved");
    const made = await makeOffer(buyer, listing.id);
    // Its author and admins (who read it) are refused; others learn nothing.
    for (const who of [buyer, admin]) {
      await assert.rejects(callAs(who, "accept_offer", made.id), sqlState("42501"), who.email);
    }
    for (const who of [stranger, rival]) {
      await assert.rejects(callAs(who, "accept_offer", made.id), sqlState("PT404"), who.email);
    }
    await asRole(db.pool, { role: "anon" }, async (c) => {
      await rejectsWith(c, "42501", "select public.accept_offer($1)", [made.id]);
    });
    await assert.rejects(
      callAs(seller, "accept_offer", crypto.randomUUID()),
      sqlState("PT404"),
    );
    assert.equal((await offer(made.id)).status, "pending");
    assert.deepEqual(await dealsOn(listing.id), []);

    const dealId = await callAs("service", "accept_offer", made.id);
    assert.equal((await offer(made.id)).deal_id, dealId);
    const { rows } = await db.pool.query(
      "select cause, actor_id from public.deal_events where deal_id = $1",
      [dealId],
    );
    assert.deepEqual(rows, [{ cause: "offer_accepted", actor_id: null }]);
  },
);

sqlTest(
  "accept_offer() refuses with PT409 an offer accepted, declined or withdrawn, and a listing off sale or under a deal",
  async () => {
    const listing = await createListing(db.pool, seller.id, "approved");
    const first = await makeOffer(buyer, listing.id);
    const second = await makeOffer(rival, listing.id);
    const dealId = await callAs(seller, "accept_offer", first.id);
    await assert.rejects(callAs(seller, "accept_offer", first.id), (error: unknown) => {
      sqlState("PT409")(error);
      assert.match((error as Error).message, /it was already accepted/);
      return true;
    });
    await assert.rejects(callAs(seller, "accept_offer", second.id), sqlState("PT409"));
    assert.deepEqual((await dealsOn(listing.id)).map((d) => d.id), [dealId]);

    const withdrawnListing = await createListing(db.pool, seller.id, "approved");
    const withdrawn = await makeOffer(buyer, withdrawnListing.id);
    await callAs(buyer, "withdraw_offer", withdrawn.id);
    await assert.rejects(callAs(seller, "accept_offer", withdrawn.id), sqlState("PT409"));

    // The listing left approved after the offer was made.
    const archived = await createListing(db.pool, seller.id, "approved");
    const onArchived = await makeOffer(buyer, archived.id);
    await db.pool.query("update public.listings set review_status = 'archived' where id = $1", [
      archived.id,
    ]);
    await assert.rejects(callAs(seller, "accept_offer", onArchived.id), (error: unknown) => {
      sqlState("PT409")(error);
      assert.match((error as Error).message, /not on sale/);
      return true;
    });

    // A deal was made on the listing some other way after the offer.
    const dealt = await createListing(db.pool, seller.id, "approved");
    const onDealt = await makeOffer(buyer, dealt.id);
    const direct = await createDirectDeal(dealt.id, rival.id);
    await assert.rejects(callAs(seller, "accept_offer", onDealt.id), (error: unknown) => {
      sqlState("PT409")(error);
      assert.match((error as Error).message, /deal in progress/);
      return true;
    });
    assert.equal((await offer(onDealt.id)).status, "pending");
    // Once that deal is cancelled, the offer can be accepted.
    await db.pool.query("select public.transition_deal($1, 'cancelled', 'cancelled')", [direct]);
    const accepted = await callAs(seller, "accept_offer", onDealt.id);
    assert.equal((await offer(onDealt.id)).deal_id, accepted);
  },
);

sqlTest("accept_offer(): ten concurrent accepts of one offer create exactly one deal", async () => {
  const listing = await createListing(db.pool, seller.id, "approved");
  const made = await makeOffer(buyer, listing.id, "27500.00");
  const results = await race(Array.from({ length: 10 }, () => ({ who: seller, offer: made.id })));

  const won = results.filter((r) => r.status === "fulfilled");
  assert.equal(won.length, 1, JSON.stringify(results.map(codeOf)));
  assert.deepEqual(
    results.filter((r) => r.status === "rejected").map(codeOf),
    Array(9).fill("PT409"),
  );
  const deals = await dealsOn(listing.id);
  assert.equal(deals.length, 1);
  assert.equal(deals[0]!.id, (won[0] as PromiseFulfilledResult<string>).value);
  assert.equal(deals[0]!.amount, "27500.00");
  const { rows } = await db.pool.query(
    "select count(*)::int as n from public.deal_events where deal_id = $1",
    [deals[0]!.id],
  );
  assert.equal(rows[0].n, 1);
  assert.equal((await offer(made.id)).deal_id, deals[0]!.id);
});

sqlTest(
  "accept_offer(): two offers on one listing accepted at once create exactly one deal",
  async () => {
    const listing = await createListing(db.pool, seller.id, "approved");
    const a = await makeOffer(buyer, listing.id, "100.00");
    const b = await makeOffer(rival, listing.id, "200.00");
    const results = await race(
      Array.from({ length: 10 }, (_, i) => ({ who: seller, offer: i % 2 ? a.id : b.id })),
    );
    assert.equal(results.filter((r) => r.status === "fulfilled").length, 1);
    assert.ok(results.every((r) => r.status === "fulfilled" || codeOf(r) === "PT409"));
    const deals = await dealsOn(listing.id);
    assert.equal(deals.length, 1);
    const statuses = [(await offer(a.id)).status, (await offer(b.id)).status].sort();
    assert.deepEqual(statuses, ["accepted", "declined"]);
    const winner = deals[0]!.offer_id === a.id ? a : b;
    assert.equal(deals[0]!.amount, winner.amount);
    assert.equal(deals[0]!.buyer_id, winner.buyer_id);
  },
);

sqlTest(
  "a new offer made while an accept is creating the listing's deal is refused once the deal commits",
  async () => {
    const listing = await createListing(db.pool, seller.id, "approved");
    const made = await makeOffer(buyer, listing.id);
    const pool = new pg.Pool({ connectionString: db.url, max: 2 });
    try {
      let late!: Promise<unknown>;
      await asRole(pool, identityOf(seller), async (c) => {
        await c.query("select public.accept_offer($1)", [made.id]);
        // The insert policy passes (the deal is not committed yet); the
        // offer's check then waits for the listing row the accept holds.
        late = asRole(
          pool,
          identityOf(rival),
          (r) => r.query(INSERT_OFFER, [listing.id, "1", "USD", null]),
        );
        late.catch(() => {});
        await waitForLockWait();
        await c.query("commit");
      });
      await assert.rejects(late, (error: unknown) => {
        sqlState("PT409")(error);
        assert.match((error as Error).message, /deal in progress/);
        return true;
      });
    } finally {
      await pool.end();
    }
    const { rows } = await db.pool.query<{ buyer_id: string }>(
      "select buyer_id from public.offers where listing_id = $1",
      [listing.id],
    );
    assert.deepEqual(rows, [{ buyer_id: buyer.id }]);
  },
);

/** Resolves once a backend of this database waits for a lock. */
async function waitForLockWait(): Promise<void> {
  for (let i = 0; i < 500; i++) {
    const { rows } = await db.pool.query<{ n: number }>(
      `select count(*)::int as n from pg_stat_activity
       where datname = current_database() and wait_event_type = 'Lock'`,
    );
    if (rows[0]!.n > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error("Cannot see the racing insert wait for the listing's lock");
}

// -----------------------------------------------------------------------------
// Expiry
// -----------------------------------------------------------------------------

sqlTest(
  "an offer past its expiry cannot be accepted, declined or withdrawn; expire_offers() marks it expired",
  async () => {
    const listing = await createListing(db.pool, seller.id, "approved");
    const made = await makeOffer(buyer, listing.id);
    await lapse(made.id);
    const expired = (error: unknown) => {
      sqlState("PT409")(error);
      assert.match((error as Error).message, /expired/);
      return true;
    };
    await assert.rejects(callAs(seller, "accept_offer", made.id), expired);
    await assert.rejects(callAs(seller, "decline_offer", made.id), expired);
    await assert.rejects(callAs(buyer, "withdraw_offer", made.id), expired);
    assert.deepEqual(await dealsOn(listing.id), []);
    // The refusal rolled back with its transaction: the sweep marks it.
    assert.equal((await offer(made.id)).status, "pending");

    await asRole(db.pool, identityOf(admin), async (c) => {
      await rejectsWith(c, "42501", "select public.expire_offers()");
    });
    const swept = await asRole(db.pool, { role: "service_role" }, async (c) => {
      const { rows } = await c.query<{ n: number }>("select public.expire_offers() as n");
      await c.query("commit");
      return rows[0]!.n;
    });
    assert.ok(swept >= 1, `swept ${swept}`);
    const after = await offer(made.id);
    assert.equal(after.status, "expired");
    assert.ok(after.decided_at instanceof Date);
    const again = await db.pool.query<{ n: number }>("select public.expire_offers() as n");
    assert.equal(again.rows[0]!.n, 0);
    await assert.rejects(callAs(seller, "accept_offer", made.id), (error: unknown) => {
      sqlState("PT409")(error);
      assert.match((error as Error).message, /it has expired/);
      return true;
    });
  },
);

sqlTest(
  "a buyer's new offer replaces their lapsed one; accepting expires lapsed rivals instead of declining them",
  async () => {
    const listing = await createListing(db.pool, seller.id, "approved");
    const old = await makeOffer(buyer, listing.id, "10.00");
    await lapse(old.id);
    const renewed = await makeOffer(buyer, listing.id, "12.00");
    assert.equal((await offer(old.id)).status, "expired");
    assert.equal(renewed.status, "pending");

    const lapsedRival = await makeOffer(rival, listing.id, "11.00");
    await lapse(lapsedRival.id);
    const liveRival = await makeOffer(stranger, listing.id, "9.00");
    await callAs(seller, "accept_offer", renewed.id);
    assert.equal((await offer(lapsedRival.id)).status, "expired");
    assert.equal((await offer(liveRival.id)).status, "declined");
  },
);

// -----------------------------------------------------------------------------
// decline_offer() and withdraw_offer()
// -----------------------------------------------------------------------------

sqlTest("decline_offer(): the listing's seller declines a pending offer, once", async () => {
  const listing = await createListing(db.pool, seller.id, "approved");
  const made = await makeOffer(buyer, listing.id);
  for (const who of [buyer, admin]) {
    await assert.rejects(callAs(who, "decline_offer", made.id), sqlState("42501"), who.email);
  }
  await assert.rejects(callAs(stranger, "decline_offer", made.id), sqlState("PT404"));
  await asRole(db.pool, { role: "anon" }, async (c) => {
    await rejectsWith(c, "42501", "select public.decline_offer($1)", [made.id]);
  });
  await assert.rejects(callAs(seller, "decline_offer", crypto.randomUUID()), sqlState("PT404"));
  assert.equal((await offer(made.id)).status, "pending");

  await callAs(seller, "decline_offer", made.id);
  const after = await offer(made.id);
  assert.equal(after.status, "declined");
  assert.ok(after.decided_at instanceof Date);
  await assert.rejects(callAs(seller, "decline_offer", made.id), sqlState("PT409"));
  await assert.rejects(callAs(buyer, "withdraw_offer", made.id), sqlState("PT409"));
  await assert.rejects(callAs(seller, "accept_offer", made.id), sqlState("PT409"));

  // The service connection may decline too; an accepted offer cannot be declined.
  const second = await makeOffer(buyer, listing.id);
  await callAs("service", "decline_offer", second.id);
  assert.equal((await offer(second.id)).status, "declined");
  const third = await makeOffer(rival, listing.id);
  await callAs(seller, "accept_offer", third.id);
  await assert.rejects(callAs(seller, "decline_offer", third.id), sqlState("PT409"));
});

sqlTest(
  "withdraw_offer(): the buyer withdraws a pending offer, once, and may then offer again",
  async () => {
    const listing = await createListing(db.pool, seller.id, "approved");
    const made = await makeOffer(buyer, listing.id);
    for (const who of [seller, admin]) {
      await assert.rejects(callAs(who, "withdraw_offer", made.id), sqlState("42501"), who.email);
    }
    await assert.rejects(callAs(stranger, "withdraw_offer", made.id), sqlState("PT404"));
    await asRole(db.pool, { role: "anon" }, async (c) => {
      await rejectsWith(c, "42501", "select public.withdraw_offer($1)", [made.id]);
    });
    await assert.rejects(callAs(buyer, "withdraw_offer", crypto.randomUUID()), sqlState("PT404"));
    assert.equal((await offer(made.id)).status, "pending");

    await callAs(buyer, "withdraw_offer", made.id);
    const after = await offer(made.id);
    assert.equal(after.status, "withdrawn");
    assert.ok(after.decided_at instanceof Date);
    await assert.rejects(callAs(buyer, "withdraw_offer", made.id), sqlState("PT409"));
    await assert.rejects(callAs(seller, "accept_offer", made.id), sqlState("PT409"));
    await assert.rejects(callAs(seller, "decline_offer", made.id), sqlState("PT409"));

    const again = await makeOffer(buyer, listing.id, "35000.00");
    assert.equal(again.status, "pending");
    await callAs("service", "withdraw_offer", again.id);
    assert.equal((await offer(again.id)).status, "withdrawn");
  },
);

// -----------------------------------------------------------------------------
// Realtime
// -----------------------------------------------------------------------------

interface Message {
  event: string;
  private: boolean;
  payload: {
    table: string;
    record: Record<string, unknown> | null;
    old_record: Record<string, unknown> | null;
  };
}

async function offerMessagesFor(userId: string): Promise<[string, unknown, unknown, unknown][]> {
  const { rows } = await db.pool.query<Message>(
    "select event, private, payload from realtime.messages where topic = $1 order by id",
    [`user:${userId}`],
  );
  for (const m of rows) assert.equal(m.private, true);
  return rows.filter((m) => m.payload.table === "offers").map((m) => [
    m.event,
    m.payload.record?.id,
    m.payload.old_record?.status ?? null,
    m.payload.record?.status,
  ]);
}

sqlTest(
  "realtime: every new offer and status change reaches the buyer's and the seller's topics",
  async () => {
    const theSeller = await createUser(db.pool);
    const theBuyer = await createUser(db.pool);
    const theRival = await createUser(db.pool);
    const onlooker = await createUser(db.pool);
    const listing = await createListing(db.pool, theSeller.id, "approved");
    const made = await makeOffer(theBuyer, listing.id);
    const rivalOffer = await makeOffer(theRival, listing.id);
    // A change that is not a status change is not pushed.
    await db.pool.query(
      "update public.offers set expires_at = expires_at + interval '1 day' where id = $1",
      [made.id],
    );
    await callAs(theSeller, "accept_offer", made.id);

    assert.deepEqual(await offerMessagesFor(theBuyer.id), [
      ["INSERT", made.id, null, "pending"],
      ["UPDATE", made.id, "pending", "accepted"],
    ]);
    assert.deepEqual(await offerMessagesFor(theRival.id), [
      ["INSERT", rivalOffer.id, null, "pending"],
      ["UPDATE", rivalOffer.id, "pending", "declined"],
    ]);
    assert.deepEqual(await offerMessagesFor(theSeller.id), [
      ["INSERT", made.id, null, "pending"],
      ["INSERT", rivalOffer.id, null, "pending"],
      ["UPDATE", made.id, "pending", "accepted"],
      ["UPDATE", rivalOffer.id, "pending", "declined"],
    ]);
    assert.deepEqual(await offerMessagesFor(onlooker.id), []);

    // A refused offer publishes nothing.
    await asRole(db.pool, identityOf(onlooker), async (c) => {
      await rejectsWith(c, "42501", INSERT_OFFER, [listing.id, "1", "USD", null]);
      await c.query("commit");
    });
    assert.deepEqual(await offerMessagesFor(onlooker.id), []);
  },
);
