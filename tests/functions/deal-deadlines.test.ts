/**
 * `deal-deadlines`: deals in due diligence past their exclusivity are
 * cancelled (cause `exclusivity_lapsed`) once, both sides told and the
 * listing reopened; deals not yet due or out of diligence are left alone; a
 * deal a move holds is passed by; a deal that fails does not stop the
 * others; concurrent runs and concurrent calls of
 * `lapse_deal_exclusivity()` lapse a deal once; who may start it.
 *
 * The deals are made the way the product makes them: the buyer offers with
 * letter-of-intent terms through RLS, the seller accepts with
 * `accept_offer()`. Only the passing of time is faked: `exclusive_until`
 * moves only later (a trigger), so a test moves it into the past with the
 * triggers set aside. Deals of earlier tests stay in the database; every
 * assertion names its own deals.
 *
 * @module
 */
import assert from "node:assert/strict";
import handler from "../../supabase/functions/deal-deadlines/handler.ts";
import {
  DEAL_DEADLINE_STEPS,
  runDealDeadlines,
} from "../../supabase/functions/_shared/deals/deadlines_job.ts";
import { lapseExclusivities } from "../../supabase/functions/_shared/deals/diligence_deadlines.ts";
import { Context } from "../../supabase/functions/_shared/platform/context.ts";
import { HttpError } from "../../supabase/functions/_shared/platform/errors.ts";
import { testCredentials } from "../support/credentials.ts";
import { createTestDatabase, sqlTest } from "../support/db.ts";
import { dealEvents } from "../support/deals.ts";
import {
  assertOneRanOneSkipped,
  type JobAnswerBody,
  twoStartsWhileLocked,
} from "../support/jobs.ts";
import { ageDiligence, createLoiDeal, dealOf } from "../support/loi.ts";
import { invoke, testRuntime } from "../support/runtime.ts";
import {
  asRole,
  createUser,
  failureAs,
  raceCalls,
  type TestUser,
  valueAs,
} from "../support/sql.ts";

interface DeadlinesRun extends JobAnswerBody {
  scanned: number;
  changed: number;
  failed: number;
  counts: Record<string, number>;
  items?: Record<string, string[]>;
  failures: Array<{ item: string; code: string; message: string }>;
}

const db = await createTestDatabase();
const keys = await testCredentials();
const runtime = await testRuntime(db);
const admin = await createUser(db.pool, { admin: true });

async function start(token: string | undefined = keys.schedulerToken) {
  return await invoke<DeadlinesRun>(handler, runtime, { token });
}

/** Runs the job as the scheduler and asserts it answered 200 and ran; answers its body. */
async function run(): Promise<DeadlinesRun> {
  const res = await start();
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.notEqual(res.body.skipped, true, JSON.stringify(res.body));
  return res.body;
}

/** A deal made from an accepted letter of intent, and who made it. */
interface DiligenceDeal {
  id: string;
  buyer: TestUser;
  seller: TestUser;
  listingId: string;
}

/** A buyer's LOI with `exclusivityDays` of exclusivity, accepted by the seller: in due diligence. */
async function diligenceDeal(exclusivityDays = 1): Promise<DiligenceDeal> {
  const loi = await createLoiDeal(db.pool, {
    terms: { exclusivity_days: exclusivityDays },
    amount: "30000.00",
  });
  assert.equal((await dealOf(db.pool, loi.dealId)).status, "in_diligence");
  return { id: loi.dealId, buyer: loi.buyer, seller: loi.seller, listingId: loi.listingId };
}

/** Moves the deal's exclusivity end `minutes` into the past, as time would (past the trigger). */
function lapse(dealId: string, minutes = 1): Promise<void> {
  return ageDiligence(db.pool, dealId, minutes);
}

function deal(id: string) {
  return dealOf(db.pool, id);
}

/** The deal's `deal_exclusivity_lapsed` notices as (user, status), buyer's first. */
async function lapsedNotices(d: DiligenceDeal): Promise<string[]> {
  const { rows } = await db.pool.query<{ who: string; status: string }>(
    `select case user_id when $2 then 'buyer' when $3 then 'seller' else user_id::text end as who,
       status
     from public.notice_queue
     where kind = 'deal_exclusivity_lapsed' and subject_id = $1
     order by who`,
    [d.id, d.buyer.id, d.seller.id],
  );
  return rows.map((r) => `${r.who}:${r.status}`);
}

async function openForOffers(listingId: string): Promise<boolean> {
  const { rows } = await db.pool.query<{ open: boolean }>(
    "select public.listing_open_for_offers($1) as open",
    [listingId],
  );
  return rows[0]!.open;
}

