/**
 * `apa-auto-handover`: starting handovers once the agreement exists, the
 * inspection window and the daily reminders on an injected clock, the
 * completion ("ready for payout") with its notices and the payout it
 * unlocks, uploads settled, reruns and concurrent starts.
 *
 * Deals of earlier tests stay in the database; every assertion names its
 * own deals.
 *
 * @module
 */
import assert from "node:assert/strict";
import handler from "../../supabase/functions/apa-auto-handover/handler.ts";
import releaseDealPayout from "../../supabase/functions/release-deal-payout/handler.ts";
import { sqlTest } from "../support/db.ts";
import {
  createDeal,
  dealEvents,
  dealsSetup,
  dealState,
  moveDeal,
  payableDeal,
  type TestDeal,
} from "../support/deals.ts";
import { confirmDelivered, deliverAll, recordApa, rpc, stepsOf } from "../support/handover.ts";
import {
  assertOneRanOneSkipped,
  type JobAnswerBody,
  twoStartsWhileLocked,
} from "../support/jobs.ts";
import { emailEnv, emailLogs, notificationsOf } from "../support/notifications.ts";
import { confirmDiligence, createLoiDeal, LOI_TERMS, testDealOf } from "../support/loi.ts";
import { invoke, testRuntime } from "../support/runtime.ts";

interface HandoverRun extends JobAnswerBody {
  scanned: number;
  changed: number;
  failed: number;
  counts: Record<string, number>;
  items?: Record<string, string[]>;
}

const setup = await dealsSetup();
const { db, keys } = setup;
const HOUR = 60 * 60 * 1000;
const DAY = 24 * HOUR;

/** The job's clock, set by `runAt(ms)`: `ms` after the real now. */
let clock = new Date();
const runtime = await testRuntime(db, emailEnv(setup.email), { clock: () => clock });

async function runAt(offsetMs = 0) {
  clock = new Date(Date.now() + offsetMs);
  const res = await invoke<HandoverRun>(handler, runtime, { token: keys.schedulerToken });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body;
}

/** A new deal paid into escrow (by SQL: no processor needed for the handover). */
async function fundedDeal(): Promise<TestDeal> {
  const deal = await createDeal(db.pool);
  await moveDeal(db.pool, deal.id, "funded");
  return deal;
}

/** A funded deal with its agreement, moved into the handover by the job. */
async function dealInHandover(): Promise<TestDeal> {
  const deal = await fundedDeal();
  await recordApa(db.pool, deal.id);
  const run = await runAt();
  assert.ok(run.items?.handover_started?.includes(deal.id), JSON.stringify(run));
  return deal;
}

async function handoverNotices(userId: string) {
  return (await notificationsOf(db.pool, userId)).filter((n) => n.type === "handover");
}

async function completion(dealId: string) {
  const { rows } = await db.pool.query(
    "select handover_completed_at, handover_completion from public.deals where id = $1",
    [dealId],
  );
  return rows[0] as { handover_completed_at: Date | null; handover_completion: string | null };
}

sqlTest("apa-auto-handover: only scheduled callers and admins start it", async () => {
  const buyer = (await createDeal(db.pool)).buyer;
  const denied = await invoke(handler, runtime, { token: await keys.userToken(buyer) });
  assert.equal(denied.status, 403);
  const admin = await invoke<HandoverRun>(handler, runtime, {
    token: await keys.userToken(setup.admin),
  });
  assert.equal(admin.status, 200, JSON.stringify(admin.body));
});

sqlTest(
  "apa-auto-handover: a funded deal's handover starts once its agreement exists",
  async () => {
    const waiting = await fundedDeal();
    const ready = await fundedDeal();
    await recordApa(db.pool, ready.id);

    const run = await runAt();
    assert.ok(run.items?.handover_started?.includes(ready.id));
    assert.ok(!run.items?.handover_started?.includes(waiting.id));
    assert.equal((await dealState(db.pool, ready.id)).status, "in_handover");
    assert.equal((await dealState(db.pool, waiting.id)).status, "funded");
    assert.equal(
      (await dealEvents(db.pool, ready.id)).at(-1),
      "funded→in_handover:handover_started",
    );

    // A rerun changes nothing.
    const again = await runAt();
    assert.ok(!again.items?.handover_started?.includes(ready.id));
    assert.equal(
      (await dealEvents(db.pool, ready.id)).filter((e) => e.includes("handover_started")).length,
      1,
    );
  },
);

