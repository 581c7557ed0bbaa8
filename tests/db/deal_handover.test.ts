/**
 * The handover checklist (migration 20261123002800_deal_handover): the
 * default steps every deal gets, the step state machine through the
 * participants' functions (who may do what, in which deal state), the
 * guard for every writer, RLS, the broadcasts to both participants and
 * concurrent additions.
 *
 * @module
 */
import assert from "node:assert/strict";
import type pg from "pg";
import { createTestDatabase, sqlTest } from "../support/db.ts";
import { createDeal, moveDeal, type TestDeal } from "../support/deals.ts";
import { messagesFor } from "../support/realtime.ts";
import { asRole, createUser, queryAs, type TestUser } from "../support/sql.ts";
import { rejectsWith } from "./core_fixtures.ts";

const db = await createTestDatabase();

interface Step {
  id: string;
  position: number;
  kind: string;
  title: string;
  status: string;
  confirmation: string | null;
  dispute_reason: string | null;
  delivery_note: string | null;
}

async function stepsOf(dealId: string): Promise<Step[]> {
  const { rows } = await db.pool.query<Step>(
    `select id, position, kind, title, status, confirmation, dispute_reason, delivery_note
     from public.deal_handover_steps where deal_id = $1 order by position`,
    [dealId],
  );
  return rows;
}

/** A deal moved along `path` by the service connection. */
async function dealIn(...path: string[]): Promise<TestDeal> {
  const deal = await createDeal(db.pool);
  await moveDeal(db.pool, deal.id, ...path);
  return deal;
}

/** Runs `sql` as `user` through RLS and commits; returns the rows. */
const as = <T extends pg.QueryResultRow>(user: TestUser, sql: string, params: unknown[]) =>
  queryAs<T>(db.pool, user, sql, params);

/** Asserts `user` running `sql` fails with SQLSTATE `code` (and nothing is written). */
async function refused(user: TestUser, code: string, sql: string, params: unknown[]) {
  await asRole(
    db.pool,
    { role: "authenticated", userId: user.id },
    (client) => rejectsWith(client, code, sql, params, `${sql} as ${user.email}`),
  );
}

sqlTest("every new deal gets the six default steps, in order, pending", async () => {
  const deal = await createDeal(db.pool);
  const steps = await stepsOf(deal.id);
  assert.deepEqual(steps.map((s) => [s.position, s.kind, s.status]), [
    [1, "domain_transfer", "pending"],
    [2, "code_repository", "pending"],
    [3, "hosting", "pending"],
    [4, "third_party_accounts", "pending"],
    [5, "data_export", "pending"],
    [6, "credentials", "pending"],
  ]);
  // The defaults arrive with the deal: no broadcast per step.
  const topics = (await messagesFor(db.pool, deal.buyer.id)).map((m) => m.payload.table);
  assert.ok(!topics.includes("deal_handover_steps"));
});

sqlTest(
  "the seller delivers, the buyer disputes, the seller redelivers, the buyer confirms",
  async () => {
    const deal = await dealIn("funded", "in_handover");
    const [step] = await stepsOf(deal.id);
    const delivered = await as<Step>(
      deal.seller,
      "select * from public.deliver_handover_step($1, $2)",
      [step!.id, "  Auth code sent by e-mail  "],
    );
    assert.equal(delivered[0]!.status, "delivered");
    assert.equal(delivered[0]!.delivery_note, "Auth code sent by e-mail");

    await as(deal.buyer, "select public.dispute_handover_step($1, $2)", [
      step!.id,
      "The code is rejected by my registrar",
    ]);
    assert.equal((await stepsOf(deal.id))[0]!.status, "disputed");
    assert.equal(
      (await stepsOf(deal.id))[0]!.dispute_reason,
      "The code is rejected by my registrar",
    );

    await as(deal.seller, "select public.deliver_handover_step($1)", [step!.id]);
    await as(deal.buyer, "select public.confirm_handover_step($1)", [step!.id]);
    const done = (await stepsOf(deal.id))[0]!;
    assert.equal(done.status, "confirmed");
    assert.equal(done.confirmation, "buyer");

    // Each change reached both participants' topics.
    for (const user of [deal.buyer, deal.seller]) {
      const changes = (await messagesFor(db.pool, user.id))
        .filter((m) => m.payload.table === "deal_handover_steps")
        .map((m) => m.payload.record?.status);
      assert.deepEqual(changes, ["delivered", "disputed", "delivered", "confirmed"]);
    }
  },
);

