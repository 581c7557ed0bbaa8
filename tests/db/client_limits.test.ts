import assert from "node:assert/strict";
import { createTestDatabase, sqlTest } from "../support/db.ts";
import { asRole, createUser, type SqlIdentity, type TestUser } from "../support/sql.ts";
import { createListing, rejectsWith } from "./core_fixtures.ts";

const db = await createTestDatabase();

const SEND = `insert into public.contact_messages (name, email, subject, message)
  values ($1, $2, $3, $4)`;

/** A visitor whose requests come from `address` (through x-forwarded-for). */
const visitorFrom = (address: string): SqlIdentity => ({
  role: "anon",
  headers: { "x-forwarded-for": address },
});

/** A fresh typed address, so the per-sender limit never decides. */
const typed = () => `bot-${crypto.randomUUID().slice(0, 8)}@example.test`;

/** An error matcher: SQLSTATE `code` and a message matching `message`. */
function failsWith(code: string, message: RegExp) {
  return (error: unknown) => {
    const e = error as { code?: string; message?: string };
    assert.equal(e.code, code, e.message ?? String(error));
    assert.match(e.message ?? "", message);
    return true;
  };
}

/** `request_client_address()` as a client sending `headers`. */
async function addressWith(headers?: Record<string, string>): Promise<string | null> {
  return await asRole(db.pool, { role: "anon", headers }, async (c) => {
    const { rows } = await c.query<{ a: string | null }>(
      "select public.request_client_address() as a",
    );
    return rows[0]!.a;
  });
}

/** Sends a contact message as `who` and commits, as a PostgREST insert would. */
async function send(who: SqlIdentity, email = typed()): Promise<void> {
  await asRole(db.pool, who, async (c) => {
    await c.query(SEND, ["Bot", email, null, "Buy now"]);
    await c.query("commit");
  });
}

async function messagesFrom(email: string): Promise<number> {
  const { rows } = await db.pool.query<{ n: number }>(
    "select count(*)::integer as n from public.contact_messages where email = $1",
    [email],
  );
  return rows[0]!.n;
}

async function messageCount(): Promise<number> {
  const { rows } = await db.pool.query<{ n: number }>(
    "select count(*)::integer as n from public.contact_messages",
  );
  return rows[0]!.n;
}

/** Sets limit `name` to `maxHits` and forgets the windows of `keys`; answers a restore. */
async function lowerLimit(
  name: string,
  maxHits: number,
  keys: string,
): Promise<() => Promise<void>> {
  const { rows } = await db.pool.query<{ max_hits: number }>(
    "select max_hits from public.client_limits where name = $1",
    [name],
  );
  const before = rows[0]!.max_hits;
  await db.pool.query("update public.client_limits set max_hits = $2 where name = $1", [
    name,
    maxHits,
  ]);
  await db.pool.query("delete from public.rate_limits where key like $1", [keys]);
  return async () => {
    await db.pool.query("update public.client_limits set max_hits = $2 where name = $1", [
      name,
      before,
    ]);
    await db.pool.query("delete from public.rate_limits where key like $1", [keys]);
  };
}

async function alertsOf(userId: string) {
  const { rows } = await db.pool.query<{
    title: string;
    body: string;
    link: string | null;
    data: Record<string, unknown>;
    dedupe_key: string | null;
  }>(
    `select title, body, link, data, dedupe_key from public.notifications
     where user_id = $1 and type = 'admin_alerts' order by created_at, id`,
    [userId],
  );
  return rows;
}

sqlTest("request_client_address(): each header, in order of trust", async () => {
  assert.equal(await addressWith({ "cf-connecting-ip": "198.51.100.1" }), "198.51.100.1");
  assert.equal(await addressWith({ "x-real-ip": " 198.51.100.2 " }), "198.51.100.2");
  assert.equal(
    await addressWith({ "x-forwarded-for": " 198.51.100.3 , 10.0.0.1, 10.0.0.2" }),
    "198.51.100.3",
    "the first entry of x-forwarded-for, trimmed",
  );
  assert.equal(
    await addressWith({
      "x-forwarded-for": "198.51.100.13",
      "x-real-ip": "198.51.100.12",
      "cf-connecting-ip": "198.51.100.11",
    }),
    "198.51.100.11",
    "cf-connecting-ip first",
  );
  assert.equal(
    await addressWith({ "x-forwarded-for": "198.51.100.13", "x-real-ip": "198.51.100.12" }),
    "198.51.100.12",
    "then x-real-ip",
  );
  assert.equal(await addressWith({ "x-real-ip": "2001:DB8:0::0:1" }), "2001:db8::1", "canonical");
  assert.equal(await addressWith({ "x-real-ip": "::ffff:198.51.100.6" }), "198.51.100.6");
});

