import assert from "node:assert/strict";
import refund from "../../../../supabase/functions/refund-deal-payment/handler.ts";
import release from "../../../../supabase/functions/release-deal-payout/handler.ts";
import { deliver } from "../../../support/billing.ts";
import { sqlTest } from "../../../support/db.ts";
import { dealEvents, dealsSetup, dealState, payableDeal } from "../../../support/deals.ts";
import { emailLogs, notificationsOf } from "../../../support/notifications.ts";
import { payprocClient } from "../../../support/payproc_double.ts";
import { invoke } from "../../../support/runtime.ts";
import { createUser } from "../../../support/sql.ts";

const setup = await dealsSetup({ PAYPROC_TIMEOUT_MS: "30000" });
const { db, double, runtime, keys } = setup;
const stripe = payprocClient(double);
const secondAdmin = await createUser(db.pool, { admin: true });
const admins = [setup.admin, secondAdmin];

interface WebhookAnswer {
  outcome: string;
  detail?: string;
}

/** How many notices with `key` each admin has. */
async function adminNotices(key: string): Promise<number[]> {
  const counts = [];
  for (const admin of admins) {
    counts.push(
      (await notificationsOf(db.pool, admin.id)).filter((n) => n.dedupe_key === key).length,
    );
  }
  return counts;
}

/** The alert e-mails written for `key` (one per admin). */
async function alertMails(key: string) {
  return (await emailLogs(db.pool)).filter((l) => l.idempotency_key?.startsWith(`${key}:`));
}

sqlTest(
  "a refund made at the processor after the payout went out: every admin is told once with the deal, the amount and the transfer, however often it is reported",
  async () => {
    const deal = await payableDeal(setup);
    const paid = await invoke<{ payout: { payprocId: string } }>(release, runtime, {
      token: await keys.userToken(setup.admin),
      body: { dealId: deal.id },
    });
    assert.equal(paid.status, 200, JSON.stringify(paid.body));
    const transferId = paid.body.payout.payprocId;
    const key = `payout-after-refund:${transferId}`;
    const transfer = double.get("transfer", transferId)!;

    // The transfer of a deal that is not refunded: nothing to tell.
    const plain = await deliver<WebhookAnswer>(setup, double.event("transfer.created", transfer));
    assert.equal(plain.status, 200);
    assert.equal(plain.body.detail, "nothing to do");
    assert.deepEqual(await adminNotices(key), [0, 0]);

    // Refunded in the dashboard, without taking the payout back.
    const made = await stripe.refunds.create({ payment_intent: deal.intentId });
    const charge = double.get("charge", made.charge as string)!;
    const refunded = double.event("charge.refunded", charge);
    const answers = await Promise.all([
      deliver(setup, refunded),
      deliver(setup, refunded),
      deliver(setup, double.event("transfer.updated", transfer)),
    ]);
    assert.deepEqual(answers.map((a) => a.status), [200, 200, 200]);
    assert.equal((await dealState(db.pool, deal.id)).status, "refunded");
    // Replayed, and reported again by the transfer's own events.
    await deliver(setup, refunded);
    await deliver(setup, double.event("transfer.created", transfer));
    await deliver(setup, double.event("transfer.updated", transfer));

    assert.deepEqual(await adminNotices(key), [1, 1]);
    const notice = (await notificationsOf(db.pool, setup.admin.id)).find((n) =>
      n.dedupe_key === key
    )!;
    assert.equal(notice.type, "admin_alerts");
    assert.equal(notice.link, `/admin/deals/${deal.id}`);
    assert.deepEqual(
      { dealId: notice.data.dealId, transferId: notice.data.transferId },
      { dealId: deal.id, transferId },
    );
    const { rows: [payout] } = await db.pool.query(
      "select amount::text as amount from public.deal_settlements where payproc_id = $1",
      [transferId],
    );
    assert.equal(notice.data.amount, payout.amount);
    assert.deepEqual((await alertMails(key)).map((l) => l.email_type), [
      "admin_payout_after_refund",
      "admin_payout_after_refund",
    ]);
    const mail = setup.email.sentTo(setup.admin.email).find((m) => m.text?.includes(transferId));
    assert.match(mail?.subject ?? "", /refunded deal/);
    assert.match(mail?.text ?? "", /refunded/);
    assert.equal(
      (await dealEvents(db.pool, deal.id)).filter((e) =>
        e === "refunded→refunded:payout_reached_seller_after_refund"
      ).length,
      1,
    );
  },
);

sqlTest(
  "a transfer made at the processor for a deal already refunded: its transfer.created tells every admin once",
  async () => {
    const deal = await payableDeal(setup);
    const refunded = await invoke(refund, runtime, {
      token: await keys.userToken(setup.admin),
      body: { dealId: deal.id },
    });
    assert.equal(refunded.status, 200, JSON.stringify(refunded.body));
    assert.equal((await dealState(db.pool, deal.id)).status, "refunded");

    const made = await stripe.transfers.create({
      amount: 40000,
      currency: "usd",
      destination: deal.accountId,
      transfer_group: `deal:${deal.id}`,
      metadata: { deal_id: deal.id, kind: "payout" },
    });
    const transfer = double.get("transfer", made.id)!;
    const key = `payout-after-refund:${transfer.id}`;
    const created = double.event("transfer.created", transfer);
    const answers = await Promise.all([
      deliver<WebhookAnswer>(setup, created),
      deliver<WebhookAnswer>(setup, created),
      deliver<WebhookAnswer>(setup, double.event("transfer.updated", transfer)),
    ]);
    assert.deepEqual(answers.map((a) => a.status), [200, 200, 200]);
    await deliver(setup, created);
    assert.deepEqual(await adminNotices(key), [1, 1]);
    assert.deepEqual((await alertMails(key)).map((l) => l.email_type), [
      "admin_payout_after_refund",
      "admin_payout_after_refund",
    ]);
    const notice = (await notificationsOf(db.pool, secondAdmin.id)).find((n) =>
      n.dedupe_key === key
    )!;
    assert.equal(notice.data.amount, "400.00");
    assert.equal(notice.data.dealId, deal.id);

    // Taken back in full: a later report tells nothing more (and nothing new).
    const { transfer: reversed } = double.reverseTransfer(transfer.id);
    await deliver(setup, double.event("transfer.updated", reversed));
    assert.deepEqual(await adminNotices(key), [1, 1]);
  },
);
