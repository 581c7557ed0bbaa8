import assert from "node:assert/strict";
import type pg from "pg";
import { ACCESS_REQUEST_MOVES, ACCESS_REQUEST_STATUSES } from "../../shared/listing_access.ts";
import type { AccessRequestStatus } from "../../shared/listing_access_schemas.ts";
import { createTestDatabase, sqlTest } from "../support/db.ts";
import {
  accessBuyersOutOfSync,
  accessRequest,
  lapseRequest,
  makeConfidential,
  queuedNotices,
  requestStatus,
} from "../support/listing_access.ts";
import { messagesFor } from "../support/realtime.ts";
import {
  asRole,
  createUser,
  failureAs,
  raceCalls,
  settledCode,
  type SqlIdentity,
  type TestUser,
  valueAs,
} from "../support/sql.ts";
import { createListing, rejectsWith, type TestListing } from "./core_fixtures.ts";

const db = await createTestDatabase();

const seller = await createUser(db.pool);
const admin = await createUser(db.pool, { admin: true });
const stranger = await createUser(db.pool);

const { rows: [nda1] } = await db.pool.query<{ body: string; sha256: string }>(
  "select body, sha256 from public.nda_documents where version = '1'",
);

/** A signed-in user's identity, optionally with request headers. */
function as(user: TestUser, headers?: Record<string, string>): SqlIdentity {
  return { role: "authenticated", userId: user.id, headers };
}

/** A new approved confidential listing of the seller. */
async function ndaListing(fields: string[] = ["seller", "url"]): Promise<TestListing> {
  const listing = await createListing(db.pool, seller.id, "approved");
  await makeConfidential(db.pool, listing.id, fields);
  return listing;
}

/** Runs `sql` as `who` and commits; answers the first column of its first row. */
function callAs<T = unknown>(who: SqlIdentity, sql: string, params: unknown[] = []): Promise<T> {
  return valueAs<T>(db.pool, who, sql, params);
}

/** The error `sql` fails with as `who` (nothing is committed). */
function errorOf(who: SqlIdentity, sql: string, params: unknown[] = []) {
  return failureAs(db.pool, who, sql, params);
}

const REQUEST = "select public.request_listing_access($1, $2, $3)";

async function request(buyer: TestUser, listingId: string, message: string | null = null) {
  return await callAs<string>(as(buyer), REQUEST, [listingId, "1", message]);
}

async function count(sql: string, params: unknown[] = []): Promise<number> {
  const { rows } = await db.pool.query<{ n: number }>(`select (${sql})::int as n`, params);
  return rows[0]!.n;
}

// -----------------------------------------------------------------------------
// The NDA
// -----------------------------------------------------------------------------

sqlTest(
  "nda_documents: version 1 is seeded with its SHA-256; signed-in users read it, visitors do not",
  async () => {
    assert.ok(nda1!.body.startsWith("MUTUAL NON-DISCLOSURE AGREEMENT"));
    const { rows } = await db.pool.query<{ ok: boolean }>(
      "select encode(sha256(convert_to($1, 'UTF8')), 'hex') = $2 as ok",
      [nda1!.body, nda1!.sha256],
    );
    assert.equal(rows[0]!.ok, true);
    for (
      const who of [as(stranger), {
        role: "authenticated" as const,
        userId: crypto.randomUUID(),
        anonymous: true,
      }]
    ) {
      assert.equal(await callAs(who, "select count(*)::int from public.nda_documents"), 1);
      assert.equal(await callAs(who, "select public.current_nda_version()"), "1");
    }
    await asRole(db.pool, { role: "anon" }, async (c) => {
      await rejectsWith(c, "42501", "select * from public.nda_documents");
      await rejectsWith(c, "42501", "select public.current_nda_version()");
    });
  },
);