sqlTest("request_client_address(): forged or missing values count as no address", async () => {
  assert.equal(await addressWith({ "x-forwarded-for": "'; drop table x; --" }), null);
  assert.equal(await addressWith({ "x-real-ip": "not-an-ip" }), null);
  assert.equal(await addressWith({ "x-real-ip": "10.0.0.0/8" }), null, "a network is no address");
  assert.equal(await addressWith({ "x-forwarded-for": "198.51.100.4:443" }), null);
  assert.equal(
    await addressWith({ "cf-connecting-ip": "unknown", "x-forwarded-for": "198.51.100.5" }),
    "198.51.100.5",
    "a header that holds no address is skipped",
  );
  assert.equal(await addressWith({ "user-agent": "curl/8" }), null);
  assert.equal(await addressWith({}), null);
  assert.equal(await addressWith(undefined), null, "no headers (service, local calls)");
  const { rows } = await db.pool.query<{ a: string | null }>(
    "select public.request_client_address() as a",
  );
  assert.deepEqual(rows, [{ a: null }]);
  await asRole(db.pool, { role: "anon" }, async (c) => {
    await c.query("select set_config('request.headers', '', true)");
    assert.equal((await c.query("select public.request_client_address() as a")).rows[0].a, null);
    await c.query("select set_config('request.headers', 'not json', true)");
    assert.equal((await c.query("select public.request_client_address() as a")).rows[0].a, null);
  });
});

sqlTest(
  "contact_messages: the 11th message within an hour from one client address is refused (PT429)",
  async () => {
    const bot = visitorFrom("203.0.113.7");
    for (let i = 0; i < 10; i++) await send(bot);
    const last = typed();
    await assert.rejects(
      send(bot, last),
      failsWith(
        "PT429",
        /^Cannot send the message: too many messages from your network; try again in \d+ seconds$/,
      ),
    );
    assert.equal(await messagesFrom(last), 0, "the refused message is not written");
    // Through another header, the same address is the same client.
    await assert.rejects(
      send({ role: "anon", headers: { "cf-connecting-ip": "203.0.113.7" } }),
      failsWith("PT429", /from your network/),
    );
    // Another client address is counted apart.
    const other = typed();
    await send(visitorFrom("203.0.113.8"), other);
    assert.equal(await messagesFrom(other), 1);
    // Without a client address only the sender and the ceiling count.
    await send({ role: "anon" });
  },
);

sqlTest(
  "contact_messages: IPv6 clients are counted by their /64, signed-in users per client too",
  async () => {
    const restore = await lowerLimit("contact:client", 2, "contact:client:%");
    try {
      await send(visitorFrom("2001:db8:7:1::1"));
      await send(visitorFrom("2001:db8:7:1:ffff::2"));
      await assert.rejects(
        send(visitorFrom("2001:db8:7:1::3")),
        failsWith("PT429", /from your network/),
      );
      await send(visitorFrom("2001:db8:7:2::1"));

      const user = await createUser(db.pool);
      const signedIn: SqlIdentity = {
        role: "authenticated",
        userId: user.id,
        headers: { "x-forwarded-for": "203.0.113.70" },
      };
      await send(signedIn);
      await send(signedIn);
      await assert.rejects(send(signedIn), failsWith("PT429", /from your network/));
    } finally {
      await restore();
    }
  },
);

