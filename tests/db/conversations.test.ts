import assert from "node:assert/strict";
import { CONVERSATION_LIMITS, MESSAGE_MAX_CHARS } from "../../shared/conversations.ts";
import { createTestDatabase, sqlTest } from "../support/db.ts";
import {
  accessBuyersOutOfSync,
  accessRequest,
  lapseRequest,
  makeConfidential,
  queuedNotices,
  requestStatus,
} from "../support/listing_access.ts";
import { notificationsOf, setPreference } from "../support/notifications.ts";
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
import { createListing, rejectsWith } from "./core_fixtures.ts";

const db = await createTestDatabase();

const seller = await createUser(db.pool);
const admin = await createUser(db.pool, { admin: true });
const stranger = await createUser(db.pool);

function as(user: TestUser): SqlIdentity {
  return { role: "authenticated", userId: user.id };
}

const ANONYMOUS: SqlIdentity = {
  role: "authenticated",
  userId: crypto.randomUUID(),
  anonymous: true,
};

/** Runs `sql` as `who` and commits; answers the first column of its first row. */
function callAs<T = unknown>(who: SqlIdentity, sql: string, params: unknown[] = []): Promise<T> {
  return valueAs<T>(db.pool, who, sql, params);
}

/** The error `sql` fails with as `who` (nothing is committed). */
function errorOf(who: SqlIdentity, sql: string, params: unknown[] = []) {
  return failureAs(db.pool, who, sql, params);
}

async function count(sql: string, params: unknown[] = []): Promise<number> {
  const { rows } = await db.pool.query<{ n: number }>(`select (${sql})::int as n`, params);
  return rows[0]!.n;
}

const START = "select public.start_conversation($1)";

/** The conversation of `listingId` and `buyerId`, opened as the service connection does. */
async function openConversation(listingId: string, buyerId: string): Promise<string> {
  const { rows } = await db.pool.query<{ id: string }>(
    "select o.id from public.open_conversation($1, $2, $3) o",
    [listingId, buyerId, seller.id],
  );
  return rows[0]!.id;
}
const SEND = "select public.send_message($1, $2)";

/** A new buyer and their conversation on a new open listing of the seller. */
async function conversation(): Promise<{ id: string; buyer: TestUser; listingId: string }> {
  const listing = await createListing(db.pool, seller.id, "approved");
  const buyer = await createUser(db.pool);
  const id = await callAs<string>(as(buyer), START, [listing.id]);
  return { id, buyer, listingId: listing.id };
}

async function send(who: TestUser, conversationId: string, body: string): Promise<string> {
  return await callAs<string>(as(who), SEND, [conversationId, body]);
}

async function withLimit(name: string, maxHits: number, fn: () => Promise<void>): Promise<void> {
  const { rows } = await db.pool.query<{ max_hits: number }>(
    "select max_hits from public.client_limits where name = $1",
    [name],
  );
  await db.pool.query("update public.client_limits set max_hits = $2 where name = $1", [
    name,
    maxHits,
  ]);
  try {
    await fn();
  } finally {
    await db.pool.query("update public.client_limits set max_hits = $2 where name = $1", [
      name,
      rows[0]!.max_hits,
    ]);
  }
}

// -----------------------------------------------------------------------------
// start_conversation()
// -----------------------------------------------------------------------------

