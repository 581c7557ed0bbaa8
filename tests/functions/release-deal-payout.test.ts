import assert from "node:assert/strict";
import handler from "../../supabase/functions/release-deal-payout/handler.ts";
import refund from "../../supabase/functions/refund-deal-payment/handler.ts";
import { sqlTest } from "../support/db.ts";
import {
  createDeal,
  dealEvents,
  dealsSetup,
  dealState,
  payableDeal,
  payDeal,
} from "../support/deals.ts";
import { invoke } from "../support/runtime.ts";
import { createUser } from "../support/sql.ts";

const setup = await dealsSetup();
const { db, double, runtime, keys, admin } = setup;

interface Answer {
  dealId: string;
  status: string;
  payout: { status: string; amount: string; payprocId: string | null } | null;
  refund: { status: string; payprocId: string | null } | null;
  error?: { code: string; message: string; details?: { reason?: string } };
}

async function release(body: unknown, token?: string) {
  return await invoke<Answer>(handler, runtime, {
    token: token ?? await keys.userToken(admin),
    body,
  });
}

function transfersOf(dealId: string) {
  return double.all("transfer").filter((t) => t.metadata?.deal_id === dealId);
}

sqlTest(
  "release-deal-payout: one transfer of amount − frozen commission from the charge, deal completed, both told",
  async () => {
    const deal = await payableDeal(setup, { amount: "1250.00" });
    const state = await dealState(db.pool, deal.id);
    assert.equal(state.commission, "125.00"); // free plan: 10 %, frozen when funded
    await db.pool.query("update public.commission_tiers set rate = 0.5 where plan = 'free'");
    try {
      const res = await release({ dealId: deal.id });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.status, "completed");
      assert.equal(res.body.payout?.status, "succeeded");
      assert.equal(res.body.payout?.amount, "1125.00");
      const [transfer] = transfersOf(deal.id);
      assert.equal(res.body.payout?.payprocId, transfer?.id);
      assert.equal(transfer?.amount, 112500);
      assert.equal(transfer?.currency, "usd");
      assert.equal(transfer?.destination, deal.accountId);
      assert.equal(transfer?.source_transaction, state.payproc_charge_id);
      assert.equal(transfer?.transfer_group, `deal:${deal.id}`);
      const request = double.requestsTo("POST", "/v1/transfers").at(-1);
      assert.equal(request?.headers.get("idempotency-key"), `payout:${deal.id}`);
      assert.deepEqual(await dealEvents(db.pool, deal.id), [
        "→pending_payment:created",
        "pending_payment→funded:payment_succeeded",
        "funded→in_handover:handover_started",
        "in_handover→completed:payout_released",
      ]);
      const mail = setup.email.sentTo(deal.seller.email).map((m) => m.subject);
      assert.ok(mail.includes("Payout released"), mail.join());
      // The seller's verification e-mail (payouts enabled) may go out in the same flush.
      const released = setup.email.sentTo(deal.seller.email)
        .find((m) => m.subject === "Payout released");
      assert.match(released?.text ?? "", /\$1,125\.00/);
      assert.ok(setup.email.sentTo(deal.buyer.email).some((m) => m.subject === "Deal complete"));

      const again = await release({ dealId: deal.id });
      assert.equal(again.status, 200);
      assert.deepEqual(again.body, res.body);
      assert.equal(transfersOf(deal.id).length, 1);
    } finally {
      await db.pool.query("update public.commission_tiers set rate = 0.1 where plan = 'free'");
    }
  },
);

sqlTest(
  "release-deal-payout: 20 concurrent calls make one transfer and one completed transition",
  async () => {
    const deal = await payableDeal(setup);
    const token = await keys.userToken(admin);
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => release({ dealId: deal.id }, token)),
    );
    for (const answer of answers) {
      assert.ok(
        answer.status === 200 || answer.status === 409,
        `${answer.status} ${JSON.stringify(answer.body)}`,
      );
    }
    assert.ok(answers.some((a) => a.status === 200 && a.body.status === "completed"));
    assert.equal(transfersOf(deal.id).length, 1);
    const events = await dealEvents(db.pool, deal.id);
    assert.equal(events.filter((e) => e.endsWith(":payout_released")).length, 1);
    const settled = await db.pool.query(
      "select count(*)::int as n from public.deal_settlements where deal_id = $1",
      [deal.id],
    );
    assert.equal(settled.rows[0].n, 1);
  },
);