sqlTest(
  "nda_documents: admins publish a version (its hash and time from the database); nobody changes one",
  async () => {
    const body = "A newer mutual non-disclosure agreement. ".repeat(5);
    await asRole(db.pool, as(admin), async (c) => {
      const { rows } = await c.query<{ sha256: string; version: string }>(
        `insert into public.nda_documents (version, body) values ('2', $1) returning version, sha256`,
        [body],
      );
      const expected = await c.query<{ h: string }>(
        "select encode(sha256(convert_to($1, 'UTF8')), 'hex') as h",
        [body],
      );
      assert.equal(rows[0]!.sha256, expected.rows[0]!.h);
      assert.equal((await c.query("select public.current_nda_version() as v")).rows[0].v, "2");
      await rejectsWith(
        c,
        "42501",
        "update public.nda_documents set body = body || '!' where version = '1'",
      );
      await rejectsWith(c, "42501", "delete from public.nda_documents where version = '1'");
    });
    for (const who of [as(stranger), as(seller)]) {
      await asRole(db.pool, who, async (c) => {
        await rejectsWith(
          c,
          "42501",
          "insert into public.nda_documents (version, body) values ('9', $1)",
          [body],
        );
      });
    }
    // Not even the service connection changes a published version.
    const client = await db.pool.connect();
    try {
      await client.query("begin");
      await rejectsWith(
        client,
        "PT409",
        "update public.nda_documents set body = $1 where version = '1'",
        [body],
      );
      await rejectsWith(client, "PT409", "delete from public.nda_documents where version = '1'");
    } finally {
      await client.query("rollback");
      client.release();
    }
    assert.equal(await count("select count(*) from public.nda_documents"), 1, "rolled back");
  },
);

// -----------------------------------------------------------------------------
// request_listing_access()
// -----------------------------------------------------------------------------

sqlTest(
  "request_listing_access(): records the NDA acceptance, tells the seller, and answers the same id while open",
  async () => {
    const listing = await ndaListing();
    const buyer = await createUser(db.pool);
    const id = await callAs<string>(
      as(buyer, { "x-forwarded-for": "203.0.113.9, 10.0.0.1" }),
      REQUEST,
      [listing.id, "1", "  I run two recipe sites.\r\nProof of funds on request.  "],
    );
    const { rows: [row] } = await db.pool.query(
      `select listing_id, buyer_id, seller_id, status, message, nda_version, nda_sha256,
            abs(extract(epoch from nda_accepted_at - now())) < 60 as accepted_now,
            round(extract(epoch from expires_at - created_at) / 86400)::int as days
     from public.listing_access_requests where id = $1`,
      [id],
    );
    assert.deepEqual(row, {
      listing_id: listing.id,
      buyer_id: buyer.id,
      seller_id: seller.id,
      status: "pending",
      message: "I run two recipe sites.\nProof of funds on request.",
      nda_version: "1",
      nda_sha256: nda1!.sha256,
      accepted_now: true,
      days: 14,
    });
    const { rows: address } = await db.pool.query(
      "select client_address from public.nda_acceptance_addresses where request_id = $1",
      [id],
    );
    assert.deepEqual(address, [{ client_address: "203.0.113.9" }]);
    assert.deepEqual((await queuedNotices(db.pool, id)).map((n) => [n.kind, n.user_id, n.status]), [
      ["listing_access_requested", seller.id, "pending"],
    ]);

    // Asking again (another note, another version name even) answers the same request.
    assert.equal(await request(buyer, listing.id, "Again"), id);
    await callAs(as(seller), "select public.decide_listing_access($1, true)", [id]);
    assert.equal(await request(buyer, listing.id), id, "approved: the same id");
    assert.equal(
      await count("select count(*) from public.listing_access_requests where buyer_id = $1", [
        buyer.id,
      ]),
      1,
    );
    assert.equal(
      (await queuedNotices(db.pool, id)).length,
      2,
      "the request's notice, then the approval's",
    );
  },
);