sqlTest(
  "start_conversation(): the buyer's one conversation per listing, the same id every time; refused to the seller, visitors, anonymous sessions and on unknown or unpublished listings",
  async () => {
    const { id, buyer, listingId } = await conversation();
    assert.equal(await callAs(as(buyer), START, [listingId]), id);
    const { rows } = await db.pool.query(
      "select listing_id, buyer_id, seller_id, last_message_at, closed_at from public.conversations where id = $1",
      [id],
    );
    assert.deepEqual(rows[0], {
      listing_id: listingId,
      buyer_id: buyer.id,
      seller_id: seller.id,
      last_message_at: null,
      closed_at: null,
    });
    // Once started, it stays the buyer's conversation whatever becomes of the listing.
    await db.pool.query("update public.listings set review_status = 'archived' where id = $1", [
      listingId,
    ]);
    assert.equal(await callAs(as(buyer), START, [listingId]), id);

    const draft = await createListing(db.pool, seller.id, "draft");
    const archived = await createListing(db.pool, seller.id, "archived");
    const open = await createListing(db.pool, seller.id, "approved");
    const before = await count("select count(*) from public.conversations");
    for (
      const [what, who, listing, code] of [
        ["the seller", as(seller), open.id, "42501"],
        ["a visitor", { role: "anon" } as SqlIdentity, open.id, "42501"],
        ["an anonymous session", ANONYMOUS, open.id, "42501"],
        ["an unknown listing", as(stranger), crypto.randomUUID(), "PT404"],
        ["a draft", as(stranger), draft.id, "PT404"],
        ["an archived listing", as(stranger), archived.id, "PT404"],
      ] as const
    ) {
      const error = await errorOf(who, START, [listing]);
      assert.equal(error.code, code, `${what}: ${error.message}`);
    }
    assert.equal(await count("select count(*) from public.conversations"), before);
  },
);

sqlTest(
  "start_conversation(): on a confidential listing only with approved access, which opens it",
  async () => {
    const listing = await createListing(db.pool, seller.id, "approved");
    await makeConfidential(db.pool, listing.id);
    for (const status of ["pending", "declined", "withdrawn", "expired"] as const) {
      const buyer = await createUser(db.pool);
      await accessRequest(db.pool, listing.id, buyer.id, status);
      const error = await errorOf(as(buyer), START, [listing.id]);
      assert.equal(error.code, "42501", status);
      assert.match(error.hint ?? "", /request_listing_access/);
    }
    const buyer = await createUser(db.pool);
    const request = await accessRequest(db.pool, listing.id, buyer.id, "pending");
    assert.equal(
      await count("select count(*) from public.conversations where buyer_id = $1", [buyer.id]),
      0,
    );
    await callAs(as(seller), "select public.decide_listing_access($1, true)", [request]);
    // Revoked access leaves the conversation approval opened (blocking closes it).
    const revokedBuyer = await createUser(db.pool);
    await accessRequest(db.pool, listing.id, revokedBuyer.id, "revoked");
    const kept = await callAs<string>(as(revokedBuyer), START, [listing.id]);
    assert.equal(
      await count("select count(*) from public.conversations where id = $1 and closed_at is null", [
        kept,
      ]),
      1,
    );
    const { rows } = await db.pool.query<{ id: string }>(
      "select id from public.conversations where listing_id = $1 and buyer_id = $2",
      [listing.id, buyer.id],
    );
    assert.equal(rows.length, 1, "approval opened the conversation");
    assert.equal(await callAs(as(buyer), START, [listing.id]), rows[0]!.id);
  },
);

sqlTest(
  "start_conversation(): four starts at once make one conversation, counted once against the limit",
  async () => {
    await withLimit("conversation:per_day", 2, async () => {
      const buyer = await createUser(db.pool);
      const listings = [
        await createListing(db.pool, seller.id, "approved"),
        await createListing(db.pool, seller.id, "approved"),
        await createListing(db.pool, seller.id, "approved"),
      ];
      const results = await raceCalls(
        db.url,
        Array.from({ length: 4 }, () => ({
          who: as(buyer),
          sql: "select public.start_conversation($1) as id",
          params: [listings[0]!.id],
        })),
      );
      const ids = results.map((r) => r.status === "fulfilled" ? r.value[0]!.id : settledCode(r));
      assert.equal(new Set(ids).size, 1, JSON.stringify(ids));
      await callAs(as(buyer), START, [listings[1]!.id]);
      const error = await errorOf(as(buyer), START, [listings[2]!.id]);
      assert.equal(error.code, "PT429", "the third new conversation of the day");
      assert.equal(
        await count("select count(*) from public.conversations where buyer_id = $1", [buyer.id]),
        2,
      );
    });
  },
);

// -----------------------------------------------------------------------------
// send_message()
// -----------------------------------------------------------------------------