const LAPSED = "in_diligence→cancelled:exclusivity_lapsed";

/** How often the deal lapsed, by its events. */
async function lapses(dealId: string): Promise<number> {
  return (await dealEvents(db.pool, dealId)).filter((e) => e === LAPSED).length;
}

sqlTest(
  "deal-deadlines: an overdue deal in diligence is cancelled once, both sides told, the listing reopened; others are left alone",
  async () => {
    const overdue = await diligenceDeal();
    const notYet = await diligenceDeal();
    // Confirmed in time: it awaits payment, its exclusive_until since passed.
    const confirmed = await diligenceDeal();
    await valueAs(
      db.pool,
      { role: "authenticated", userId: confirmed.buyer.id },
      "select public.confirm_diligence($1)",
      [confirmed.id],
    );
    await lapse(confirmed.id, 60);
    await lapse(overdue.id);
    assert.equal(await openForOffers(overdue.listingId), false, "held by the LOI");
    const untilBefore = (await deal(notYet.id)).exclusive_until;

    const first = await run();
    assert.equal(first.job, "deal-deadlines");
    assert.equal(first.failed, 0, JSON.stringify(first.failures));
    assert.ok(first.items?.exclusivity_lapsed?.includes(overdue.id), JSON.stringify(first));
    for (const other of [notYet, confirmed]) {
      assert.ok(!first.items?.exclusivity_lapsed?.includes(other.id));
    }
    assert.equal(first.counts.exclusivity_lapsed, first.items?.exclusivity_lapsed?.length);
    assert.equal(first.changed, first.counts.exclusivity_lapsed);

    assert.equal((await deal(overdue.id)).status, "cancelled");
    assert.deepEqual(await dealEvents(db.pool, overdue.id), [
      "→in_diligence:offer_accepted",
      LAPSED,
    ]);
    assert.deepEqual(await lapsedNotices(overdue), ["buyer:pending", "seller:pending"]);
    assert.equal(await openForOffers(overdue.listingId), true, "the listing takes offers again");
    // A new buyer may now make an offer on it.
    const next = await createUser(db.pool);
    await valueAs(
      db.pool,
      { role: "authenticated", userId: next.id },
      `insert into public.offers (listing_id, amount, currency) values ($1, '31000.00', 'USD')
       returning id`,
      [overdue.listingId],
    );

    // Not yet due, and out of diligence: untouched.
    const untouched = await deal(notYet.id);
    assert.deepEqual([untouched.status, untouched.exclusive_until], ["in_diligence", untilBefore]);
    assert.equal((await deal(confirmed.id)).status, "pending_payment");
    assert.deepEqual(await dealEvents(db.pool, notYet.id), ["→in_diligence:offer_accepted"]);
    assert.deepEqual(await dealEvents(db.pool, confirmed.id), [
      "→in_diligence:offer_accepted",
      "in_diligence→pending_payment:diligence_confirmed",
    ]);
    for (const other of [notYet, confirmed]) assert.deepEqual(await lapsedNotices(other), []);

    // A second run changes nothing.
    const second = await run();
    assert.deepEqual(second.items?.exclusivity_lapsed ?? [], []);
    assert.equal(second.changed, 0);
    assert.equal(second.counts.exclusivity_lapsed, 0);
    assert.equal(await lapses(overdue.id), 1);
    assert.deepEqual(await lapsedNotices(overdue), ["buyer:pending", "seller:pending"]);
    assert.equal((await deal(notYet.id)).status, "in_diligence");
  },
);

sqlTest(
  "deal-deadlines: a deal a move holds locked is passed by (skipped) and lapsed by the next run",
  async () => {
    await run();
    const held = await diligenceDeal();
    await lapse(held.id);
    const holder = await db.pool.connect();
    let during: DeadlinesRun;
    try {
      await holder.query("begin");
      await holder.query("select 1 from public.deals where id = $1 for update", [held.id]);
      during = await run();
    } finally {
      await holder.query("rollback");
      holder.release();
    }
    assert.equal(during.counts.exclusivity_skipped, 1, JSON.stringify(during));
    assert.equal(during.counts.exclusivity_lapsed, 0);
    assert.equal(during.scanned, 1);
    assert.equal((await deal(held.id)).status, "in_diligence");
    assert.deepEqual(await lapsedNotices(held), []);

    const after = await run();
    assert.deepEqual(after.items?.exclusivity_lapsed, [held.id]);
    assert.equal(after.counts.exclusivity_skipped, 0);
    assert.equal((await deal(held.id)).status, "cancelled");
  },
);