sqlTest(
  "request_listing_access(): refused — nothing written — for visitors, anonymous sessions, the seller, unknown and unpublished listings, open listings, a replaced or unknown NDA, and a bad note",
  async () => {
    const listing = await ndaListing();
    const draft = await createListing(db.pool, seller.id, "draft");
    await makeConfidential(db.pool, draft.id);
    const openListing = await createListing(db.pool, seller.id, "approved");
    const buyer = await createUser(db.pool);
    const before = await count("select count(*) from public.listing_access_requests");
    const queuedBefore = await count("select count(*) from public.notice_queue");
    const cases: Array<[string, SqlIdentity, unknown[], string, RegExp]> = [
      ["a visitor", { role: "anon" }, [listing.id, "1", null], "42501", /permission denied/],
      [
        "an anonymous session",
        { role: "authenticated", userId: crypto.randomUUID(), anonymous: true },
        [listing.id, "1", null],
        "42501",
        /anonymous session cannot change anything/,
      ],
      ["the seller", as(seller), [listing.id, "1", null], "42501", /your own listing/],
      [
        "an unknown listing",
        as(buyer),
        [crypto.randomUUID(), "1", null],
        "PT404",
        /does not exist/,
      ],
      ["a draft", as(buyer), [draft.id, "1", null], "PT404", /does not exist/],
      ["an open listing", as(buyer), [openListing.id, "1", null], "PT409", /not confidential/],
      ["no NDA version", as(buyer), [listing.id, null, null], "22023", /name the NDA version/],
      [
        "an unknown NDA version",
        as(buyer),
        [listing.id, "7", null],
        "22023",
        /"7" is not an NDA version/,
      ],
      [
        "a control character",
        as(buyer),
        [listing.id, "1", "hi\u0007there"],
        "22023",
        /control character/,
      ],
      [
        "a long note",
        as(buyer),
        [listing.id, "1", "x".repeat(2001)],
        "22023",
        /2001 characters long/,
      ],
    ];
    for (const [what, who, params, code, message] of cases) {
      const error = await errorOf(who, REQUEST, params);
      assert.equal(error.code, code, `${what}: ${error.message}`);
      assert.match(error.message, message, what);
    }
    // A replaced NDA version: PT409 naming the current one.
    const client = await db.pool.connect();
    try {
      await client.query("begin");
      await client.query("insert into public.nda_documents (version, body) values ('2', $1)", [
        "A newer mutual non-disclosure agreement. ".repeat(5),
      ]);
      await client.query("select set_config('request.jwt.claims', $1, true)", [
        JSON.stringify({ role: "authenticated", sub: buyer.id }),
      ]);
      await client.query("set local role authenticated");
      const error = await client.query(REQUEST, [listing.id, "1", null]).then(() => null, (e) => e);
      assert.equal(error?.code, "PT409");
      assert.match(error.message, /NDA version "1" was replaced by version "2"/);
      assert.match(error.hint, /p_nda_version "2"/);
    } finally {
      await client.query("rollback");
      client.release();
    }
    assert.equal(await count("select count(*) from public.listing_access_requests"), before);
    assert.equal(await count("select count(*) from public.notice_queue"), queuedBefore);
  },
);

sqlTest(
  "request_listing_access(): after withdrawn or expired the buyer asks again; after declined or revoked the answer stands; a lapsed pending request is replaced",
  async () => {
    for (
      const [status, again] of [["withdrawn", true], ["expired", true], ["declined", false], [
        "revoked",
        false,
      ]] as const
    ) {
      const listing = await ndaListing();
      const buyer = await createUser(db.pool);
      const first = await accessRequest(db.pool, listing.id, buyer.id, status);
      if (again) {
        const second = await request(buyer, listing.id);
        assert.notEqual(second, first, status);
        assert.equal(await requestStatus(db.pool, second), "pending");
      } else {
        const error = await errorOf(as(buyer), REQUEST, [listing.id, "1", null]);
        assert.equal(error.code, "PT409", status);
        assert.match(
          error.message,
          status === "declined" ? /declined your request/ : /revoked your access/,
        );
      }
    }
    // A pending request past its expiry: the new call expires it (and tells the buyer) and asks anew.
    const listing = await ndaListing();
    const buyer = await createUser(db.pool);
    const lapsed = await accessRequest(db.pool, listing.id, buyer.id, "pending");
    await lapseRequest(db.pool, lapsed);
    const fresh = await request(buyer, listing.id);
    assert.notEqual(fresh, lapsed);
    assert.equal(await requestStatus(db.pool, lapsed), "expired");
    assert.deepEqual((await queuedNotices(db.pool, lapsed)).map((n) => n.kind), [
      "listing_access_expired",
    ]);
  },
);