sqlTest(
  "send_message(): either participant writes plain text, stored trimmed with its line breaks; the sender's mark moves",
  async () => {
    const { id, buyer } = await conversation();
    const first = await send(buyer, id, "  Hello!\r\n\tIs the\rdomain included?  ");
    const second = await send(seller, id, "Yes.");
    const { rows } = await db.pool.query(
      "select id, sender_id, body from public.messages where conversation_id = $1 order by created_at",
      [id],
    );
    assert.deepEqual(rows, [
      { id: first, sender_id: buyer.id, body: "Hello!\n\tIs the\ndomain included?" },
      { id: second, sender_id: seller.id, body: "Yes." },
    ]);
    const { rows: [marks] } = await db.pool.query(
      `select c.last_message_at = m.created_at as last, c.seller_last_read_at = m.created_at as seller_read,
            c.buyer_last_read_at < m.created_at as buyer_behind
     from public.conversations c join public.messages m on m.id = $2 where c.id = $1`,
      [id, second],
    );
    assert.deepEqual(marks, { last: true, seller_read: true, buyer_behind: true });
    // Exactly the longest allowed message, after trimming.
    await send(buyer, id, ` ${"é".repeat(MESSAGE_MAX_CHARS)} `);
  },
);

sqlTest(
  "send_message(): refused — nothing written — for strangers, admins, visitors, anonymous sessions, empty, long or control-character text, and a closed conversation",
  async () => {
    const { id, buyer } = await conversation();
    const before = await count("select count(*) from public.messages");
    const cases: Array<[string, SqlIdentity, unknown[], string, RegExp]> = [
      ["a stranger", as(stranger), [id, "hi"], "PT404", /does not exist/],
      [
        "an unknown conversation",
        as(buyer),
        [crypto.randomUUID(), "hi"],
        "PT404",
        /does not exist/,
      ],
      ["an admin", as(admin), [id, "hi"], "42501", /only the buyer and the seller/],
      ["a visitor", { role: "anon" }, [id, "hi"], "42501", /permission denied/],
      ["an anonymous session", ANONYMOUS, [id, "hi"], "42501", /anonymous session/],
      ["an empty message", as(buyer), [id, ""], "22023", /it is empty/],
      ["white space", as(buyer), [id, " \n\t \r\n "], "22023", /it is empty/],
      ["null", as(buyer), [id, null], "22023", /it is empty/],
      [
        "a long message",
        as(buyer),
        [id, "x".repeat(MESSAGE_MAX_CHARS + 1)],
        "22023",
        /4001 characters long/,
      ],
      ["a bell", as(buyer), [id, "ding\u0007"], "22023", /control character/],
      ["an escape", as(buyer), [id, "\u001b[31mred"], "22023", /control character/],
      ["DEL", as(buyer), [id, "a\u007fb"], "22023", /control character/],
      ["a C1 control", as(buyer), [id, "a\u0085b"], "22023", /control character/],
    ];
    for (const [what, who, params, code, message] of cases) {
      const error = await errorOf(who, SEND, params);
      assert.equal(error.code, code, `${what}: ${error.message}`);
      assert.match(error.message, message, what);
    }
    // NUL never reaches the function: PostgREST decodes the JSON body into text,
    // which PostgreSQL refuses (22P05; HTTP 400) before the call.
    const nul = await errorOf(
      as(buyer),
      `select public.send_message(a.p_conversation, a.p_body)
     from json_to_record($1::json) as a(p_conversation uuid, p_body text)`,
      [JSON.stringify({ p_conversation: id, p_body: "a\u0000b" })],
    );
    assert.equal(nul.code, "22P05");
    await callAs(as(seller), "select public.block_conversation($1)", [id]);
    for (const who of [buyer, seller]) {
      const error = await errorOf(as(who), SEND, [id, "still there?"]);
      assert.equal(error.code, "PT409");
      assert.match(error.message, /was closed on/);
    }
    assert.equal(await count("select count(*) from public.messages"), before);
  },
);

