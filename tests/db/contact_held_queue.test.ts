/**
 * The contact form's held queue (20261129000200_contact_held_queue): past
 * the global ceiling (client_limits contact:ceiling) a visitor's message is
 * accepted as `held` instead of refused, while the per-sender and
 * per-network limits still refuse; admins release or discard held messages
 * with review_contact_messages() — every move of the state table, every
 * refused one with its SQLSTATE and hint and nothing written, two admins at
 * once, and who reads and writes the review columns.
 *
 * @module
 */
import assert from "node:assert/strict";
import { createTestDatabase, sqlTest } from "../support/db.ts";
import {
  asRole,
  createUser,
  failureAs,
  raceCalls,
  settledCode,
  type SqlIdentity,
  type TestUser,
} from "../support/sql.ts";
import { rejectsWith } from "./core_fixtures.ts";

const db = await createTestDatabase();

const admin = await createUser(db.pool, { admin: true });
const otherAdmin = await createUser(db.pool, { admin: true });
const user = await createUser(db.pool);

const SEND = `insert into public.contact_messages (name, email, subject, message)
  values ($1, $2, $3, $4)`;
const REVIEW = "select * from public.review_contact_messages($1, $2)";

/** A signed-in user's identity. */
function as(who: TestUser): SqlIdentity {
  return { role: "authenticated", userId: who.id };
}

/** A visitor whose requests come from `address` (through x-forwarded-for). */
const visitorFrom = (address: string): SqlIdentity => ({
  role: "anon",
  headers: { "x-forwarded-for": address },
});

/** A fresh typed address, so the per-sender limit never decides. */
const typed = () => `visitor-${crypto.randomUUID().slice(0, 8)}@example.test`;

/** Forgets every contact window, so each test starts with empty limits. */
async function freshWindows(): Promise<void> {
  await db.pool.query("delete from public.rate_limits where key like 'contact:%'");
}

/** Sends a contact message as `who` and commits, as a PostgREST insert would. */
async function send(who: SqlIdentity, email = typed(), message = "Hello"): Promise<void> {
  await asRole(db.pool, who, async (c) => {
    await c.query(SEND, ["Visitor", email, null, message]);
    await c.query("commit");
  });
}

interface Row {
  id: string;
  review_status: string;
  reviewed_by: string | null;
  reviewed: boolean;
  received: boolean;
}

/** The review columns of the messages sent from `email`. */
async function rowsFrom(email: string): Promise<Row[]> {
  const { rows } = await db.pool.query<Row>(
    `select id, review_status, reviewed_by, reviewed_at is not null as reviewed,
            received_at is not null as received
     from public.contact_messages where email = $1 order by created_at, id`,
    [email],
  );
  return rows;
}

/** Writes a message on the service connection with `status` (held, to review). */
async function stored(status = "held"): Promise<string> {
  const { rows } = await db.pool.query<{ id: string }>(
    `insert into public.contact_messages (name, email, message, review_status)
     values ('Held', $1, 'Buy now', $2) returning id`,
    [typed(), status],
  );
  return rows[0]!.id;
}

/** The review columns of message `id`. */
async function rowOf(id: string): Promise<Omit<Row, "id">> {
  const { rows } = await db.pool.query<Row>(
    `select review_status, reviewed_by, reviewed_at is not null as reviewed,
            received_at is not null as received
     from public.contact_messages where id = $1`,
    [id],
  );
  return rows[0]!;
}

/** Every contact message's id and review columns: what a refused call must leave alone. */
async function snapshot(): Promise<string> {
  const { rows } = await db.pool.query(
    `select id, review_status, reviewed_at, reviewed_by from public.contact_messages order by id`,
  );
  return JSON.stringify(rows);
}

/** Runs review_contact_messages as `who` and commits; answers the moved rows. */
async function review(who: SqlIdentity, ids: string[], action: string) {
  return await asRole(db.pool, who, async (c) => {
    const { rows } = await c.query<{ id: string; review_status: string }>(REVIEW, [ids, action]);
    await c.query("commit");
    return rows;
  });
}

/** Asserts the call as `who` fails with `code` and exactly `hint`, and writes nothing. */
async function refused(
  who: SqlIdentity,
  ids: unknown,
  action: unknown,
  code: string,
  hint: string | undefined,
  message: RegExp,
): Promise<void> {
  const before = await snapshot();
  const error = await failureAs(db.pool, who, REVIEW, [ids, action]);
  assert.equal(error.code, code, error.message);
  assert.equal(error.hint ?? undefined, hint, error.message);
  assert.match(error.message, message);
  assert.equal(await snapshot(), before, "nothing written");
}