sqlTest(
  "deal-deadlines: a deal that fails makes the run 500 partial_failure; the others lapse, and it lapses next run",
  async () => {
    await run();
    const failing = await diligenceDeal();
    const fine = await diligenceDeal();
    await lapse(failing.id, 5);
    await lapse(fine.id);
    // Queueing the failing deal's notice is refused, so its whole lapse rolls back.
    await db.pool.query(
      `alter table public.notice_queue add constraint test_refuse_one_subject
       check (subject_id <> '${failing.id}'::uuid) not valid`,
    );
    try {
      const res = await start();
      assert.equal(res.status, 500, JSON.stringify(res.body));
      const body = res.body as { error?: { code: string; details?: DeadlinesRun } };
      assert.equal(body.error?.code, "partial_failure");
      const details = body.error!.details!;
      assert.equal(details.failed, 1);
      assert.equal(details.failures[0]!.item, `exclusivity-lapses:${failing.id}`);
      assert.deepEqual(details.items?.exclusivity_lapsed, [fine.id]);
      assert.equal(details.scanned, 2);
      assert.equal((await deal(failing.id)).status, "in_diligence", "rolled back");
      assert.deepEqual(await dealEvents(db.pool, failing.id), ["→in_diligence:offer_accepted"]);
      assert.deepEqual(await lapsedNotices(failing), []);
      assert.equal((await deal(fine.id)).status, "cancelled");
      const { rows } = await db.pool.query(
        `select status, failed from public.job_runs where id = $1`,
        [details.runId],
      );
      assert.deepEqual(rows, [{ status: "partial", failed: 1 }]);
    } finally {
      await db.pool.query(
        "alter table public.notice_queue drop constraint test_refuse_one_subject",
      );
    }
    const next = await run();
    assert.deepEqual(next.items?.exclusivity_lapsed, [failing.id]);
    assert.equal(await lapses(failing.id), 1);
    assert.deepEqual(await lapsedNotices(failing), ["buyer:pending", "seller:pending"]);
  },
);

sqlTest("deal-deadlines: the oldest window lapses first", async () => {
  await run();
  const newer = await diligenceDeal();
  const older = await diligenceDeal();
  await lapse(newer.id, 1);
  await lapse(older.id, 90);
  const res = await run();
  assert.deepEqual(res.items?.exclusivity_lapsed, [older.id, newer.id]);
});

sqlTest(
  "deal-deadlines: a run takes at most a batch, oldest first; the rest lapse next run",
  async () => {
    await run();
    const deals = [await diligenceDeal(), await diligenceDeal(), await diligenceDeal()];
    await lapse(deals[0]!.id, 30);
    await lapse(deals[1]!.id, 20);
    await lapse(deals[2]!.id, 10);
    const ctx = new Context(runtime, crypto.randomUUID(), runtime.log);
    const batch = (limit: number) =>
      runDealDeadlines(ctx, [{
        name: "exclusivity-lapses",
        run: (c, tally) => lapseExclusivities(c, tally, limit),
      }]);
    const first = await batch(2);
    assert.ok(!("skipped" in first));
    assert.deepEqual(first.items?.exclusivity_lapsed, [deals[0]!.id, deals[1]!.id]);
    assert.equal((await deal(deals[2]!.id)).status, "in_diligence");
    const second = await batch(2);
    assert.ok(!("skipped" in second));
    assert.deepEqual(second.items?.exclusivity_lapsed, [deals[2]!.id]);
  },
);

sqlTest(
  "deal-deadlines: a step that fails as a whole is a failed item; the next steps still run",
  async () => {
    await run();
    const d = await diligenceDeal();
    await lapse(d.id);
    const ctx = new Context(runtime, crypto.randomUUID(), runtime.log);
    const failing = {
      name: "broken",
      run: () => Promise.reject(new Error("the step's query failed")),
    };
    const error = await runDealDeadlines(ctx, [failing, ...DEAL_DEADLINE_STEPS]).then(
      () => null,
      (e: unknown) => e,
    );
    assert.ok(error instanceof HttpError, String(error));
    assert.equal(error.status, 500);
    assert.equal(error.code, "partial_failure");
    const details = error.details as DeadlinesRun;
    assert.deepEqual(details.failures.map((f) => [f.item, f.code]), [["step:broken", "internal"]]);
    assert.deepEqual(details.items?.exclusivity_lapsed, [d.id], "the next step ran");
    assert.equal((await deal(d.id)).status, "cancelled");
  },
);