sqlTest(
  "release-deal-payout: a crash between the transfer and the commit is finished by the next call, without a second transfer",
  async () => {
    const deal = await payableDeal(setup);
    // The commit after the processor call fails once, as if the process died there.
    await db.pool.query(`
      create or replace function public.test_crash_after_transfer() returns trigger
      language plpgsql as $$
      begin
        raise exception 'simulated crash after the processor call';
      end $$;
      create trigger test_crash_after_transfer before update on public.deal_settlements
        for each row when (new.status = 'succeeded')
        execute function public.test_crash_after_transfer();`);
    try {
      const crashed = await release({ dealId: deal.id });
      assert.equal(crashed.status, 500);
    } finally {
      await db.pool.query(`
        drop trigger test_crash_after_transfer on public.deal_settlements;
        drop function public.test_crash_after_transfer();`);
    }
    assert.equal(transfersOf(deal.id).length, 1);
    assert.equal((await dealState(db.pool, deal.id)).status, "in_handover");
    const pending = await db.pool.query(
      "select status from public.deal_settlements where deal_id = $1 and kind = 'payout'",
      [deal.id],
    );
    assert.equal(pending.rows[0].status, "pending");
    // The processor forgot the idempotency key (24 h later): the transfer is still found first.
    double.store.idempotency.clear();
    const resumed = await release({ dealId: deal.id });
    assert.equal(resumed.status, 200, JSON.stringify(resumed.body));
    assert.equal(resumed.body.status, "completed");
    assert.equal(transfersOf(deal.id).length, 1);
    assert.equal(resumed.body.payout?.payprocId, transfersOf(deal.id)[0]?.id);
  },
);

sqlTest(
  "release-deal-payout: concurrent refund and payout — exactly one wins, the other 409",
  async () => {
    for (let round = 0; round < 3; round++) {
      const deal = await payableDeal(setup);
      const token = await keys.userToken(admin);
      const [paid, refunded] = await Promise.all([
        release({ dealId: deal.id }, token),
        invoke<Answer>(refund, runtime, { token, body: { dealId: deal.id } }),
      ]);
      const statuses = [paid.status, refunded.status].sort();
      assert.deepEqual(statuses, [200, 409], JSON.stringify([paid.body, refunded.body]));
      const state = await dealState(db.pool, deal.id);
      const refunds = double.all("refund").filter((r) => r.metadata?.deal_id === deal.id);
      if (paid.status === 200) {
        assert.equal(state.status, "completed");
        assert.equal(transfersOf(deal.id).length, 1);
        assert.equal(refunds.length, 0);
      } else {
        assert.equal(state.status, "refunded");
        assert.equal(transfersOf(deal.id).length, 0);
        assert.equal(refunds.length, 1);
      }
    }
  },
);

sqlTest(
  "release-deal-payout: 409 naming the reason, and nothing moved, for each state and account the payout needs",
  async () => {
    const check = async (dealId: string, reason: string, body: object = {}) => {
      const before = double.createdCount("transfer");
      const res = await release({ dealId, ...body });
      assert.equal(res.status, 409, JSON.stringify(res.body));
      assert.equal(res.body.error?.code, "conflict");
      assert.equal(res.body.error?.details?.reason, reason, String(res.body.error?.message));
      assert.equal(double.createdCount("transfer"), before);
      const rows = await db.pool.query(
        "select count(*)::int as n from public.deal_settlements where deal_id = $1",
        [dealId],
      );
      assert.equal(rows.rows[0].n, 0);
    };
    const unpaid = await createDeal(db.pool);
    await check(unpaid.id, "deal_not_payable");

    const funded = await payableDeal(setup, { handover: false });
    await check(funded.id, "handover_not_started");

    const handingOver = await payableDeal(setup, { handover: "started" });
    await check(handingOver.id, "handover_not_complete");

    const noAccount = await createDeal(db.pool);
    await payDeal(setup, noAccount);
    await check(noAccount.id, "no_payout_account", { force: true });

    const disabled = await payableDeal(setup);
    double.setAccount(disabled.accountId, {
      payouts_enabled: false,
      requirements: { disabled_reason: "requirements.past_due" },
    });
    await check(disabled.id, "payouts_disabled");

    const pastDue = await payableDeal(setup);
    double.setAccount(pastDue.accountId, { requirements: { past_due: ["external_account"] } });
    await check(pastDue.id, "requirements_past_due");
    // The refusal read the account fresh and mirrored it.
    const mirrored = await db.pool.query(
      "select past_due_count from public.connect_accounts where payproc_account_id = $1",
      [pastDue.accountId],
    );
    assert.equal(mirrored.rows[0].past_due_count, 1);

    // force: true pays out from funded.
    const forced = await release({ dealId: funded.id, force: true });
    assert.equal(forced.status, 200, JSON.stringify(forced.body));
    assert.equal(forced.body.status, "completed");
    assert.deepEqual(
      (await dealEvents(db.pool, funded.id)).at(-1),
      "funded→completed:payout_released",
    );
    // ...and from a handover the buyer has not confirmed yet.
    const early = await release({ dealId: handingOver.id, force: true });
    assert.equal(early.status, 200, JSON.stringify(early.body));
    assert.equal(early.body.status, "completed");
  },
);