sqlTest(
  "request_listing_access(): two requests of one buyer at once make one request",
  async () => {
    for (let round = 0; round < 5; round++) {
      const listing = await ndaListing();
      const buyer = await createUser(db.pool);
      const results = await raceCalls(
        db.url,
        Array.from({ length: 4 }, () => ({
          who: as(buyer),
          sql: "select public.request_listing_access($1, '1') as id",
          params: [listing.id],
        })),
      );
      const ids = results.map((r) => r.status === "fulfilled" ? r.value[0]!.id : r.reason);
      assert.equal(new Set(ids).size, 1, JSON.stringify(ids));
      assert.equal(
        await count("select count(*) from public.listing_access_requests where listing_id = $1", [
          listing.id,
        ]),
        1,
      );
      assert.equal(
        await count("select count(*) from public.notice_queue where subject_id = $1", [ids[0]]),
        1,
      );
    }
  },
);

sqlTest(
  "request_listing_access(): beyond access_request:per_day the call is refused with PT429 and writes nothing",
  async () => {
    await db.pool.query(
      "update public.client_limits set max_hits = 2 where name = 'access_request:per_day'",
    );
    try {
      const buyer = await createUser(db.pool);
      const listings = [await ndaListing(), await ndaListing(), await ndaListing()];
      await request(buyer, listings[0]!.id);
      await request(buyer, listings[1]!.id);
      assert.equal(
        await request(buyer, listings[1]!.id) !== null,
        true,
        "asking again does not count",
      );
      const error = await errorOf(as(buyer), REQUEST, [listings[2]!.id, "1", null]);
      assert.equal(error.code, "PT429");
      assert.match(error.message, /too many; try again in \d+ seconds/);
      assert.equal(
        await count("select count(*) from public.listing_access_requests where buyer_id = $1", [
          buyer.id,
        ]),
        2,
      );
      // Another buyer has limits of their own.
      await request(await createUser(db.pool), listings[2]!.id);
    } finally {
      await db.pool.query(
        "update public.client_limits set max_hits = 30 where name = 'access_request:per_day'",
      );
    }
  },
);

// -----------------------------------------------------------------------------
// The state machine
// -----------------------------------------------------------------------------

/** The four moves a client can ask for, and the RPC call of each. */
const ACTIONS = {
  approve: { sql: "select public.decide_listing_access($1, true)", by: "seller", to: "approved" },
  decline: {
    sql: "select public.decide_listing_access($1, false, 'No')",
    by: "seller",
    to: "declined",
  },
  withdraw: { sql: "select public.withdraw_listing_access($1)", by: "buyer", to: "withdrawn" },
  revoke: {
    sql: "select public.revoke_listing_access($1, 'Changed my mind')",
    by: "seller",
    to: "revoked",
  },
} as const;