async function heldAlertsOf(userId: string) {
  const { rows } = await db.pool.query<{ body: string; data: Record<string, unknown> }>(
    `select body, data from public.notifications
     where user_id = $1 and type = 'admin_alerts' and dedupe_key like 'contact_ceiling:%'`,
    [userId],
  );
  return rows;
}

sqlTest(
  "contact form: ten networks fill the ceiling; the next message, from an eleventh, is held",
  async () => {
    await freshWindows();
    // Ten networks at their limit of 10: the ceiling of 100 is full.
    for (let network = 1; network <= 10; network++) {
      for (let i = 0; i < 10; i++) await send(visitorFrom(`198.51.100.${network}`));
    }
    const { rows: hits } = await db.pool.query("select 1 from public.contact_ceiling_hits");
    assert.equal(hits.length, 1, "the 100th message reached the ceiling");

    // The eleventh network: no error for the visitor, the row is held.
    const email = typed();
    await send(visitorFrom("198.51.100.11"), email, "Past the ceiling");
    assert.deepEqual((await rowsFrom(email)).map(({ id: _, ...row }) => row), [
      { review_status: "held", reviewed_by: null, reviewed: false, received: false },
    ]);
    // A signed-in sender from yet another network is held too.
    const signedIn = { ...as(user), headers: { "x-forwarded-for": "198.51.100.12" } };
    const mine = typed();
    await send(signedIn, mine);
    assert.deepEqual((await rowsFrom(mine)).map((r) => r.review_status), ["held"]);

    // The per-network and per-sender limits still refuse, past the ceiling too.
    const eleventh = typed();
    await assert.rejects(send(visitorFrom("198.51.100.1"), eleventh), (error: unknown) => {
      const e = error as { code?: string; message?: string };
      assert.equal(e.code, "PT429", e.message ?? String(error));
      assert.match(e.message ?? "", /too many messages from your network/);
      return true;
    });
    assert.deepEqual(await rowsFrom(eleventh), [], "refused: not written");
    const sender = typed();
    for (let i = 0; i < 5; i++) await send(visitorFrom(`203.0.113.${i + 1}`), sender);
    await assert.rejects(send(visitorFrom("203.0.113.9"), sender), (error: unknown) => {
      const e = error as { code?: string; message?: string };
      assert.equal(e.code, "PT429", e.message ?? String(error));
      assert.match(e.message ?? "", /^Cannot send the message: too many messages; try again/);
      return true;
    });
    assert.deepEqual(
      (await rowsFrom(sender)).map((r) => r.review_status),
      ["held", "held", "held", "held", "held"],
    );

    // Told once: one alert per admin for the window, saying messages are held.
    for (const who of [admin, otherAdmin]) {
      const alerts = await heldAlertsOf(who.id);
      assert.equal(alerts.length, 1, JSON.stringify(alerts));
      assert.match(alerts[0]!.body, /more are held for admin review until .* UTC/);
    }
  },
);

sqlTest(
  "contact form: a held message is hidden from its sender, who can neither mark nor change it",
  async () => {
    await freshWindows();
    const id = await stored();
    await asRole(db.pool, as(user), async (c) => {
      assert.deepEqual((await c.query("select id from public.contact_messages")).rows, []);
      await rejectsWith(
        c,
        "42501",
        `insert into public.contact_messages (name, email, message, review_status)
         values ('X', 'x@example.test', 'Hi', 'released')`,
      );
      await rejectsWith(
        c,
        "42501",
        "update public.contact_messages set review_status = 'released' where id = $1",
        [id],
      );
    });
    await asRole(db.pool, { role: "anon" }, async (c) => {
      await rejectsWith(c, "42501", "select id from public.contact_messages");
    });
    // Admins read it, and change it only through review_contact_messages.
    await asRole(db.pool, as(admin), async (c) => {
      const { rows } = await c.query(
        "select review_status from public.contact_messages where id = $1",
        [id],
      );
      assert.deepEqual(rows, [{ review_status: "held" }]);
      await rejectsWith(
        c,
        "42501",
        "update public.contact_messages set review_status = 'released' where id = $1",
        [id],
      );
    });
    assert.equal((await rowOf(id)).review_status, "held");
  },
);