sqlTest(
  "send_message(): beyond message:per_minute or message:per_day the call is refused with PT429 and writes nothing",
  async () => {
    for (const limit of ["message:per_minute", "message:per_day"]) {
      await withLimit(limit, 3, async () => {
        const { id, buyer } = await conversation();
        for (let i = 0; i < 3; i++) await send(buyer, id, `message ${i}`);
        const error = await errorOf(as(buyer), SEND, [id, "one too many"]);
        assert.equal(error.code, "PT429", limit);
        assert.match(error.message, /too many; try again in \d+ seconds/);
        assert.match(error.hint ?? "", new RegExp(`client_limits ${limit}`));
        assert.equal(
          await count("select count(*) from public.messages where conversation_id = $1", [id]),
          3,
        );
        // The other participant has limits of their own.
        await send(seller, id, "I can still answer");
      });
    }
    assert.equal(CONVERSATION_LIMITS.messagesPerMinute, 20);
  },
);

sqlTest(
  "messages never change: no client writes them, and not even the service connection edits or deletes one",
  async () => {
    const { id, buyer } = await conversation();
    const message = await send(buyer, id, "Original");
    for (const who of [as(buyer), as(seller), as(admin)]) {
      await asRole(db.pool, who, async (c) => {
        await rejectsWith(c, "42501", "update public.messages set body = 'Edited' where id = $1", [
          message,
        ]);
        await rejectsWith(c, "42501", "delete from public.messages where id = $1", [message]);
        await rejectsWith(
          c,
          "42501",
          "insert into public.messages (conversation_id, sender_id, body) values ($1, $2, 'Forged')",
          [id, buyer.id],
        );
        await rejectsWith(
          c,
          "42501",
          "update public.conversations set closed_at = now() where id = $1",
          [id],
        );
      });
    }
    const client = await db.pool.connect();
    try {
      await client.query("begin");
      await rejectsWith(
        client,
        "PT409",
        "update public.messages set body = 'Edited' where id = $1",
        [message],
      );
      await rejectsWith(client, "PT409", "delete from public.messages where id = $1", [message]);
    } finally {
      await client.query("rollback");
      client.release();
    }
  },
);

// -----------------------------------------------------------------------------
// Read marks and the one in-app notice
// -----------------------------------------------------------------------------

sqlTest(
  "the conversation's in-app notice: one per recipient, rewritten by each message, read with the conversation",
  async () => {
    const { id, buyer } = await conversation();
    const notice = async (user: TestUser) =>
      (await notificationsOf(db.pool, user.id)).filter((n) =>
        n.dedupe_key === `conversation:${id}`
      );
    await send(buyer, id, "First question");
    await send(buyer, id, "Second question, <b>bold</b>?");
    const [first, ...others] = await notice(seller);
    assert.equal(others.length, 0, "one notice, not one per message");
    assert.equal(first!.type, "conversations");
    assert.match(first!.title, /^New message about Listing /);
    assert.equal(
      first!.body,
      'The buyer wrote: "Second question, <b>bold</b>?" (2 unread messages)',
    );
    assert.equal(first!.link, `/conversations/${id}`);
    assert.equal(first!.data.unread, 2);
    assert.equal(first!.read_at, null);
    assert.deepEqual(await notice(buyer), [], "the sender has nothing unread");

    const mark = await callAs<Date>(as(seller), "select public.mark_conversation_read($1)", [id]);
    assert.ok(mark instanceof Date);
    const [read] = await notice(seller);
    assert.notEqual(read!.read_at, null, "reading the conversation reads its notice");
    assert.equal(read!.id, first!.id);

    await send(buyer, id, "Third");
    const [again] = await notice(seller);
    assert.equal(again!.id, first!.id, "the same notice, rewritten");
    assert.equal(again!.read_at, null);
    assert.equal(again!.body, 'The buyer wrote: "Third"');
    // The seller answers: the buyer's notice appears; the seller's is read (they wrote after reading).
    await send(seller, id, "Answer");
    assert.equal((await notice(buyer)).length, 1);
    assert.notEqual((await notice(seller))[0]!.read_at, null);

    // In-app switched off: no notice is written.
    const quiet = await conversation();
    await setPreference(db.pool, seller.id, "conversations", { email: true, inApp: false });
    try {
      await send(quiet.buyer, quiet.id, "Anyone?");
      assert.deepEqual(
        (await notificationsOf(db.pool, seller.id)).filter((n) =>
          n.dedupe_key === `conversation:${quiet.id}`
        ),
        [],
      );
    } finally {
      await db.pool.query("delete from public.notification_preferences where user_id = $1", [
        seller.id,
      ]);
    }
    // Only a participant moves a mark.
    for (
      const [who, code] of [[as(stranger), "PT404"], [as(admin), "42501"], [
        ANONYMOUS,
        "42501",
      ]] as const
    ) {
      assert.equal(
        (await errorOf(who, "select public.mark_conversation_read($1)", [id])).code,
        code,
      );
    }
  },
);