sqlTest(
  "deal-deadlines: two starts at once lapse each deal once (one runs, or both run with one lapse)",
  async () => {
    await run();
    const deals = [await diligenceDeal(), await diligenceDeal(), await diligenceDeal()];
    for (const d of deals) await lapse(d.id);
    const answers = await Promise.all([start(), start()]);
    assert.deepEqual(answers.map((a) => a.status), [200, 200], JSON.stringify(answers));
    const lapsedIds = answers.flatMap((a) => a.body.items?.exclusivity_lapsed ?? []);
    for (const d of deals) {
      assert.equal(lapsedIds.filter((id) => id === d.id).length, 1, d.id);
      assert.equal(await lapses(d.id), 1);
      assert.deepEqual(await lapsedNotices(d), ["buyer:pending", "seller:pending"]);
    }
  },
);

sqlTest(
  "deal-deadlines: a start while a run is in progress answers 200 skipped",
  async () => {
    await run();
    const d = await diligenceDeal();
    await lapse(d.id);
    // The run waits to lock the overdue deal, so the second start finds it running.
    const answers = await twoStartsWhileLocked(db.pool, "public.deals", () => start());
    assertOneRanOneSkipped(answers);
    const ran = answers.find((a) => a.body.skipped !== true)!;
    assert.deepEqual(ran.body.items?.exclusivity_lapsed, [d.id]);
    assert.equal(await lapses(d.id), 1);
  },
);

sqlTest(
  "lapse_deal_exclusivity(): five concurrent calls on one overdue deal lapse it once",
  async () => {
    const d = await diligenceDeal();
    await lapse(d.id);
    const results = await raceCalls(
      db.url,
      Array.from({ length: 5 }, () => ({
        who: { role: "service_role" as const },
        sql: "select public.lapse_deal_exclusivity($1) as lapsed",
        params: [d.id],
      })),
    );
    const answers = results.map((r) => {
      assert.equal(r.status, "fulfilled", JSON.stringify(r));
      return (r as PromiseFulfilledResult<Record<string, unknown>[]>).value[0]!.lapsed;
    });
    assert.equal(answers.filter((a) => a === true).length, 1, JSON.stringify(answers));
    assert.equal(answers.filter((a) => a === false).length, 4);
    assert.equal((await deal(d.id)).status, "cancelled");
    assert.equal(await lapses(d.id), 1);
    assert.deepEqual(await lapsedNotices(d), ["buyer:pending", "seller:pending"]);
  },
);

sqlTest(
  "lapse_deal_exclusivity(): false for a deal not yet due; the service role's only",
  async () => {
    const d = await diligenceDeal();
    const service = { role: "service_role" as const };
    const call = "select public.lapse_deal_exclusivity($1)";
    assert.equal(await valueAs(db.pool, service, call, [d.id]), false, "not yet due");
    assert.equal(await valueAs(db.pool, service, call, [crypto.randomUUID()]), false, "unknown");
    await lapse(d.id);
    for (const who of [d.buyer, d.seller, admin]) {
      const refused = await failureAs(db.pool, { role: "authenticated", userId: who.id }, call, [
        d.id,
      ]);
      assert.equal(refused.code, "42501");
    }
    await asRole(db.pool, { role: "anon" }, async (c) => {
      await assert.rejects(c.query(call, [d.id]), (e: { code?: string }) => e.code === "42501");
    });
    assert.equal((await deal(d.id)).status, "in_diligence");
  },
);

sqlTest("deal-deadlines: the scheduler, the service role and admins start it", async () => {
  const user = await createUser(db.pool);
  const runs = async () =>
    (await db.pool.query(
      "select count(*)::int as n from public.job_runs where job_name = 'deal-deadlines'",
    )).rows[0]!.n;
  const before = await runs();
  assert.equal((await invoke(handler, runtime, {})).status, 401, "no token");
  const asUser = await start(await keys.userToken(user));
  assert.equal(asUser.status, 403, "a signed-in user");
  assert.equal(asUser.body.error?.code, "forbidden");
  assert.equal((await start(keys.anonKey)).status, 403, "the anon key, outside local development");
  assert.equal(await runs(), before, "refused starts write no run");
  for (const token of [keys.schedulerToken, keys.serviceKey, await keys.userToken(admin)]) {
    const res = await start(token);
    assert.equal(res.status, 200, JSON.stringify(res.body));
  }
  assert.equal(await runs(), before + 3);
});

sqlTest("deal-deadlines: the schedule runs it every 15 minutes", async () => {
  const { rows } = await db.pool.query(
    "select cron, enabled from public.job_schedules where function_name = 'deal-deadlines'",
  );
  assert.deepEqual(rows, [{ cron: "*/15 * * * *", enabled: true }]);
});

addEventListener("unload", () => {
  runtime.close();
});