sqlTest(
  "listing access state machine: every move the table allows works, and every other is refused with PT409 and changes nothing",
  async () => {
    let allowed = 0;
    let refused = 0;
    for (const from of ACCESS_REQUEST_STATUSES) {
      for (const [name, action] of Object.entries(ACTIONS)) {
        const listing = await ndaListing();
        const buyer = await createUser(db.pool);
        const id = await accessRequest(db.pool, listing.id, buyer.id, from);
        const who = action.by === "buyer" ? as(buyer) : as(seller);
        const legal = ACCESS_REQUEST_MOVES.some((m) =>
          m.from === from && m.to === action.to && m.rpc !== null
        );
        if (legal) {
          await callAs(who, action.sql, [id]);
          assert.equal(await requestStatus(db.pool, id), action.to, `${from} → ${name}`);
          allowed++;
        } else {
          const error = await errorOf(who, action.sql, [id]);
          assert.equal(error.code, "PT409", `${from} → ${name}: ${error.message}`);
          assert.equal(await requestStatus(db.pool, id), from, `${from} → ${name} changed nothing`);
          refused++;
        }
      }
    }
    // approve, decline, withdraw a pending request; revoke an approved or a suspended one.
    assert.equal(allowed, 5);
    assert.equal(refused, ACCESS_REQUEST_STATUSES.length * 4 - 5);
    assert.deepEqual(await accessBuyersOutOfSync(db.pool), [], "access_buyers follows every move");

    // The trigger holds every writer to the table, the service connection included.
    const listing = await ndaListing();
    const buyer = await createUser(db.pool);
    const client = await db.pool.connect();
    try {
      for (const from of ACCESS_REQUEST_STATUSES) {
        const id = await accessRequest(db.pool, listing.id, (await createUser(db.pool)).id, from);
        await client.query("begin");
        for (const to of ACCESS_REQUEST_STATUSES) {
          if (to === from) continue;
          const legal = ACCESS_REQUEST_MOVES.some((m) => m.from === from && m.to === to);
          await client.query("savepoint s");
          const error = await client.query(
            "update public.listing_access_requests set status = $2 where id = $1",
            [id, to],
          ).then(() => null, (e) => e);
          await client.query("rollback to savepoint s");
          assert.equal(error?.code, legal ? undefined : "PT409", `service: ${from} -> ${to}`);
        }
        await rejectsWith(
          client,
          "PT409",
          "update public.listing_access_requests set message = 'edited' where id = $1",
          [id],
        );
        await rejectsWith(
          client,
          "PT409",
          "update public.listing_access_requests set nda_version = '1', nda_sha256 = repeat('0', 64) where id = $1",
          [id],
        );
        await client.query("rollback");
      }
      await client.query("begin");
      await rejectsWith(
        client,
        "PT409",
        `insert into public.listing_access_requests (listing_id, buyer_id, seller_id, nda_version, nda_sha256, status)
       values ($1, $2, $3, '1', $4, 'approved')`,
        [listing.id, buyer.id, seller.id, nda1!.sha256],
      );
      await client.query("rollback");
    } finally {
      client.release();
    }
  },
);

sqlTest(
  "decide/withdraw/revoke: only the seller or an admin decides and revokes, only the buyer withdraws; strangers learn nothing",
  async () => {
    const listing = await ndaListing();
    const buyer = await createUser(db.pool);
    const anonymousSession: SqlIdentity = {
      role: "authenticated",
      userId: buyer.id,
      anonymous: true,
    };
    const id = await accessRequest(db.pool, listing.id, buyer.id, "pending");
    const expect = async (who: SqlIdentity, sql: string, code: string) => {
      const error = await errorOf(who, sql, [id]);
      assert.equal(error.code, code, `${sql} as ${JSON.stringify(who)}: ${error.message}`);
    };
    await expect(as(buyer), ACTIONS.approve.sql, "42501");
    await expect(as(buyer), ACTIONS.revoke.sql, "42501");
    await expect(as(seller), ACTIONS.withdraw.sql, "42501");
    await expect(as(admin), ACTIONS.withdraw.sql, "42501");
    for (const action of Object.values(ACTIONS)) {
      await expect(as(stranger), action.sql, "PT404");
      await expect({ role: "anon" }, action.sql, "42501");
      await expect(anonymousSession, action.sql, "42501");
    }
    const unknown = await errorOf(as(seller), "select public.decide_listing_access($1, true)", [
      crypto.randomUUID(),
    ]);
    assert.equal(unknown.code, "PT404");
    await expect(as(seller), "select public.decide_listing_access($1, null)", "22023");
    await expect(
      as(seller),
      "select public.decide_listing_access($1, false, repeat('x', 501))",
      "22023",
    );
    assert.equal(await requestStatus(db.pool, id), "pending");
    // An admin decides for the seller, and revokes.
    await callAs(as(admin), ACTIONS.approve.sql, [id]);
    await callAs(as(admin), ACTIONS.revoke.sql, [id]);
    const { rows } = await db.pool.query(
      "select status, decided_by, revoked_by, revoke_reason from public.listing_access_requests where id = $1",
      [id],
    );
    assert.deepEqual(rows[0], {
      status: "revoked",
      decided_by: admin.id,
      revoked_by: admin.id,
      revoke_reason: "Changed my mind",
    });
  },
);