sqlTest(
  "conversation e-mail cadence: a message queues one e-mail 15 minutes on; more messages join it; nothing is due once read",
  async () => {
    const { id, buyer } = await conversation();
    await send(buyer, id, "Hello");
    await send(buyer, id, "Hello again");
    const queued = await queuedNotices(db.pool, id);
    assert.deepEqual(queued.map((q) => [q.kind, q.user_id, q.status]), [[
      "conversation_unread",
      seller.id,
      "pending",
    ]]);
    const { rows: [due] } = await db.pool.query(
      `select round(extract(epoch from q.due_at - m.created_at))::int as seconds
     from public.notice_queue q, public.messages m
     where q.subject_id = $1 and m.conversation_id = $1 order by m.created_at limit 1`,
      [id],
    );
    assert.equal(due!.seconds, 15 * 60, "15 minutes after the first unread message");
    await callAs(as(seller), "select public.mark_conversation_read($1)", [id]);
    const { rows } = await db.pool.query(
      "select d.due_at as due from public.conversation_email_due($1, $2) d",
      [
        id,
        seller.id,
      ],
    );
    assert.equal(rows[0]!.due, null, "read: nothing to e-mail");
  },
);

// -----------------------------------------------------------------------------
// block_conversation() and report_conversation()
// -----------------------------------------------------------------------------

sqlTest(
  "block_conversation(): either participant closes it for good; a seller's block ends the buyer's access",
  async () => {
    const byBuyer = await conversation();
    await callAs(as(byBuyer.buyer), "select public.block_conversation($1, $2)", [
      byBuyer.id,
      " Spam ",
    ]);
    const { rows } = await db.pool.query(
      "select closed_by, close_reason, closed_at is not null as closed from public.conversations where id = $1",
      [byBuyer.id],
    );
    assert.deepEqual(rows[0], { closed_by: byBuyer.buyer.id, close_reason: "Spam", closed: true });
    const again = await errorOf(as(seller), "select public.block_conversation($1)", [byBuyer.id]);
    assert.equal(again.code, "PT409");
    // Reading and reporting still work on a closed conversation.
    await callAs(as(seller), "select public.mark_conversation_read($1)", [byBuyer.id]);
    await callAs(as(seller), "select public.report_conversation($1, 'Abusive')", [byBuyer.id]);
    for (
      const [who, code] of [[as(stranger), "PT404"], [as(admin), "42501"], [
        ANONYMOUS,
        "42501",
      ]] as const
    ) {
      const other = await conversation();
      assert.equal(
        (await errorOf(who, "select public.block_conversation($1)", [other.id])).code,
        code,
      );
    }

    // The seller blocks a buyer of a confidential listing: access revoked and the buyer told;
    // a pending request of theirs (on another listing: untouched).
    const listing = await createListing(db.pool, seller.id, "approved");
    await makeConfidential(db.pool, listing.id);
    const buyer = await createUser(db.pool);
    const request = await accessRequest(db.pool, listing.id, buyer.id, "approved");
    const conversationId = await openConversation(listing.id, buyer.id);
    await callAs(as(seller), "select public.block_conversation($1)", [conversationId]);
    const { rows: [after] } = await db.pool.query(
      "select status, revoke_reason from public.listing_access_requests where id = $1",
      [request],
    );
    assert.deepEqual(after, {
      status: "revoked",
      revoke_reason: "The seller blocked the conversation",
    });
    assert.deepEqual(
      await accessBuyersOutOfSync(db.pool),
      [],
      "the block took the buyer off the listing",
    );
    assert.deepEqual((await queuedNotices(db.pool, request)).map((q) => [q.kind, q.user_id]), [
      ["listing_access_revoked", buyer.id],
    ]);
    // A pending request is declined the same way.
    const pendingBuyer = await createUser(db.pool);
    const pending = await accessRequest(db.pool, listing.id, pendingBuyer.id, "pending");
    await callAs(as(seller), "select public.block_conversation($1)", [
      await openConversation(listing.id, pendingBuyer.id),
    ]);
    assert.equal(
      (await db.pool.query("select status from public.listing_access_requests where id = $1", [
        pending,
      ]))
        .rows[0].status,
      "declined",
    );
    // A pending request already past its 14 days is the expiry sweep's, not the block's.
    const lateBuyer = await createUser(db.pool);
    const late = await accessRequest(db.pool, listing.id, lateBuyer.id, "pending");
    await lapseRequest(db.pool, late);
    await callAs(as(seller), "select public.block_conversation($1)", [
      await openConversation(listing.id, lateBuyer.id),
    ]);
    assert.equal(await requestStatus(db.pool, late), "pending", "not declined by the block");
    assert.deepEqual(await queuedNotices(db.pool, late), []);
    await db.pool.query("select public.expire_listing_access_requests()");
    assert.equal(await requestStatus(db.pool, late), "expired");
    assert.deepEqual((await queuedNotices(db.pool, late)).map((q) => q.kind), [
      "listing_access_expired",
    ]);
  },
);