sqlTest(
  "contact_messages: the global ceiling alerts every admin once, then holds messages for review",
  async () => {
    const admins = [
      await createUser(db.pool, { admin: true }),
      await createUser(db.pool, { admin: true }),
    ];
    const quiet = await createUser(db.pool, { admin: true });
    await db.pool.query(
      `insert into public.notification_preferences (user_id, type, email, in_app)
       values ($1, 'admin_alerts', true, false)`,
      [quiet.id],
    );
    const restore = await lowerLimit("contact:ceiling", 3, "contact:ceiling");
    try {
      await send(visitorFrom("192.0.2.1"));
      await send(visitorFrom("192.0.2.2"));
      assert.deepEqual(await alertsOf(admins[0]!.id), [], "not yet");
      // The service connection is not counted.
      await db.pool.query(SEND, ["Service", typed(), null, "Imported"]);
      await send(visitorFrom("192.0.2.3"));

      const { rows: windows } = await db.pool.query<{ started: string; ends: string }>(
        `select to_char(window_started_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as started,
                to_char((window_started_at + interval '1 hour') at time zone 'UTC',
                        'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as ends
         from public.rate_limits where key = 'contact:ceiling'`,
      );
      const window = windows[0]!;
      for (const admin of admins) {
        const alerts = await alertsOf(admin.id);
        assert.equal(alerts.length, 1, JSON.stringify(alerts));
        const [alert] = alerts;
        assert.equal(alert!.title, "Contact form: hourly ceiling reached");
        assert.equal(alert!.link, "/admin/messages");
        assert.equal(alert!.dedupe_key, `contact_ceiling:${window.started}`);
        assert.match(alert!.body, /^3 messages were accepted through the contact form since /);
        assert.ok(
          alert!.body.includes(
            `more are held for admin review until ${
              window.ends.slice(0, 16).replace("T", " ")
            } UTC (0 already await review).`,
          ),
          alert!.body,
        );
        assert.deepEqual(alert!.data, {
          limit: "contact:ceiling",
          ceiling: 3,
          windowSeconds: 3600,
          windowStartedAt: window.started,
          windowEndsAt: window.ends,
          held: 0,
        });
      }
      assert.deepEqual(await alertsOf(quiet.id), [], "admin_alerts in-app switched off");

      // Past the ceiling: accepted, held for review; no second alert.
      const before = await messageCount();
      const held = typed();
      await send(visitorFrom("192.0.2.4"), held);
      await send(visitorFrom("192.0.2.5"));
      assert.equal(await messageCount(), before + 2, "the held messages are written");
      const { rows: statuses } = await db.pool.query<{ review_status: string }>(
        "select review_status from public.contact_messages where email = $1",
        [held],
      );
      assert.deepEqual(statuses, [{ review_status: "held" }]);
      for (const admin of admins) assert.equal((await alertsOf(admin.id)).length, 1);

      const { rows: hits } = await db.pool.query<{ ceiling: number; started: string }>(
        `select ceiling,
                to_char(window_started_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as started
         from public.contact_ceiling_hits`,
      );
      assert.deepEqual(hits, [{ ceiling: 3, started: window.started }]);
    } finally {
      await restore();
    }
  },
);

sqlTest("contact_messages: a refused insert as one transaction writes nothing", async () => {
  await asRole(db.pool, visitorFrom("203.0.113.99"), async (c) => {
    for (let i = 0; i < 10; i++) await c.query(SEND, ["Bot", typed(), null, `Message ${i}`]);
    await rejectsWith(c, "PT429", SEND, ["Bot", typed(), null, "Eleventh"]);
  });
  assert.equal(
    (await db.pool.query(
      "select 1 from public.rate_limits where key = 'contact:client:203.0.113.99'",
    ))
      .rows.length,
    0,
    "rolled back with the transaction",
  );
});