sqlTest(
  "release-deal-payout: a processor refusal is recorded; the retry uses a new key and pays once",
  async () => {
    const deal = await payableDeal(setup);
    double.setAccount(deal.accountId, { capabilities: { transfers: "inactive" } });
    const refused = await release({ dealId: deal.id });
    assert.equal(refused.status, 502);
    assert.equal(refused.body.error?.code, "upstream_rejected");
    const row = await db.pool.query(
      "select status, attempt, last_error from public.deal_settlements where deal_id = $1",
      [deal.id],
    );
    assert.equal(row.rows[0].status, "failed");
    assert.match(row.rows[0].last_error, /capabilit/);
    double.setAccount(deal.accountId, { capabilities: { transfers: "active" } });
    const paid = await release({ dealId: deal.id });
    assert.equal(paid.status, 200, JSON.stringify(paid.body));
    assert.equal(transfersOf(deal.id).length, 1);
    const key = double.requestsTo("POST", "/v1/transfers").at(-1)?.headers.get("idempotency-key");
    assert.equal(key, `payout:${deal.id}:2`);
  },
);

sqlTest(
  "release-deal-payout: refusals — no token, non-admin, the deal's own seller, bad dealId, unknown deal",
  async () => {
    const deal = await payableDeal(setup);
    const none = await invoke<Answer>(handler, runtime, { body: { dealId: deal.id } });
    assert.equal(none.status, 401);
    const stranger = await createUser(db.pool);
    for (const user of [stranger, deal.seller, deal.buyer]) {
      const res = await release({ dealId: deal.id }, await keys.userToken(user));
      assert.equal(res.status, 403);
      assert.equal(res.body.error?.code, "forbidden");
    }
    const bad = await release({ dealId: "42" });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error?.code, "invalid_input");
    const unknown = await release({ dealId: crypto.randomUUID() });
    assert.equal(unknown.status, 404);
    assert.equal(transfersOf(deal.id).length, 0);
    assert.equal((await dealState(db.pool, deal.id)).status, "in_handover");
  },
);

sqlTest("release-deal-payout: zero-decimal currencies are sent in whole units", async () => {
  const deal = await payableDeal(setup, { amount: "50000.00", currency: "JPY" });
  const res = await release({ dealId: deal.id });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body.payout?.amount, "45000.00");
  const [transfer] = transfersOf(deal.id);
  assert.equal(transfer?.amount, 45000);
  assert.equal(transfer?.currency, "jpy");
});

sqlTest("release-deal-payout: processor down → 503 and the claim waits to be resumed", async () => {
  const deal = await payableDeal(setup);
  // The SDK retries once with the same key; both attempts fail.
  double.failNext({ method: "POST", path: "/v1/transfers", status: 500, times: 2 });
  const res = await release({ dealId: deal.id });
  assert.equal(res.status, 503);
  assert.equal(res.body.error?.code, "upstream_unavailable");
  assert.equal(transfersOf(deal.id).length, 0);
  const claim = await db.pool.query(
    "select status from public.deal_settlements where deal_id = $1",
    [deal.id],
  );
  assert.equal(claim.rows[0].status, "pending");
  const ok = await release({ dealId: deal.id });
  assert.equal(ok.status, 200, JSON.stringify(ok.body));
  assert.equal(transfersOf(deal.id).length, 1);
});