sqlTest(
  "report_conversation(): one report per conversation and reporter, every admin told once",
  async () => {
    const secondAdmin = await createUser(db.pool, { admin: true });
    const { id, buyer } = await conversation();
    const report = await callAs<string>(as(buyer), "select public.report_conversation($1, $2)", [
      id,
      " Asked me to pay outside the platform ",
    ]);
    assert.equal(
      await callAs(as(buyer), "select public.report_conversation($1, 'Again')", [id]),
      report,
      "reporting again answers the first report",
    );
    const { rows } = await db.pool.query(
      "select reporter_id, reason from public.conversation_reports where conversation_id = $1",
      [id],
    );
    assert.deepEqual(rows, [{
      reporter_id: buyer.id,
      reason: "Asked me to pay outside the platform",
    }]);
    const admins = (await db.pool.query<{ user_id: string }>(
      "select user_id from public.user_roles where role = 'admin' order by user_id",
    )).rows.map((r) => r.user_id);
    assert.ok(admins.includes(secondAdmin.id));
    assert.deepEqual(
      (await queuedNotices(db.pool, report)).map((q) => [q.kind, q.user_id]).sort(),
      admins.map((a) => ["conversation_reported", a]).sort(),
    );
    // The other side's report is a report of its own.
    const second = await callAs<string>(
      as(seller),
      "select public.report_conversation($1, 'Rude')",
      [id],
    );
    assert.notEqual(second, report);
    for (
      const [who, params, code] of [
        [as(stranger), [id, "x"], "PT404"],
        [as(admin), [id, "x"], "42501"],
        [ANONYMOUS, [id, "x"], "42501"],
        [as(buyer), [(await conversation()).id, "x"], "PT404"],
      ] as const
    ) {
      const error = await errorOf(who, "select public.report_conversation($1, $2)", [...params]);
      assert.equal(error.code, code, JSON.stringify(params));
    }
    const fresh = await conversation();
    const empty = await errorOf(as(fresh.buyer), "select public.report_conversation($1, $2)", [
      fresh.id,
      " \n ",
    ]);
    assert.equal(empty.code, "22023");
    await withLimit("conversation_report:per_day", 1, async () => {
      const reporter = await conversation();
      await callAs(as(reporter.buyer), "select public.report_conversation($1, 'One')", [
        reporter.id,
      ]);
      const other = await createListing(db.pool, seller.id, "approved");
      const second = await callAs<string>(as(reporter.buyer), START, [other.id]);
      const limited = await errorOf(
        as(reporter.buyer),
        "select public.report_conversation($1, 'Two')",
        [second],
      );
      assert.equal(limited.code, "PT429");
    });
  },
);

