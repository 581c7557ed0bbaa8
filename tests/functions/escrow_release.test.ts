/**
 * Escrow that closes itself, against the processor double: the inspection
 * window ending (lapsed, or the buyer accepting the delivery) releases the
 * payout through `deal-deadlines` without an admin, exactly once however
 * many runs or calls overlap; a dispute case holds every automatic release;
 * a seller whose payout account is not ready waits (told once, the admins
 * after 3 days); a holdback is paid once, on its date; and the admin's
 * release and refund refuse while a case is open.
 *
 * Deals are made the way the product makes them (the buyer pays through
 * create-deal-payment and a signed webhook; a letter of intent's terms go
 * through the offers guard); only the passing of time is faked, by moving
 * `inspection_ends_at`, `holdback_release_at` or an event's time into the
 * past.
 *
 * @module
 */
import assert from "node:assert/strict";
import deadlines from "../../supabase/functions/deal-deadlines/handler.ts";
import release from "../../supabase/functions/release-deal-payout/handler.ts";
import refund from "../../supabase/functions/refund-deal-payment/handler.ts";
import { attemptTransfer } from "../../supabase/functions/_shared/deals/releases.ts";
import { Context } from "../../supabase/functions/_shared/platform/context.ts";
import { sqlTest } from "../support/db.ts";
import {
  completeHandover,
  dealEvents,
  dealsSetup,
  dealState,
  onboardSeller,
  payableDeal,
  payDeal,
  startHandover,
  type TestDeal,
} from "../support/deals.ts";
import { createLoiDeal, testDealOf } from "../support/loi.ts";
import { notificationsOf } from "../support/notifications.ts";
import { invoke } from "../support/runtime.ts";
import { createUser, failureAs, type TestUser, valueAs } from "../support/sql.ts";

/** A signed-in user, as supabase-js sends their calls. */
function as(user: TestUser) {
  return { role: "authenticated" as const, userId: user.id };
}

const setup = await dealsSetup();
const { db, double, runtime, keys, admin } = setup;

interface RunBody {
  skipped?: boolean;
  counts: Record<string, number>;
  items?: Record<string, string[]>;
  failures: Array<{ item: string; code: string; message: string }>;
}

/** Starts deal-deadlines as the scheduler. */
async function start() {
  return await invoke<RunBody>(deadlines, runtime, { token: keys.schedulerToken });
}

/** Runs deal-deadlines and asserts it ran cleanly; answers its body. */
async function run(): Promise<RunBody> {
  const res = await start();
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.notEqual(res.body.skipped, true);
  return res.body;
}

function transfersOf(dealId: string, kind?: string) {
  return double.all("transfer").filter((t) =>
    t.metadata?.deal_id === dealId && (kind === undefined || t.metadata?.kind === kind)
  );
}

/** Ends the deal's inspection window `seconds` ago, as time would. */
async function endInspection(dealId: string, seconds = 60): Promise<void> {
  await db.pool.query(
    "update public.deals set inspection_ends_at = now() - make_interval(secs => $2) where id = $1",
    [dealId, seconds],
  );
}

/** The deal's settlement of `kind`: status and amount, or null. */
async function settlement(dealId: string, kind: string) {
  const { rows } = await db.pool.query<{ status: string; amount: string }>(
    `select status, amount::text as amount from public.deal_settlements
     where deal_id = $1 and kind = $2`,
    [dealId, kind],
  );
  return rows[0] ?? null;
}

/** A deal paid, onboarded and handed over whose terms hold back 100.00 of 1000.00 for 30 days. */
async function holdbackDeal(terms: Record<string, unknown> = {}) {
  const loi = await createLoiDeal(db.pool, {
    terms: {
      cash_at_close: "900.00",
      holdback_days: 30,
      inspection_days: 10,
      exclusivity_days: 0,
      ...terms,
    },
  });
  const deal = testDealOf(loi);
  await payDeal(setup, deal);
  await onboardSeller(setup, deal.seller);
  await startHandover(db.pool, deal.id);
  await completeHandover(db.pool, deal.id);
  return deal;
}

async function openCase(deal: TestDeal, by: "buyer" | "seller" = "buyer"): Promise<string> {
  return await valueAs<string>(
    db.pool,
    as(deal[by]),
    "select public.open_deal_case($1, 'not_as_described', 'The traffic numbers were inflated')",
    [deal.id],
  );
}