sqlTest("apa-auto-handover: the late seller is reminded once per day of lateness", async () => {
  const deal = await dealInHandover();
  await runAt(23 * HOUR);
  assert.equal((await handoverNotices(deal.seller.id)).length, 0, "not late yet");

  const first = await runAt(25 * HOUR);
  assert.ok((first.counts.reminders_seller ?? 0) >= 1);
  let notices = await handoverNotices(deal.seller.id);
  assert.equal(notices.length, 1);
  assert.equal(notices[0]!.dedupe_key, `handover-reminder:${deal.id}:seller:1`);
  assert.equal(notices[0]!.link, `/deals/${deal.id}`);
  assert.match(notices[0]!.body, /6 handover steps/);
  const mail = (await emailLogs(db.pool, "handover_reminder")).filter((m) =>
    m.user_id === deal.seller.id
  );
  assert.equal(mail.length, 1);
  assert.equal(mail[0]!.send_status, "sent");
  const sent = setup.email.sentTo(deal.seller.email);
  assert.equal(sent.length, 1);
  assert.match(sent[0]!.html ?? "", /Domain name transfer/);
  assert.match(sent[0]!.html ?? "", new RegExp(`http://localhost:5173/deals/${deal.id}`));

  await runAt(30 * HOUR);
  assert.equal((await handoverNotices(deal.seller.id)).length, 1, "same day: no second reminder");
  await runAt(49 * HOUR);
  notices = await handoverNotices(deal.seller.id);
  assert.deepEqual(notices.map((n) => n.dedupe_key), [
    `handover-reminder:${deal.id}:seller:1`,
    `handover-reminder:${deal.id}:seller:2`,
  ]);
  assert.equal((await handoverNotices(deal.buyer.id)).length, 0, "the buyer is not late");
});

sqlTest(
  "apa-auto-handover: unanswered deliveries are confirmed after the inspection window, and admins told",
  async () => {
    const deal = await dealInHandover();
    await deliverAll(db.pool, deal);
    await confirmDelivered(db.pool, deal, 2);

    // A day later the buyer is the late one.
    await runAt(25 * HOUR);
    const reminders = await handoverNotices(deal.buyer.id);
    assert.equal(reminders.length, 1);
    assert.equal(reminders[0]!.dedupe_key, `handover-reminder:${deal.id}:buyer:1`);
    assert.match(reminders[0]!.body, /delivered 4 handover steps/);
    assert.equal((await handoverNotices(deal.seller.id)).length, 0);

    // Just inside the window: nothing is confirmed.
    await runAt(7 * DAY - HOUR);
    assert.equal(
      (await stepsOf(db.pool, deal.id)).filter((s) => s.status === "confirmed").length,
      2,
    );
    assert.equal((await completion(deal.id)).handover_completed_at, null);

    const lapsed = await runAt(7 * DAY + HOUR);
    assert.ok(lapsed.items?.inspection_lapsed?.includes(deal.id));
    assert.ok(lapsed.items?.ready_for_payout?.includes(deal.id));
    const steps = await stepsOf(db.pool, deal.id);
    assert.deepEqual(steps.map((s) => s.confirmation), [
      "buyer",
      "buyer",
      "inspection_lapsed",
      "inspection_lapsed",
      "inspection_lapsed",
      "inspection_lapsed",
    ]);
    assert.equal(steps[5]!.confirmed_at?.getTime(), clock.getTime(), "stamped by the job's clock");
    const done = await completion(deal.id);
    assert.equal(done.handover_completion, "inspection_lapsed");
    assert.equal(done.handover_completed_at?.getTime(), clock.getTime());

    // The buyer's inspection window starts: 7 days from the completion.
    const window = await db.pool.query<{ ends: Date }>(
      "select inspection_ends_at as ends from public.deals where id = $1",
      [deal.id],
    );
    assert.equal(window.rows[0]!.ends.getTime(), clock.getTime() + 7 * DAY);

    // The seller and the buyer are told once; the admins not at all (the
    // release is automatic).
    const sellerNotice = (await handoverNotices(deal.seller.id)).filter((n) =>
      n.dedupe_key === `handover-complete:${deal.id}`
    );
    assert.equal(sellerNotice.length, 1);
    assert.match(sellerNotice[0]!.body, /inspection period lapsed/);
    assert.match(sellerNotice[0]!.body, /\$1,1\d\d\.\d\d is released automatically/);
    const buyerNotice = (await handoverNotices(deal.buyer.id)).filter((n) =>
      n.dedupe_key === `inspection-started:${deal.id}`
    );
    assert.equal(buyerNotice.length, 1);
    assert.equal(
      (await notificationsOf(db.pool, setup.admin.id)).filter((n) => n.data.dealId === deal.id)
        .length,
      0,
    );

    // Nothing happens twice.
    const rerun = await runAt(7 * DAY + 2 * HOUR);
    assert.ok(!rerun.items?.ready_for_payout?.includes(deal.id));
    assert.equal(
      (await handoverNotices(deal.seller.id)).filter((n) =>
        n.dedupe_key === `handover-complete:${deal.id}`
      ).length,
      1,
    );
    // The checklist is closed.
    await assert.rejects(
      rpc(db.pool, deal.buyer, "dispute_handover_step", [steps[5]!.id, "late"]),
      /handover is complete/,
    );
  },
);