sqlTest("only the right side acts, only on steps in the right state", async () => {
  const deal = await dealIn("funded");
  const stranger = await createUser(db.pool);
  const admin = await createUser(db.pool, { admin: true });
  const [step] = await stepsOf(deal.id);
  const deliver = "select public.deliver_handover_step($1)";
  const confirm = "select public.confirm_handover_step($1)";
  const dispute = "select public.dispute_handover_step($1, $2)";

  for (const user of [deal.buyer, stranger, admin]) {
    await refused(user, "42501", deliver, [step!.id]);
  }
  for (const user of [deal.seller, stranger, admin]) {
    await refused(user, "42501", confirm, [step!.id]);
  }
  await refused(deal.seller, "42501", dispute, [step!.id, "no"]);
  await refused(deal.seller, "42501", deliver, [crypto.randomUUID()]);

  // A pending step cannot be confirmed or disputed.
  await refused(deal.buyer, "PT409", confirm, [step!.id]);
  await refused(deal.buyer, "PT409", dispute, [step!.id, "not yet"]);
  await as(deal.seller, deliver, [step!.id]);
  // A dispute needs a reason; a note has a limit.
  await refused(deal.buyer, "22023", dispute, [step!.id, "   "]);
  await refused(deal.seller, "22023", "select public.deliver_handover_step($1, $2)", [
    step!.id,
    "x".repeat(2001),
  ]);
  // Delivered twice: refused. Confirmed: final.
  await refused(deal.seller, "PT409", deliver, [step!.id]);
  await as(deal.buyer, confirm, [step!.id]);
  await refused(deal.buyer, "PT409", dispute, [step!.id, "too late"]);
  await refused(deal.seller, "PT409", deliver, [step!.id]);
  assert.deepEqual((await stepsOf(deal.id)).map((s) => s.status), [
    "confirmed",
    "pending",
    "pending",
    "pending",
    "pending",
    "pending",
  ]);
});

sqlTest("steps change only while the deal is funded or in handover and not complete", async () => {
  const deliver = "select public.deliver_handover_step($1)";
  for (const path of [[], ["cancelled"], ["funded", "refunded"], ["funded", "disputed"]]) {
    const deal = await dealIn(...path);
    const [step] = await stepsOf(deal.id);
    await refused(deal.seller, "PT409", deliver, [step!.id]);
  }
  const complete = await dealIn("funded", "in_handover");
  await db.pool.query(
    `update public.deals set handover_completed_at = now(), handover_completion = 'buyer_confirmed'
     where id = $1`,
    [complete.id],
  );
  const [step] = await stepsOf(complete.id);
  await refused(complete.seller, "PT409", deliver, [step!.id]);
  await refused(complete.seller, "PT409", "select public.add_handover_step($1, 'More')", [
    complete.id,
  ]);
});

sqlTest("the seller adds steps (before payment too), numbered at the end, at most 50", async () => {
  const deal = await createDeal(db.pool);
  const added = await as<Step>(
    deal.seller,
    "select * from public.add_handover_step($1, $2, $3)",
    [deal.id, "  Newsletter list  ", "Export from the mailing tool"],
  );
  assert.equal(added[0]!.position, 7);
  assert.equal(added[0]!.kind, "custom");
  assert.equal(added[0]!.title, "Newsletter list");
  // An added step is news for both.
  for (const user of [deal.buyer, deal.seller]) {
    const inserts = (await messagesFor(db.pool, user.id))
      .filter((m) => m.payload.table === "deal_handover_steps" && m.event === "INSERT");
    assert.equal(inserts.length, 1);
  }
  const add = "select public.add_handover_step($1, $2)";
  await refused(deal.buyer, "42501", add, [deal.id, "Mine"]);
  await refused(deal.seller, "22023", add, [deal.id, " "]);
  await refused(deal.seller, "22023", add, [deal.id, "x".repeat(201)]);

  // Concurrent additions get distinct positions; the cap holds.
  await Promise.all(
    Array.from({ length: 43 }, (_, i) => as(deal.seller, add, [deal.id, `Step ${i}`])),
  );
  const steps = await stepsOf(deal.id);
  assert.equal(steps.length, 50);
  assert.deepEqual(steps.map((s) => s.position), Array.from({ length: 50 }, (_, i) => i + 1));
  await refused(deal.seller, "PT409", add, [deal.id, "One too many"]);
});

sqlTest("the guard holds for the service connection too; clients cannot write", async () => {
  const deal = await dealIn("funded", "in_handover");
  const [step] = await stepsOf(deal.id);
  await assert.rejects(
    db.pool.query(
      `update public.deal_handover_steps set status = 'confirmed', confirmed_at = now(),
         confirmation = 'buyer' where id = $1`,
      [step!.id],
    ),
    /from pending to confirmed/,
  );
  await assert.rejects(
    db.pool.query(
      `insert into public.deal_handover_steps (deal_id, position, kind, title, status, delivered_at)
       values ($1, 99, 'custom', 'x', 'delivered', now())`,
      [deal.id],
    ),
    /already delivered/,
  );
  await refused(
    deal.seller,
    "42501",
    "update public.deal_handover_steps set title = 'x' where id = $1",
    [
      step!.id,
    ],
  );
  await refused(
    deal.seller,
    "42501",
    "insert into public.deal_handover_steps (deal_id, position, kind, title) values ($1, 9, 'custom', 'x')",
    [deal.id],
  );
});

sqlTest("participants and admins read a deal's checklist; nobody else does", async () => {
  const deal = await createDeal(db.pool);
  const stranger = await createUser(db.pool);
  const admin = await createUser(db.pool, { admin: true });
  const count = async (user: TestUser) =>
    (await as<{ n: number }>(
      user,
      "select count(*)::int as n from public.deal_handover_steps where deal_id = $1",
      [deal.id],
    ))[0]!.n;
  assert.equal(await count(deal.buyer), 6);
  assert.equal(await count(deal.seller), 6);
  assert.equal(await count(admin), 6);
  assert.equal(await count(stranger), 0);
});