sqlTest(
  "deal-deadlines: the inspection window lapsing releases the payout once, without an admin; not before",
  async () => {
    await run();
    const deal = await payableDeal(setup, { amount: "1250.00" });
    const early = await run();
    assert.ok(!(early.items?.payouts_made ?? []).includes(deal.id), "not due yet");
    assert.equal(transfersOf(deal.id).length, 0);

    await endInspection(deal.id);
    const ran = await run();
    assert.deepEqual(ran.items?.payouts_made?.filter((id) => id === deal.id), [deal.id]);
    assert.equal((await dealState(db.pool, deal.id)).status, "completed");
    const [transfer] = transfersOf(deal.id);
    assert.equal(transfer?.amount, 112_500);
    assert.equal(
      double.requestsTo("POST", "/v1/transfers").at(-1)?.headers.get("idempotency-key"),
      `payout:${deal.id}`,
    );
    assert.equal(
      (await dealEvents(db.pool, deal.id)).at(-1),
      "in_handover→completed:payout_released",
    );
    assert.ok(setup.email.sentTo(deal.seller.email).some((m) => m.subject === "Payout released"));

    await run();
    assert.equal(transfersOf(deal.id).length, 1, "a rerun moves nothing");
  },
);

sqlTest(
  "deal-deadlines: a release job started 20 times at once makes one transfer; so do 20 releases racing past the guard",
  async () => {
    await run();
    const deal = await payableDeal(setup);
    await endInspection(deal.id);
    const answers = await Promise.all(Array.from({ length: 20 }, () => start()));
    for (const answer of answers) assert.equal(answer.status, 200, JSON.stringify(answer.body));
    assert.equal(transfersOf(deal.id).length, 1);
    assert.equal((await dealState(db.pool, deal.id)).status, "completed");

    const other = await payableDeal(setup);
    await endInspection(other.id);
    const outcomes = await Promise.allSettled(
      Array.from(
        { length: 20 },
        () =>
          attemptTransfer(new Context(runtime, crypto.randomUUID(), runtime.log), {
            dealId: other.id,
            kind: "payout",
            origin: "automatic",
            actor: null,
          }),
      ),
    );
    for (const outcome of outcomes) {
      assert.ok(outcome.status === "fulfilled", String((outcome as PromiseRejectedResult).reason));
    }
    assert.equal(transfersOf(other.id).length, 1);
    const completions = (await dealEvents(db.pool, other.id)).filter((e) =>
      e.endsWith(":payout_released")
    );
    assert.equal(completions.length, 1);
  },
);

sqlTest(
  "accept_delivery ends the window now: the next run releases the payout; the seller is queued a notice",
  async () => {
    await run();
    const deal = await payableDeal(setup);
    await valueAs(db.pool, as(deal.buyer), "select public.accept_delivery($1)", [deal.id]);
    const { rows } = await db.pool.query(
      `select inspection_ends_at <= now() as ended, delivery_accepted_at is not null as accepted
       from public.deals where id = $1`,
      [deal.id],
    );
    assert.deepEqual(rows[0], { ended: true, accepted: true });
    const queued = await db.pool.query(
      "select count(*)::int as n from public.notice_queue where kind = 'deal_delivery_accepted' and user_id = $1",
      [deal.seller.id],
    );
    assert.equal(queued.rows[0].n, 1);
    await run();
    assert.equal(transfersOf(deal.id).length, 1);
    assert.equal((await dealState(db.pool, deal.id)).status, "completed");
  },
);

sqlTest(
  "a case opened one second before the window lapses holds the release; settled as release, the next run pays",
  async () => {
    await run();
    const deal = await payableDeal(setup);
    await db.pool.query(
      "update public.deals set inspection_ends_at = now() + interval '1 second' where id = $1",
      [deal.id],
    );
    const caseId = await openCase(deal);
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const held = await run();
    assert.ok(!(held.items?.payouts_made ?? []).includes(deal.id));
    assert.equal(transfersOf(deal.id).length, 0);
    assert.equal((await dealState(db.pool, deal.id)).status, "in_handover");

    // The admin's release and refund refuse too: the case decides.
    const token = await keys.userToken(admin);
    const released = await invoke<{ error: { details: { reason: string } } }>(release, runtime, {
      token,
      body: { dealId: deal.id },
    });
    assert.equal(released.status, 409);
    assert.equal(released.body.error.details.reason, "case_open");
    const refunded = await invoke<{ error: { details: { reason: string } } }>(refund, runtime, {
      token,
      body: { dealId: deal.id },
    });
    assert.equal(refunded.status, 409);
    assert.equal(refunded.body.error.details.reason, "case_open");
    assert.equal(
      (await failureAs(db.pool, as(deal.buyer), "select public.accept_delivery($1)", [deal.id]))
        .hint,
      "case_open",
    );

    for (const side of ["seller", "buyer"] as const) {
      await valueAs(db.pool, as(deal[side]), "select public.settle_deal_case($1, 'release')", [
        caseId,
      ]);
    }
    const ran = await run();
    assert.deepEqual(ran.items?.case_money_moved?.filter((id) => id === caseId), [caseId]);
    assert.equal(transfersOf(deal.id).length, 1);
    assert.equal((await dealState(db.pool, deal.id)).status, "completed");
  },
);

