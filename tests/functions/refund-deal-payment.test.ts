import assert from "node:assert/strict";
import handler from "../../supabase/functions/refund-deal-payment/handler.ts";
import release from "../../supabase/functions/release-deal-payout/handler.ts";
import { deliver } from "../support/billing.ts";
import { sqlTest } from "../support/db.ts";
import { createDeal, dealEvents, dealsSetup, dealState, payableDeal } from "../support/deals.ts";
import { invoke } from "../support/runtime.ts";
import { createUser } from "../support/sql.ts";

const setup = await dealsSetup();
const { db, double, runtime, keys, admin } = setup;

interface Answer {
  dealId: string;
  status: string;
  payout: { status: string; payprocId: string | null; reversalId: string | null } | null;
  refund: { status: string; amount: string; payprocId: string | null } | null;
  error?: { code: string; message: string; details?: { reason?: string } };
}

async function refund(body: unknown, token?: string) {
  return await invoke<Answer>(handler, runtime, {
    token: token ?? await keys.userToken(admin),
    body,
  });
}

function refundsOf(dealId: string) {
  return double.all("refund").filter((r) => r.metadata?.deal_id === dealId);
}

async function settlementCount(dealId: string): Promise<number> {
  const { rows } = await db.pool.query(
    "select count(*)::int as n from public.deal_settlements where deal_id = $1",
    [dealId],
  );
  return rows[0].n;
}

sqlTest(
  "refund-deal-payment: a full refund with key refund:<dealId>, the deal refunded, both told; a repeat changes nothing",
  async () => {
    const deal = await payableDeal(setup);
    const res = await refund({ dealId: deal.id, reason: "Buyer changed their mind" });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.status, "refunded");
    assert.equal(res.body.refund?.status, "succeeded");
    assert.equal(res.body.refund?.amount, "1250.00");
    const [made] = refundsOf(deal.id);
    assert.equal(res.body.refund?.payprocId, made?.id);
    assert.equal(made?.amount, 125000);
    assert.equal(made?.payment_intent, deal.intentId);
    assert.equal(made?.metadata?.reason, "Buyer changed their mind");
    const key = double.requestsTo("POST", "/v1/refunds").at(-1)?.headers.get("idempotency-key");
    assert.equal(key, `refund:${deal.id}`);
    assert.equal((await dealEvents(db.pool, deal.id)).at(-1), "in_handover→refunded:refund_issued");
    assert.ok(setup.email.sentTo(deal.buyer.email).some((m) => m.subject === "Refund issued"));
    assert.ok(setup.email.sentTo(deal.seller.email).some((m) => m.subject === "Deal refunded"));

    // The processor's own charge.refunded arrives afterwards: nothing changes.
    const charge = double.get("charge", (await dealState(db.pool, deal.id)).payproc_charge_id!)!;
    const event = await deliver<{ outcome: string; detail?: string }>(
      setup,
      double.event("charge.refunded", charge),
    );
    assert.equal(event.body.outcome, "applied");
    assert.equal(event.body.detail, "already up to date");
    const again = await refund({ dealId: deal.id });
    assert.deepEqual(again.body, res.body);
    assert.equal(refundsOf(deal.id).length, 1);
    assert.equal(
      (await dealEvents(db.pool, deal.id)).filter((e) => e.endsWith(":refund_issued")).length,
      1,
    );
  },
);

sqlTest(
  "refund-deal-payment: after the payout, 409 without reverseTransfer and no money moved; with it, the transfer is reversed first",
  async () => {
    const deal = await payableDeal(setup);
    const paid = await invoke<Answer>(release, runtime, {
      token: await keys.userToken(admin),
      body: { dealId: deal.id },
    });
    assert.equal(paid.status, 200, JSON.stringify(paid.body));
    const transferId = paid.body.payout!.payprocId!;

    const refused = await refund({ dealId: deal.id });
    assert.equal(refused.status, 409);
    assert.equal(refused.body.error?.details?.reason, "paid_out");
    assert.equal(refundsOf(deal.id).length, 0);
    assert.equal(double.get("transfer", transferId)?.amount_reversed, 0);
    assert.equal(await settlementCount(deal.id), 1);

    const res = await refund({ dealId: deal.id, reverseTransfer: true });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.status, "refunded");
    assert.equal(res.body.payout?.status, "reversed");
    const transfer = double.get("transfer", transferId)!;
    assert.equal(transfer.reversed, true);
    assert.equal(res.body.payout?.reversalId, transfer.reversals.data[0]?.id);
    const reversalKey = double.requestsTo("POST", `/v1/transfers/${transferId}/reversals`).at(-1)
      ?.headers.get("idempotency-key");
    assert.equal(reversalKey, `reversal:${deal.id}`);
    assert.equal(refundsOf(deal.id).length, 1);
    assert.equal((await dealEvents(db.pool, deal.id)).at(-1), "completed→refunded:refund_issued");

    // The processor's transfer.reversed arrives afterwards: nothing changes.
    const event = await deliver<{ outcome: string }>(
      setup,
      double.event("transfer.reversed", transfer),
    );
    assert.equal(event.body.outcome, "applied");
    const again = await refund({ dealId: deal.id, reverseTransfer: true });
    assert.equal(again.status, 200);
    assert.equal(double.get("transfer", transferId)?.reversals.data.length, 1);
    assert.equal(refundsOf(deal.id).length, 1);
  },
);