sqlTest(
  "listing access: a pending request past its 14 days cannot be decided or withdrawn; the daily sweep expires it and tells the buyer",
  async () => {
    const listing = await ndaListing();
    const buyer = await createUser(db.pool);
    const lapsed = await accessRequest(db.pool, listing.id, buyer.id, "pending");
    const fresh = await accessRequest(
      db.pool,
      listing.id,
      (await createUser(db.pool)).id,
      "pending",
    );
    await lapseRequest(db.pool, lapsed);
    for (
      const [sql, who] of [[ACTIONS.approve.sql, as(seller)], [
        ACTIONS.withdraw.sql,
        as(buyer),
      ]] as const
    ) {
      const error = await errorOf(who, sql, [lapsed]);
      assert.equal(error.code, "PT409");
      assert.match(error.message, /expired at/);
    }
    // A decision in progress holds its request: the sweep passes it by and takes it next time.
    const holder = await db.pool.connect();
    try {
      await holder.query("begin");
      await holder.query("select 1 from public.listing_access_requests where id = $1 for update", [
        lapsed,
      ]);
      const { rows: skipped } = await db.pool.query(
        "select public.expire_listing_access_requests() as n",
      );
      assert.equal(skipped[0].n, 0);
    } finally {
      await holder.query("rollback");
      holder.release();
    }
    const { rows } = await db.pool.query("select public.expire_listing_access_requests() as n");
    assert.equal(rows[0].n, 1);
    assert.equal(await requestStatus(db.pool, lapsed), "expired");
    assert.equal(await requestStatus(db.pool, fresh), "pending");
    assert.deepEqual((await queuedNotices(db.pool, lapsed)).map((n) => [n.kind, n.user_id]), [
      ["listing_access_expired", buyer.id],
    ]);
    const again = await db.pool.query("select public.expire_listing_access_requests() as n");
    assert.equal(again.rows[0].n, 0, "a second sweep changes nothing");
  },
);