sqlTest(
  "apa-auto-handover: a dispute stops the clock and makes the seller the late one",
  async () => {
    const deal = await dealInHandover();
    await deliverAll(db.pool, deal);
    const steps = await stepsOf(db.pool, deal.id);
    await rpc(db.pool, deal.buyer, "dispute_handover_step", [steps[0]!.id, "Wrong domain"]);

    await runAt(8 * DAY);
    assert.equal(
      (await stepsOf(db.pool, deal.id)).filter((s) => s.status === "confirmed").length,
      0,
    );
    assert.equal((await completion(deal.id)).handover_completed_at, null);
    const sellerReminders = await handoverNotices(deal.seller.id);
    assert.equal(sellerReminders.length, 1);
    assert.match(sellerReminders[0]!.body, /1 handover step:/);
    assert.equal((await handoverNotices(deal.buyer.id)).length, 0);
  },
);

sqlTest(
  "apa-auto-handover: a handover the buyer confirmed is ready for payout, and the payout goes through",
  async () => {
    const deal = await payableDeal(setup, { handover: "started" });
    await deliverAll(db.pool, deal);
    await confirmDelivered(db.pool, deal);
    const early = await invoke<{ error: { details: { reason: string } } }>(
      releaseDealPayout,
      setup.runtime,
      { token: await keys.userToken(setup.admin), body: { dealId: deal.id } },
    );
    assert.equal(early.status, 409);
    assert.equal(early.body.error.details.reason, "handover_not_complete");

    const run = await runAt();
    assert.ok(run.items?.ready_for_payout?.includes(deal.id));
    assert.equal((await completion(deal.id)).handover_completion, "buyer_confirmed");
    const paid = await invoke<{ status: string }>(releaseDealPayout, setup.runtime, {
      token: await keys.userToken(setup.admin),
      body: { dealId: deal.id },
    });
    assert.equal(paid.status, 200, JSON.stringify(paid.body));
    assert.equal(paid.body.status, "completed");
  },
);

sqlTest("apa-auto-handover: stored uploads are confirmed, lapsed ones expired", async () => {
  const deal = await createDeal(db.pool);
  const insert = async (name: string, expiresInMinutes: number) => {
    const path = `${deal.id}/other/${name}`;
    const { rows } = await db.pool.query<{ id: string }>(
      `insert into public.deal_documents
         (deal_id, uploaded_by, kind, path, file_name, content_type, size_bytes, upload_expires_at)
       values ($1, $2, 'other', $3, $4, 'text/plain', 5, now() + make_interval(mins => $5))
       returning id`,
      [deal.id, deal.buyer.id, path, name, expiresInMinutes],
    );
    return { id: rows[0]!.id, path };
  };
  const stored = await insert("stored.txt", 60);
  const lapsed = await insert("lapsed.txt", 60);
  await db.pool.query(
    `insert into storage.objects (bucket_id, name, metadata)
     values ('deal-documents', $1, '{"size": 7, "mimetype": "text/plain"}')`,
    [stored.path],
  );
  const run = await runAt(3 * HOUR);
  assert.ok((run.counts.uploads_confirmed ?? 0) >= 1);
  assert.ok((run.counts.uploads_expired ?? 0) >= 1);
  const { rows } = await db.pool.query(
    "select id, status, size_bytes::int as size from public.deal_documents where deal_id = $1 order by file_name",
    [deal.id],
  );
  assert.deepEqual(rows, [
    { id: lapsed.id, status: "expired", size: 5 },
    { id: stored.id, status: "uploaded", size: 7 },
  ]);
});