sqlTest(
  "refund-deal-payment: 20 concurrent refunds make one refund and one transition",
  async () => {
    const deal = await payableDeal(setup);
    const token = await keys.userToken(admin);
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => refund({ dealId: deal.id }, token)),
    );
    for (const answer of answers) {
      assert.ok(answer.status === 200 || answer.status === 409, JSON.stringify(answer.body));
    }
    assert.equal(refundsOf(deal.id).length, 1);
    assert.equal(
      (await dealEvents(db.pool, deal.id)).filter((e) => e.endsWith(":refund_issued")).length,
      1,
    );
    assert.equal((await dealState(db.pool, deal.id)).status, "refunded");
  },
);

sqlTest(
  "refund-deal-payment: 409 for deals with nothing to refund, a disputed payment, or a payout in progress",
  async () => {
    const check = async (dealId: string, reason: string) => {
      const before = double.createdCount("refund");
      const res = await refund({ dealId });
      assert.equal(res.status, 409, JSON.stringify(res.body));
      assert.equal(res.body.error?.details?.reason, reason, String(res.body.error?.message));
      assert.equal(double.createdCount("refund"), before);
    };
    const unpaid = await createDeal(db.pool);
    await check(unpaid.id, "deal_not_refundable");
    assert.equal(await settlementCount(unpaid.id), 0);

    const disputed = await payableDeal(setup);
    const charge = (await dealState(db.pool, disputed.id)).payproc_charge_id!;
    const dispute = double.disputeCharge(charge);
    await deliver(setup, double.event("charge.dispute.created", dispute));
    assert.equal((await dealState(db.pool, disputed.id)).status, "disputed");
    await check(disputed.id, "disputed");

    const busy = await payableDeal(setup);
    await db.pool.query(
      `insert into public.deal_settlements (deal_id, kind, amount, currency, destination_account)
       values ($1, 'payout', 1125, 'USD', $2)`,
      [busy.id, busy.accountId],
    );
    await check(busy.id, "payout_in_progress");
  },
);

sqlTest(
  "refund-deal-payment: refusals — no token, non-admin, participants, bad input, unknown deal",
  async () => {
    const deal = await payableDeal(setup);
    const none = await invoke<Answer>(handler, runtime, { body: { dealId: deal.id } });
    assert.equal(none.status, 401);
    const stranger = await createUser(db.pool);
    for (const user of [stranger, deal.buyer, deal.seller]) {
      const res = await refund({ dealId: deal.id }, await keys.userToken(user));
      assert.equal(res.status, 403);
    }
    for (
      const body of [{ dealId: "x" }, { dealId: deal.id, reason: "" }, {
        dealId: deal.id,
        reverseTransfer: "yes",
      }]
    ) {
      const res = await refund(body);
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.equal(res.body.error?.code, "invalid_input");
    }
    assert.equal((await refund({ dealId: crypto.randomUUID() })).status, 404);
    assert.equal(refundsOf(deal.id).length, 0);
    assert.equal(await settlementCount(deal.id), 0);
    assert.equal((await dealState(db.pool, deal.id)).status, "in_handover");
  },
);

sqlTest(
  "refund-deal-payment: a crash after the processor refunded is finished by the next call without a second refund",
  async () => {
    const deal = await payableDeal(setup);
    await db.pool.query(`
      create or replace function public.test_crash_after_refund() returns trigger
      language plpgsql as $$
      begin
        raise exception 'simulated crash after the processor call';
      end $$;
      create trigger test_crash_after_refund before update on public.deal_settlements
        for each row when (new.status = 'succeeded')
        execute function public.test_crash_after_refund();`);
    try {
      assert.equal((await refund({ dealId: deal.id })).status, 500);
    } finally {
      await db.pool.query(`
        drop trigger test_crash_after_refund on public.deal_settlements;
        drop function public.test_crash_after_refund();`);
    }
    assert.equal(refundsOf(deal.id).length, 1);
    double.store.idempotency.clear();
    const res = await refund({ dealId: deal.id });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.status, "refunded");
    assert.equal(refundsOf(deal.id).length, 1);
  },
);