sqlTest("review_contact_messages: an admin releases and discards held messages", async () => {
  const [a, b, c] = [await stored(), await stored(), await stored()];
  const released = await review(as(admin), [a, b, a], "release");
  assert.deepEqual(
    released.map((r) => [r.id, r.review_status]).sort(),
    [[a, "released"], [b, "released"]].sort(),
    "each message once",
  );
  for (const id of [a, b]) {
    assert.deepEqual(await rowOf(id), {
      review_status: "released",
      reviewed_by: admin.id,
      reviewed: true,
      received: true,
    });
  }
  const discarded = await review(as(otherAdmin), [c], "discard");
  assert.deepEqual(discarded.map((r) => [r.id, r.review_status]), [[c, "discarded"]]);
  assert.deepEqual(await rowOf(c), {
    review_status: "discarded",
    reviewed_by: otherAdmin.id,
    reviewed: true,
    received: false,
  });
});

sqlTest("review_contact_messages: every refused move, with nothing written", async () => {
  const held = await stored();
  const discarded = await stored();
  await review(as(admin), [discarded], "discard");
  const released = await stored();
  await review(as(admin), [released], "release");
  const received = await stored("received");

  // Who: a user, a visitor, an anonymous session of an admin.
  await refused(as(user), [held], "release", "42501", undefined, /only an admin may/);
  await refused({ role: "anon" }, [held], "release", "42501", undefined, /permission denied/);
  await refused(
    { role: "authenticated", userId: admin.id, anonymous: true },
    [held],
    "release",
    "42501",
    undefined,
    /anonymous session/,
  );
  // Wrong moves: the hint is the message's status.
  await refused(as(admin), [discarded], "release", "PT409", "discarded", /was discarded/);
  await refused(as(admin), [discarded], "discard", "PT409", "discarded", /was discarded/);
  await refused(as(admin), [released], "release", "PT409", "released", /was released/);
  await refused(as(admin), [released], "discard", "PT409", "released", /was released/);
  await refused(as(admin), [received], "discard", "PT409", "received", /was never held/);
  // A batch is all or nothing: the held one stays held.
  await refused(as(admin), [held, discarded], "release", "PT409", "discarded", /was discarded/);
  const unknown = crypto.randomUUID();
  await refused(as(admin), [held, unknown], "release", "PT404", undefined, /does not exist/);
  // Bad input.
  await refused(as(admin), [held], "approve", "22023", undefined, /release or discard/);
  await refused(as(admin), [held], null, "22023", undefined, /release or discard/);
  await refused(as(admin), [], "release", "22023", undefined, /1 to 100 messages/);
  await refused(as(admin), null, "release", "22023", undefined, /1 to 100 messages/);
  await refused(as(admin), [held, null], "release", "22023", undefined, /1 to 100 messages/);
  const many = Array.from({ length: 101 }, () => crypto.randomUUID());
  await refused(as(admin), many, "release", "22023", undefined, /1 to 100 messages/);
  assert.equal((await rowOf(held)).review_status, "held");
});

sqlTest("review_contact_messages: two admins release one message at once — one move", async () => {
  for (let round = 0; round < 4; round++) {
    const id = await stored();
    const results = await raceCalls(db.url, [
      { who: as(admin), sql: REVIEW, params: [[id], "release"] },
      { who: as(otherAdmin), sql: REVIEW, params: [[id], "release"] },
    ]);
    const won = results.filter((r) => r.status === "fulfilled");
    assert.equal(won.length, 1, `round ${round}: ${JSON.stringify(results)}`);
    const lost = results.find((r) => r.status === "rejected") as PromiseRejectedResult;
    assert.equal(settledCode(lost), "PT409");
    assert.equal((lost.reason as { hint?: string }).hint, "released");
    const row = await rowOf(id);
    assert.equal(row.review_status, "released");
    assert.ok([admin.id, otherAdmin.id].includes(row.reviewed_by ?? ""), row.reviewed_by ?? "");
  }
  // A release and a discard at once: one of them.
  const id = await stored();
  const results = await raceCalls(db.url, [
    { who: as(admin), sql: REVIEW, params: [[id], "release"] },
    { who: as(otherAdmin), sql: REVIEW, params: [[id], "discard"] },
  ]);
  assert.equal(results.filter((r) => r.status === "fulfilled").length, 1);
  assert.ok(["released", "discarded"].includes((await rowOf(id)).review_status));
});