sqlTest("apa-auto-handover: two starts at once: one runs, one is skipped", async () => {
  const answers = await twoStartsWhileLocked(
    db.pool,
    "public.deal_documents",
    () => invoke<HandoverRun>(handler, runtime, { token: keys.schedulerToken }),
  );
  assertOneRanOneSkipped(answers);
});

sqlTest("apa-auto-handover: many starts at once change each deal once", async () => {
  const deals = await Promise.all([fundedDeal(), fundedDeal(), fundedDeal()]);
  for (const deal of deals) await recordApa(db.pool, deal.id);
  clock = new Date();
  const answers = await Promise.all(
    Array.from(
      { length: 5 },
      () => invoke<HandoverRun>(handler, runtime, { token: keys.schedulerToken }),
    ),
  );
  assert.deepEqual(answers.map((a) => a.status), [200, 200, 200, 200, 200]);
  for (const deal of deals) {
    const started = answers.flatMap((a) => a.body.items?.handover_started ?? []);
    assert.equal(started.filter((id) => id === deal.id).length, 1);
    assert.equal(
      (await dealEvents(db.pool, deal.id)).filter((e) => e.includes("handover_started")).length,
      1,
    );
  }
});

sqlTest("apa-auto-handover: the schedule runs it hourly", async () => {
  const { rows } = await db.pool.query(
    "select cron from public.job_schedules where function_name = 'apa-auto-handover'",
  );
  assert.deepEqual(rows, [{ cron: "20 * * * *" }]);
});

addEventListener("unload", () => {
  runtime.close();
});

sqlTest(
  "apa-auto-handover: an agreement printed before the deal was funded (a diligence draft) does not start the handover",
  async () => {
    const loi = await createLoiDeal(db.pool, { terms: { ...LOI_TERMS, inspection_days: 3 } });
    await recordApa(db.pool, loi.dealId); // the draft, printed during due diligence
    await confirmDiligence(db.pool, loi);
    await moveDeal(db.pool, loi.dealId, "funded");
    const first = await runAt();
    assert.ok(!first.items?.handover_started?.includes(loi.dealId), JSON.stringify(first));
    assert.equal((await dealState(db.pool, loi.dealId)).status, "funded");

    await recordApa(db.pool, loi.dealId); // generated once funded
    const second = await runAt();
    assert.ok(second.items?.handover_started?.includes(loi.dealId), JSON.stringify(second));
  },
);

sqlTest(
  "apa-auto-handover: a deal's agreed inspection_days set its inspection window, not HANDOVER_INSPECTION_DAYS",
  async () => {
    const loi = await createLoiDeal(db.pool, { terms: { ...LOI_TERMS, inspection_days: 3 } });
    await confirmDiligence(db.pool, loi);
    await moveDeal(db.pool, loi.dealId, "funded");
    await recordApa(db.pool, loi.dealId);
    const started = await runAt();
    assert.ok(started.items?.handover_started?.includes(loi.dealId));
    const deal = testDealOf(loi);
    await deliverAll(db.pool, deal);

    await runAt(3 * DAY - HOUR);
    assert.equal((await completion(loi.dealId)).handover_completed_at, null, "inside 3 days");
    const lapsed = await runAt(3 * DAY + HOUR);
    assert.ok(lapsed.items?.inspection_lapsed?.includes(loi.dealId), JSON.stringify(lapsed));
    assert.equal((await completion(loi.dealId)).handover_completion, "inspection_lapsed");
  },
);