sqlTest(
  "a seller whose payouts are disabled waits: told once what to finish, the admins after 3 days, paid once enabled",
  async () => {
    await run();
    const deal = await payableDeal(setup);
    const accountId = (await db.pool.query(
      "select payproc_account_id from public.connect_accounts where user_id = $1",
      [deal.seller.id],
    )).rows[0].payproc_account_id as string;
    double.setAccount(accountId, {
      payouts_enabled: false,
      requirements: { disabled_reason: "requirements.past_due" },
    });
    await endInspection(deal.id);
    const first = await run();
    assert.deepEqual(first.items?.payouts_waiting?.filter((id) => id === deal.id), [deal.id]);
    await run();
    const waiting = (await notificationsOf(db.pool, deal.seller.id)).filter((n) =>
      n.dedupe_key === `payout-waiting:payout:${deal.id}`
    );
    assert.equal(waiting.length, 1, "told once");
    assert.equal(
      (await notificationsOf(db.pool, admin.id)).filter((n) =>
        n.dedupe_key === `payout-waiting:payout:${deal.id}`
      ).length,
      0,
      "the admins only after 3 days",
    );

    await db.pool.query(
      `update public.deal_events set created_at = now() - interval '3 days 1 minute'
       where deal_id = $1 and cause = 'payout_waiting_for_account'`,
      [deal.id],
    );
    await run();
    await run();
    assert.equal(
      (await notificationsOf(db.pool, admin.id)).filter((n) =>
        n.dedupe_key === `payout-waiting:payout:${deal.id}`
      ).length,
      1,
      "every admin once",
    );
    assert.equal(transfersOf(deal.id).length, 0);

    double.completeOnboarding(accountId);
    await run();
    assert.equal(transfersOf(deal.id).length, 1);
    assert.equal((await dealState(db.pool, deal.id)).status, "completed");
  },
);

sqlTest(
  "a holdback: cash at close less the commission at release, the deal stays in handover; the holdback paid once on its date",
  async () => {
    await run();
    const deal = await holdbackDeal();
    await endInspection(deal.id);
    await run();
    assert.deepEqual(await settlement(deal.id, "payout"), {
      status: "succeeded",
      amount: "800.00",
    });
    assert.equal(transfersOf(deal.id, "payout")[0]?.amount, 80_000);
    assert.equal((await dealState(db.pool, deal.id)).status, "in_handover");
    const dates = (await db.pool.query(
      `select extract(epoch from holdback_release_at - now()) / 86400 as days_left,
              extract(epoch from funded_at + interval '80 days' - holdback_release_at) >= 0 as within
       from public.deals where id = $1`,
      [deal.id],
    )).rows[0];
    assert.ok(Math.abs(Number(dates.days_left) - 30) < 0.01, String(dates.days_left));
    assert.equal(dates.within, true);
    assert.ok(
      (await dealEvents(db.pool, deal.id)).includes("in_handover→in_handover:payout_released"),
    );
    const mail = setup.email.sentTo(deal.seller.email).find((m) => m.subject === "Payout released");
    assert.match(mail?.text ?? "", /\$800\.00/);
    assert.match(mail?.text ?? "", /holdback of \$100\.00/);

    await run();
    assert.equal(transfersOf(deal.id, "holdback").length, 0, "not before its date");

    await db.pool.query(
      "update public.deals set holdback_release_at = now() - interval '1 minute' where id = $1",
      [deal.id],
    );
    const answers = await Promise.all(Array.from({ length: 5 }, () => start()));
    for (const answer of answers) assert.equal(answer.status, 200, JSON.stringify(answer.body));
    await run();
    assert.equal(transfersOf(deal.id, "holdback").length, 1);
    assert.equal(transfersOf(deal.id, "holdback")[0]?.amount, 10_000);
    assert.equal(
      double.requestsTo("POST", "/v1/transfers").find((r) =>
        r.headers.get("idempotency-key") === `holdback:${deal.id}`
      ) !== undefined,
      true,
    );
    assert.deepEqual(await settlement(deal.id, "holdback"), {
      status: "succeeded",
      amount: "100.00",
    });
    assert.equal((await dealState(db.pool, deal.id)).status, "completed");
    assert.equal(
      (await dealEvents(db.pool, deal.id)).at(-1),
      "in_handover→completed:holdback_released",
    );
  },
);