sqlTest(
  "record_listing_view(): visitors and anonymous sessions are limited per client",
  async () => {
    const seller = await createUser(db.pool);
    const listing = await createListing(db.pool, seller.id, "approved");
    const restore = await lowerLimit("listing_view:client", 3, "listing_view:client:%");

    async function view(who: SqlIdentity, viewer: string | null = null): Promise<boolean> {
      return await asRole(db.pool, who, async (c) => {
        const { rows } = await c.query<{ counted: boolean }>(
          "select public.record_listing_view($1, $2) as counted",
          [listing.id, viewer],
        );
        await c.query("commit");
        return rows[0]!.counted;
      });
    }
    const rotating = () => `bot-${crypto.randomUUID()}`;
    const tooMany = failsWith(
      "PT429",
      /^Cannot record view: too many views from your network; try again in \d+ seconds$/,
    );
    const from = (address: string, who: Partial<SqlIdentity> = {}): SqlIdentity => ({
      role: "anon",
      ...who,
      headers: { "cf-connecting-ip": address },
    });
    const signedIn = (user: TestUser, anonymous = false): Partial<SqlIdentity> => ({
      role: "authenticated",
      userId: user.id,
      anonymous,
    });

    try {
      for (let i = 0; i < 3; i++) assert.equal(await view(from("198.51.100.50"), rotating()), true);
      await assert.rejects(view(from("198.51.100.50"), rotating()), tooMany);

      // A signed-in user from the same address is not limited by it.
      const user = await createUser(db.pool);
      assert.equal(await view(from("198.51.100.50", signedIn(user))), true);
      // An anonymous session is a visitor: limited like one.
      const session = await createUser(db.pool);
      await assert.rejects(view(from("198.51.100.50", signedIn(session, true))), tooMany);
      for (let i = 0; i < 3; i++) {
        await view(from("198.51.100.51", signedIn(session, true)));
      }
      await assert.rejects(view(from("198.51.100.51", signedIn(session, true))), tooMany);

      // Without headers nothing is limited; nor is the service connection.
      for (let i = 0; i < 5; i++) assert.equal(await view({ role: "anon" }, rotating()), true);
      assert.equal(await view(from("198.51.100.50", { role: "service_role" }), rotating()), true);

      const { rows } = await db.pool.query<{ n: number }>(
        "select count(*)::integer as n from public.listing_views where listing_id = $1",
        [listing.id],
      );
      assert.equal(rows[0]!.n, 3 + 1 + 1 + 5 + 1, "refused calls record nothing");
    } finally {
      await restore();
    }
  },
);

sqlTest("client_limits: admins read the limits; nobody else reads or writes them", async () => {
  const admin = await createUser(db.pool, { admin: true });
  const user = await createUser(db.pool);
  await asRole(db.pool, { role: "authenticated", userId: admin.id }, async (c) => {
    const { rows } = await c.query<{ name: string; max_hits: number; window_seconds: number }>(
      "select name, max_hits, window_seconds from public.client_limits order by name",
    );
    assert.deepEqual(rows, [
      { name: "access_request:per_day", max_hits: 30, window_seconds: 86400 },
      { name: "contact:ceiling", max_hits: 100, window_seconds: 3600 },
      { name: "contact:client", max_hits: 10, window_seconds: 3600 },
      { name: "contact:sender", max_hits: 5, window_seconds: 3600 },
      { name: "conversation:per_day", max_hits: 50, window_seconds: 86400 },
      { name: "conversation_report:per_day", max_hits: 20, window_seconds: 86400 },
      { name: "deal_case:per_day", max_hits: 5, window_seconds: 86400 },
      { name: "deal_case_move:per_day", max_hits: 50, window_seconds: 86400 },
      { name: "listing_view:client", max_hits: 300, window_seconds: 3600 },
      { name: "message:per_day", max_hits: 300, window_seconds: 86400 },
      { name: "message:per_minute", max_hits: 20, window_seconds: 60 },
      { name: "offer_counter:per_day", max_hits: 50, window_seconds: 86400 },
    ]);
    await rejectsWith(c, "42501", "update public.client_limits set max_hits = 1000");
    await c.query("select * from public.contact_ceiling_hits");
  });
  await asRole(db.pool, { role: "authenticated", userId: user.id }, async (c) => {
    assert.equal((await c.query("select * from public.client_limits")).rows.length, 0);
    assert.equal((await c.query("select * from public.contact_ceiling_hits")).rows.length, 0);
    await rejectsWith(c, "42501", "delete from public.client_limits");
  });
  await asRole(db.pool, { role: "anon" }, async (c) => {
    await rejectsWith(c, "42501", "select * from public.client_limits");
    await rejectsWith(c, "42501", "select * from public.take_client_limit('contact:ceiling', 'x')");
    await rejectsWith(
      c,
      "42501",
      "select public.notify_admins_in_app('admin_alerts', 't', 'b', null, '{}', 'k')",
    );
  });
  await assert.rejects(
    db.pool.query("update public.client_limits set max_hits = 0 where name = 'contact:client'"),
    failsWith("23514", /client_limits_max_hits_positive/),
  );
});