sqlTest(
  "listing access races: an approve racing a withdraw ends in one state; two approves decide once",
  async () => {
    for (let round = 0; round < 6; round++) {
      const listing = await ndaListing();
      const buyer = await createUser(db.pool);
      const id = await accessRequest(db.pool, listing.id, buyer.id, "pending");
      const [approve, withdraw] = await raceCalls(db.url, [
        { who: as(seller), sql: ACTIONS.approve.sql, params: [id] },
        { who: as(buyer), sql: ACTIONS.withdraw.sql, params: [id] },
      ]);
      const codes = [settledCode(approve!), settledCode(withdraw!)];
      assert.equal(codes.filter((c) => c === undefined).length, 1, JSON.stringify(codes));
      assert.equal(codes.filter((c) => c === "PT409").length, 1, JSON.stringify(codes));
      const status = await requestStatus(db.pool, id);
      assert.equal(status, codes[0] === undefined ? "approved" : "withdrawn");
      const kinds = (await queuedNotices(db.pool, id)).map((n) => n.kind);
      assert.deepEqual(kinds, status === "approved" ? ["listing_access_approved"] : []);
      const conversations = await count(
        "select count(*) from public.conversations where listing_id = $1",
        [listing.id],
      );
      assert.equal(conversations, status === "approved" ? 1 : 0, "approval opens the conversation");
    }
    const listing = await ndaListing();
    const buyer = await createUser(db.pool);
    const id = await accessRequest(db.pool, listing.id, buyer.id, "pending");
    const results = await raceCalls(db.url, [
      { who: as(seller), sql: ACTIONS.approve.sql, params: [id] },
      { who: as(admin), sql: ACTIONS.approve.sql, params: [id] },
      { who: as(seller), sql: ACTIONS.decline.sql, params: [id] },
    ]);
    assert.equal(results.filter((r) => r.status === "fulfilled").length, 1);
    assert.deepEqual(results.filter((r) => r.status === "rejected").map(settledCode), [
      "PT409",
      "PT409",
    ]);
    assert.equal((await queuedNotices(db.pool, id)).length, 1);

    // Decisions on one listing for different buyers, all at once: each lands, none
    // deadlocks, and the listing's access_buyers holds exactly the approved ones.
    const busy = await ndaListing();
    const buyers = [
      await createUser(db.pool),
      await createUser(db.pool),
      await createUser(db.pool),
      await createUser(db.pool),
    ];
    const requests: string[] = [];
    for (const b of buyers) requests.push(await accessRequest(db.pool, busy.id, b.id, "pending"));
    const approved = await accessRequest(
      db.pool,
      busy.id,
      (await createUser(db.pool)).id,
      "approved",
    );
    const decisions = await raceCalls(db.url, [
      { who: as(seller), sql: ACTIONS.approve.sql, params: [requests[0]] },
      { who: as(admin), sql: ACTIONS.approve.sql, params: [requests[1]] },
      { who: as(seller), sql: ACTIONS.decline.sql, params: [requests[2]] },
      { who: as(buyers[3]!), sql: ACTIONS.withdraw.sql, params: [requests[3]] },
      { who: as(seller), sql: ACTIONS.revoke.sql, params: [approved] },
    ]);
    assert.deepEqual(decisions.map(settledCode), [
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
    const { rows: [after] } = await db.pool.query<{ access_buyers: string[] }>(
      "select access_buyers from public.listings where id = $1",
      [busy.id],
    );
    assert.deepEqual(after!.access_buyers.toSorted(), [buyers[0]!.id, buyers[1]!.id].toSorted());
    assert.deepEqual(await accessBuyersOutOfSync(db.pool), []);
  },
);

// -----------------------------------------------------------------------------
// RLS, realtime, offers
// -----------------------------------------------------------------------------

sqlTest(
  "listing_access_requests RLS: the buyer, the seller and admins read a request; visitors, strangers and anonymous sessions do not; nobody writes",
  async () => {
    const listing = await ndaListing();
    const buyer = await createUser(db.pool);
    const id = await callAs<string>(as(buyer, { "cf-connecting-ip": "198.51.100.4" }), REQUEST, [
      listing.id,
      "1",
      "Hi",
    ]);
    const readers: Array<[string, SqlIdentity, boolean, boolean]> = [
      // who, identity, reads the request, reads the acceptance's address
      ["the buyer", as(buyer), true, true],
      ["the seller", as(seller), true, false],
      ["an admin", as(admin), true, true],
      ["a stranger", as(stranger), false, false],
      [
        "an anonymous session",
        { role: "authenticated", userId: crypto.randomUUID(), anonymous: true },
        false,
        false,
      ],
      [
        "an anonymous session of the admin's id",
        { role: "authenticated", userId: admin.id, anonymous: true },
        false,
        false,
      ],
    ];
    for (const [name, who, readsRequest, readsAddress] of readers) {
      await asRole(db.pool, who, async (c) => {
        const requests = await c.query(
          "select id from public.listing_access_requests where id = $1",
          [id],
        );
        assert.equal(requests.rows.length, readsRequest ? 1 : 0, name);
        const addresses = await c.query(
          "select client_address from public.nda_acceptance_addresses where request_id = $1",
          [id],
        );
        assert.deepEqual(
          addresses.rows,
          readsAddress ? [{ client_address: "198.51.100.4" }] : [],
          name,
        );
        await rejectsWith(
          c,
          "42501",
          "update public.listing_access_requests set status = 'approved' where id = $1",
          [id],
          name,
        );
        await rejectsWith(c, "42501", "delete from public.listing_access_requests where id = $1", [
          id,
        ], name);
        await rejectsWith(
          c,
          "42501",
          `insert into public.listing_access_requests (listing_id, buyer_id, seller_id, nda_version, nda_sha256)
         values ($1, $2, $3, '1', $4)`,
          [listing.id, stranger.id, seller.id, nda1!.sha256],
          name,
        );
        await rejectsWith(
          c,
          "42501",
          "delete from public.nda_acceptance_addresses where request_id = $1",
          [id],
          name,
        );
      });
    }
    await asRole(db.pool, { role: "anon" }, async (c) => {
      await rejectsWith(c, "42501", "select * from public.listing_access_requests");
      await rejectsWith(c, "42501", "select * from public.nda_acceptance_addresses");
    });
  },
);

sqlTest(
  "listing access realtime: each new request and status change is pushed to the buyer and the seller, and to nobody else",
  async () => {
    const listing = await ndaListing();
    const buyer = await createUser(db.pool);
    const id = await request(buyer, listing.id, "Hello");
    const topics = async (user: TestUser) =>
      (await messagesFor(db.pool, user.id)).filter((m) =>
        m.payload.table === "listing_access_requests" && m.payload.record?.id === id
      ).map((m) => [m.event, m.payload.record?.status]);
    await callAs(as(seller), ACTIONS.approve.sql, [id]);
    await callAs(as(seller), ACTIONS.revoke.sql, [id]);
    const expected = [["INSERT", "pending"], ["UPDATE", "approved"], ["UPDATE", "revoked"]];
    assert.deepEqual(await topics(buyer), expected);
    assert.deepEqual(await topics(seller), expected);
    assert.deepEqual(await topics(stranger), []);
    assert.deepEqual(await topics(admin), []);
    const pushed = (await messagesFor(db.pool, seller.id)).find((m) =>
      m.payload.table === "listing_access_requests"
    );
    assert.equal(pushed?.private, true);
    assert.equal(
      JSON.stringify(pushed).includes("client_address"),
      false,
      "the address is not pushed",
    );
  },
);

sqlTest(
  "offers: an offer on a confidential listing needs approved access (42501 with a hint); an open listing needs none",
  async () => {
    const listing = await ndaListing();
    const openListing = await createListing(db.pool, seller.id, "approved");
    const insert =
      "insert into public.offers (listing_id, amount, currency) values ($1, 100, 'USD') returning id";
    for (const status of ["none", "pending", "declined", "revoked", "approved"] as const) {
      const buyer = await createUser(db.pool);
      if (status !== "none") {
        await accessRequest(db.pool, listing.id, buyer.id, status as AccessRequestStatus);
      }
      const result = await asRole(db.pool, as(buyer), async (c: pg.PoolClient) => {
        try {
          await c.query(insert, [listing.id]);
          return null;
        } catch (error) {
          return error as { code: string; hint?: string };
        }
      });
      if (status === "approved") {
        assert.equal(result, null, "approved access: the offer is made");
      } else {
        assert.equal(result?.code, "42501", status);
        assert.match(result?.hint ?? "", /request_listing_access/);
      }
      await asRole(db.pool, as(buyer), async (c) => {
        await c.query(insert, [openListing.id]);
      });
    }
  },
);