sqlTest(
  "a holdback whose days would pass 80 days after funding is paid on day 80",
  async () => {
    await run();
    const deal = await holdbackDeal({ holdback_days: 60, inspection_days: 20 });
    // Funded 50 days ago, as time would have it (past the trigger that keeps
    // funded_at to transition_deal(); the test pool is a superuser).
    const client = await db.pool.connect();
    try {
      await client.query("begin");
      await client.query("set local session_replication_role = replica");
      await client.query(
        "update public.deals set funded_at = now() - interval '50 days' where id = $1",
        [deal.id],
      );
      await client.query("commit");
    } finally {
      client.release();
    }
    await endInspection(deal.id);
    await run();
    const { rows } = await db.pool.query(
      `select holdback_release_at = funded_at + interval '80 days' as capped
       from public.deals where id = $1`,
      [deal.id],
    );
    assert.equal(rows[0].capped, true);
  },
);

sqlTest(
  "a case opened during the holdback holds it; the buyer's partial refund and the seller's rest each move once",
  async () => {
    await run();
    const deal = await holdbackDeal();
    await endInspection(deal.id);
    await run();
    const caseId = await openCase(deal);
    await db.pool.query(
      "update public.deals set holdback_release_at = now() - interval '1 minute' where id = $1",
      [deal.id],
    );
    await run();
    assert.equal(transfersOf(deal.id, "holdback").length, 0, "held by the case");

    await valueAs(
      db.pool,
      as(deal.buyer),
      "select public.settle_deal_case($1, 'partial_refund', 40)",
      [
        caseId,
      ],
    );
    await valueAs(
      db.pool,
      as(deal.seller),
      "select public.settle_deal_case($1, 'partial_refund', 40)",
      [caseId],
    );
    await Promise.all(Array.from({ length: 5 }, () => start()));
    await run();
    const refunds = double.all("refund").filter((r) => r.metadata?.deal_id === deal.id);
    assert.deepEqual(refunds.map((r) => r.amount), [4_000]);
    assert.equal(transfersOf(deal.id, "holdback").length, 1);
    assert.equal(transfersOf(deal.id, "holdback")[0]?.amount, 6_000);
    assert.equal((await dealState(db.pool, deal.id)).status, "completed");
    const moved = await db.pool.query(
      "select money_moved_at is not null as moved, phase from public.deal_cases where id = $1",
      [caseId],
    );
    assert.deepEqual(moved.rows[0], { moved: true, phase: "holdback" });
  },
);

sqlTest(
  "a case settled with a partial refund before the release: the refund and the payout of the rest (less its share of the commission) each move once",
  async () => {
    await run();
    const deal = await payableDeal(setup, { amount: "1000.00" });
    const caseId = await openCase(deal, "seller");
    await valueAs(
      db.pool,
      as(deal.seller),
      "select public.settle_deal_case($1, 'partial_refund', 250)",
      [caseId],
    );
    await valueAs(
      db.pool,
      as(deal.buyer),
      "select public.settle_deal_case($1, 'partial_refund', 250)",
      [caseId],
    );
    await Promise.all(Array.from({ length: 5 }, () => start()));
    await run();
    const refunds = double.all("refund").filter((r) => r.metadata?.deal_id === deal.id);
    assert.deepEqual(refunds.map((r) => r.amount), [25_000]);
    // 750.00 to the seller less 10 % of it (the commission's share of what they keep).
    assert.deepEqual(transfersOf(deal.id).map((t) => t.amount), [67_500]);
    assert.equal((await dealState(db.pool, deal.id)).status, "completed");
    assert.ok(setup.email.sentTo(deal.buyer.email).length > 0);
  },
);