// -----------------------------------------------------------------------------
// RLS and realtime
// -----------------------------------------------------------------------------

sqlTest(
  "conversations RLS: the participants and admins read a conversation, its messages and (admins, the reporter) its reports; nobody else, whatever they guess",
  async () => {
    const { id, buyer } = await conversation();
    await send(buyer, id, "Private question");
    await callAs(as(buyer), "select public.report_conversation($1, 'Check this')", [id]);
    const readers: Array<[string, SqlIdentity, number, number]> = [
      // who, identity, conversations and messages read, reports read
      ["the buyer", as(buyer), 1, 1],
      ["the seller", as(seller), 1, 0],
      ["an admin", as(admin), 1, 1],
      ["a stranger", as(stranger), 0, 0],
      ["an anonymous session", ANONYMOUS, 0, 0],
      [
        "an anonymous session of the buyer's id",
        { role: "authenticated", userId: buyer.id, anonymous: true },
        1,
        1,
      ],
      [
        "an anonymous session of the admin's id",
        { role: "authenticated", userId: admin.id, anonymous: true },
        0,
        0,
      ],
    ];
    for (const [name, who, reads, reports] of readers) {
      await asRole(db.pool, who, async (c) => {
        assert.equal(
          (await c.query("select id from public.conversations where id = $1", [id])).rows.length,
          reads,
          name,
        );
        assert.equal(
          (await c.query("select id from public.messages where conversation_id = $1", [id])).rows
            .length,
          reads,
          name,
        );
        assert.equal(
          (await c.query("select id from public.conversation_reports where conversation_id = $1", [
            id,
          ])).rows.length,
          reports,
          name,
        );
        await rejectsWith(
          c,
          "42501",
          "insert into public.conversations (listing_id, buyer_id, seller_id) select c.listing_id, $2, c.seller_id from public.conversations c where c.id = $1",
          [id, stranger.id],
          name,
        );
        await rejectsWith(c, "42501", "delete from public.conversations where id = $1", [id], name);
        await rejectsWith(
          c,
          "42501",
          "insert into public.conversation_reports (conversation_id, reporter_id, reason) values ($1, $2, 'x')",
          [id, stranger.id],
          name,
        );
      });
    }
    await asRole(db.pool, { role: "anon" }, async (c) => {
      for (const table of ["conversations", "messages", "conversation_reports"]) {
        await rejectsWith(c, "42501", `select * from public.${table}`);
      }
    });
  },
);

sqlTest(
  "conversations realtime: each message, the new conversation and its closing reach both participants' topics and nobody else's; read marks are not pushed",
  async () => {
    const { id, buyer } = await conversation();
    const message = await send(buyer, id, "Pushed to both");
    await callAs(as(seller), "select public.mark_conversation_read($1)", [id]);
    await callAs(as(seller), "select public.block_conversation($1)", [id]);
    const pushes = async (user: TestUser) =>
      (await messagesFor(db.pool, user.id)).filter((m) =>
        (m.payload.table === "messages" && m.payload.record?.conversation_id === id) ||
        (m.payload.table === "conversations" && m.payload.record?.id === id)
      ).map((
        m,
      ) => [
        m.payload.table,
        m.event,
        m.payload.table === "messages"
          ? m.payload.record?.id
          : m.payload.record?.closed_at !== null,
      ]);
    const expected = [["conversations", "INSERT", false], ["messages", "INSERT", message], [
      "conversations",
      "UPDATE",
      true,
    ]];
    assert.deepEqual(await pushes(buyer), expected);
    assert.deepEqual(await pushes(seller), expected);
    assert.deepEqual(await pushes(stranger), []);
    assert.deepEqual(await pushes(admin), []);
    const pushed = (await messagesFor(db.pool, seller.id)).find((m) =>
      m.payload.record?.id === message
    );
    assert.equal(pushed?.private, true);
    assert.equal(pushed?.payload.record?.body, "Pushed to both");
  },
);

