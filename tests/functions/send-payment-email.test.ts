import assert from "node:assert/strict";
import handler from "../../supabase/functions/send-payment-email/handler.ts";
import { createListing } from "../db/core_fixtures.ts";
import { sqlTest } from "../support/db.ts";
import { emailLogs, notificationsOf, notificationsSetup } from "../support/notifications.ts";
import { invoke } from "../support/runtime.ts";
import { createUser } from "../support/sql.ts";

const { db, double, runtime, keys } = await notificationsSetup();

interface Answer {
  results: Array<{ userId: string; inApp: string; email: { id: string; status: string } | null }>;
  error?: { code: string };
}

async function createDeal(amount: string, currency: string) {
  const seller = await createUser(db.pool);
  const buyer = await createUser(db.pool);
  const listing = await createListing(db.pool, seller.id);
  await db.pool.query(
    `update public.listings set title = $2 where id = $1`,
    [listing.id, `Shop <b>&</b> "Co"`],
  );
  const { rows } = await db.pool.query<{ id: string }>(
    `insert into public.deals (listing_id, buyer_id, seller_id, amount, currency)
     values ($1, $2, $3, $4, $5) returning id`,
    [listing.id, buyer.id, seller.id, amount, currency],
  );
  return { id: rows[0]!.id, buyer, seller };
}

async function send(body: unknown, token = keys.serviceKey) {
  return await invoke<Answer>(handler, runtime, { token, body });
}

sqlTest(
  "send-payment-email: payment_received tells buyer and seller, amount in the deal's currency",
  async () => {
    double.reset();
    const deal = await createDeal("1500.00", "USD");
    const res = await send({ dealId: deal.id, kind: "payment_received" });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(
      res.body.results.map((r) => r.userId).sort(),
      [deal.buyer.id, deal.seller.id].sort(),
    );
    assert.ok(res.body.results.every((r) => r.email?.status === "sent" && r.inApp === "created"));
    const [toBuyer] = double.sentTo(deal.buyer.email);
    const [toSeller] = double.sentTo(deal.seller.email);
    assert.match(toBuyer?.text ?? "", /\$1,500\.00/);
    assert.match(toSeller?.text ?? "", /into escrow/);
    assert.ok(!toBuyer?.html?.includes("<b>&</b>"), "the listing title is escaped");
    assert.match(toBuyer?.html ?? "", /Shop &lt;b&gt;&amp;&lt;\/b&gt; &quot;Co&quot;/);
    const [notice] = await notificationsOf(db.pool, deal.buyer.id);
    assert.equal(notice?.type, "payments");
    assert.equal(notice?.link, `/deals/${deal.id}`);
  },
);

sqlTest(
  "send-payment-email: payout_released gives the seller the amount less commission; zero-decimal currency",
  async () => {
    double.reset();
    const deal = await createDeal("150000.00", "JPY");
    const { rows } = await db.pool.query<{ fee: string }>(
      "select public.calculate_commission(150000.00, $1)::text as fee",
      [deal.seller.id],
    );
    const fee = Number(rows[0]!.fee);
    const res = await send({ dealId: deal.id, kind: "payout_released" });
    assert.equal(res.status, 200);
    const [toSeller] = double.sentTo(deal.seller.email);
    const payout = new Intl.NumberFormat("en-US", { style: "currency", currency: "JPY" })
      .format(150000 - fee);
    assert.ok(toSeller?.text?.includes(payout), `${toSeller?.text} should include ${payout}`);
    assert.ok(toSeller?.text?.includes("¥150,000"));
    assert.equal(double.sentTo(deal.buyer.email).length, 1);
  },
);

sqlTest(
  "send-payment-email: payment_failed goes to the buyer only; refund_issued to both",
  async () => {
    double.reset();
    const deal = await createDeal("99.90", "EUR");
    const failed = await send({ dealId: deal.id, kind: "payment_failed" });
    assert.deepEqual(failed.body.results.map((r) => r.userId), [deal.buyer.id]);
    assert.match(double.sentTo(deal.buyer.email)[0]?.text ?? "", /€99\.90/);
    assert.equal(double.sentTo(deal.seller.email).length, 0);
    const refunded = await send({ dealId: deal.id, kind: "refund_issued" });
    assert.equal(refunded.body.results.length, 2);
  },
);

sqlTest("send-payment-email: a repeated call sends nothing again", async () => {
  double.reset();
  const deal = await createDeal("10.00", "USD");
  const answers = await Promise.all(
    Array.from({ length: 5 }, () => send({ dealId: deal.id, kind: "payment_received" })),
  );
  assert.ok(answers.every((a) => a.status === 200));
  assert.equal(double.sent.length, 2);
  assert.equal((await notificationsOf(db.pool, deal.buyer.id)).length, 1);
  const logs = (await emailLogs(db.pool, "payment_received")).filter((r) =>
    r.user_id === deal.buyer.id || r.user_id === deal.seller.id
  );
  assert.equal(logs.length, 2);
});

sqlTest(
  "send-payment-email: unknown deal 404, bad kind 400, a user 403; nothing written",
  async () => {
    double.reset();
    const before = (await emailLogs(db.pool)).length;
    const unknown = await send({ dealId: crypto.randomUUID(), kind: "payment_received" });
    assert.equal(unknown.status, 404);
    const deal = await createDeal("10.00", "USD");
    const bad = await send({ dealId: deal.id, kind: "paid" });
    assert.equal(bad.status, 400);
    const asBuyer = await send(
      { dealId: deal.id, kind: "payment_received" },
      await keys.userToken(deal.buyer),
    );
    assert.equal(asBuyer.status, 403);
    assert.equal((await emailLogs(db.pool)).length, before);
    assert.equal(double.sent.length, 0);
  },
);