sqlTest(
  "open_deal_case on a deal of another buyer is not found; the admin's release works again once the case is resolved",
  async () => {
    const deal = await payableDeal(setup);
    const stranger = await createUser(db.pool);
    const refused = await failureAs(
      db.pool,
      as(stranger),
      "select public.open_deal_case($1, 'other', 'Who knows')",
      [deal.id],
    );
    assert.equal(refused.code, "PT404");
    const caseId = await openCase(deal);
    await valueAs(db.pool, as(deal.buyer), "select public.escalate_deal_case($1)", [caseId]);
    await db.pool.query("select public.resolve_deal_case($1, 'release', null, $2)", [
      caseId,
      admin.id,
    ]);
    const released = await invoke<{ status: string }>(release, runtime, {
      token: await keys.userToken(admin),
      body: { dealId: deal.id },
    });
    assert.equal(released.status, 200, JSON.stringify(released.body));
    assert.equal(released.body.status, "completed");
  },
);

sqlTest(
  "a refund with reverseTransfer after the holdback was paid takes back both transfers and refunds the whole payment once",
  async () => {
    await run();
    const deal = await holdbackDeal();
    await endInspection(deal.id);
    await run();
    await db.pool.query(
      "update public.deals set holdback_release_at = now() - interval '1 minute' where id = $1",
      [deal.id],
    );
    await run();
    assert.equal((await dealState(db.pool, deal.id)).status, "completed");
    const token = await keys.userToken(admin);
    const answers = await Promise.all(
      Array.from({ length: 3 }, () =>
        invoke<{ status: string }>(refund, runtime, {
          token,
          body: { dealId: deal.id, reverseTransfer: true },
        })),
    );
    assert.ok(answers.some((a) => a.status === 200), JSON.stringify(answers.map((a) => a.body)));
    assert.equal((await dealState(db.pool, deal.id)).status, "refunded");
    assert.deepEqual(await settlement(deal.id, "payout"), { status: "reversed", amount: "800.00" });
    assert.deepEqual(await settlement(deal.id, "holdback"), {
      status: "reversed",
      amount: "100.00",
    });
    const reversals = double.all("transfer_reversal").filter((r) =>
      transfersOf(deal.id).some((t) => t.id === r.transfer)
    );
    assert.deepEqual(reversals.map((r) => r.amount).sort(), [10_000, 80_000]);
    const refunds = double.all("refund").filter((r) => r.metadata?.deal_id === deal.id);
    assert.deepEqual(refunds.map((r) => r.amount), [100_000]);
  },
);

sqlTest(
  "a case opened between a payout's claim and its transfer stops it (no money moved); released after the case, with the next key",
  async () => {
    await run();
    const deal = await payableDeal(setup, { amount: "1000.00" });
    // The release claimed the payout, and the process ended before the transfer.
    await db.pool.query(
      `insert into public.deal_settlements (deal_id, kind, amount, currency, destination_account)
       values ($1, 'payout', public.deal_transfer_amount($1, 'payout'), 'USD', $2)`,
      [deal.id, deal.accountId],
    );
    const caseId = await openCase(deal);
    // A proposal is kept, but the case is not decided while a transfer may be on its way.
    await valueAs(db.pool, as(deal.buyer), "select public.settle_deal_case($1, 'release')", [
      caseId,
    ]);
    const busy = await failureAs(
      db.pool,
      as(deal.seller),
      "select public.settle_deal_case($1, 'release')",
      [caseId],
    );
    assert.equal(busy.code, "PT409");
    assert.equal(busy.hint, "transfer_in_progress");

    // Resuming the claim finds no transfer, checks again under the lock, stops.
    const resumed = await invoke<{ error: { details: { reason: string } } }>(release, runtime, {
      token: await keys.userToken(admin),
      body: { dealId: deal.id },
    });
    assert.equal(resumed.status, 409);
    assert.equal(resumed.body.error.details.reason, "case_open");
    assert.equal(transfersOf(deal.id).length, 0);
    assert.equal((await settlement(deal.id, "payout"))?.status, "failed");

    await valueAs(db.pool, as(deal.seller), "select public.settle_deal_case($1, 'release')", [
      caseId,
    ]);
    await endInspection(deal.id);
    await run();
    assert.equal(transfersOf(deal.id).length, 1);
    assert.equal(
      double.requestsTo("POST", "/v1/transfers").at(-1)?.headers.get("idempotency-key"),
      `payout:${deal.id}:2`,
    );
    assert.equal((await dealState(db.pool, deal.id)).status, "completed");
  },
);