sqlTest(
  "conversation races: messages racing a block either land before it or are refused; none lands after",
  async () => {
    for (let round = 0; round < 4; round++) {
      const { id, buyer } = await conversation();
      const results = await raceCalls(db.url, [
        { who: as(buyer), sql: SEND, params: [id, "one"] },
        { who: as(seller), sql: SEND, params: [id, "two"] },
        { who: as(seller), sql: "select public.block_conversation($1)", params: [id] },
        { who: as(buyer), sql: SEND, params: [id, "three"] },
      ]);
      assert.equal(results[2]!.status, "fulfilled", "the block always succeeds");
      const { rows: messages } = await db.pool.query<{ body: string }>(
        "select body from public.messages where conversation_id = $1",
        [id],
      );
      for (const [i, body] of (["one", "two", null, "three"] as const).entries()) {
        if (body === null) continue;
        const stored = messages.some((m) => m.body === body);
        if (results[i]!.status === "fulfilled") {
          assert.ok(stored, `${body} was accepted and is in the thread`);
        } else {
          assert.equal(settledCode(results[i]!), "PT409", body);
          assert.ok(!stored, `${body} was refused and is not in the thread`);
        }
      }
      // After the block, nothing more gets in.
      assert.equal((await errorOf(as(buyer), SEND, [id, "late"])).code, "PT409");
    }
  },
);

sqlTest(
  "conversation races: a seller's block racing their approval of the buyer's request ends with the conversation closed and the buyer without access, whichever lands first",
  async () => {
    for (let round = 0; round < 6; round++) {
      const listing = await createListing(db.pool, seller.id, "approved");
      await makeConfidential(db.pool, listing.id);
      const buyer = await createUser(db.pool);
      const request = await accessRequest(db.pool, listing.id, buyer.id, "pending");
      const id = await openConversation(listing.id, buyer.id);
      const [approve, block] = await raceCalls(db.url, [
        {
          who: as(seller),
          sql: "select public.decide_listing_access($1, true)",
          params: [request],
        },
        { who: as(seller), sql: "select public.block_conversation($1)", params: [id] },
      ]);
      assert.equal(block!.status, "fulfilled", "the block always succeeds");
      const { rows: [after] } = await db.pool.query<{ status: string; closed: boolean }>(
        `select r.status, c.closed_at is not null as closed
         from public.listing_access_requests r, public.conversations c
         where r.id = $1 and c.id = $2`,
        [request, id],
      );
      // Approved first, then revoked by the block; or declined by the block, and the
      // approval refused.
      if (approve!.status === "fulfilled") {
        assert.deepEqual(after, { status: "revoked", closed: true });
        // Queued in either order (each at its transaction's start); the queue tells
        // the buyer what still holds when it runs.
        assert.deepEqual((await queuedNotices(db.pool, request)).map((q) => q.kind).toSorted(), [
          "listing_access_approved",
          "listing_access_revoked",
        ]);
      } else {
        assert.equal(settledCode(approve!), "PT409");
        assert.deepEqual(after, { status: "declined", closed: true });
        assert.deepEqual((await queuedNotices(db.pool, request)).map((q) => q.kind), [
          "listing_access_declined",
        ]);
      }
      assert.equal(
        await count("select count(*) from public.conversations where listing_id = $1", [
          listing.id,
        ]),
        1,
        "the approval did not open a second conversation",
      );
      assert.deepEqual(await accessBuyersOutOfSync(db.pool), []);
      const { rows: [listed] } = await db.pool.query<{ has: boolean }>(
        "select $2::uuid = any(access_buyers) as has from public.listings where id = $1",
        [listing.id, buyer.id],
      );
      assert.equal(listed!.has, false, "the buyer is not among the listing's access buyers");
    }
  },
);
