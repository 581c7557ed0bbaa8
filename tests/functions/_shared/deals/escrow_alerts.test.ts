import assert from "node:assert/strict";
import release from "../../../../supabase/functions/release-deal-payout/handler.ts";
import runDailyTasks from "../../../../supabase/functions/run-daily-tasks/handler.ts";
import { payprocEnv } from "../../../support/billing.ts";
import { sqlTest } from "../../../support/db.ts";
import { createDeal, dealEvents, dealsSetup, payableDeal } from "../../../support/deals.ts";
import { emailEnv, notificationsOf } from "../../../support/notifications.ts";
import { invoke, testRuntime } from "../../../support/runtime.ts";
import { createUser } from "../../../support/sql.ts";

const setup = await dealsSetup();
const { db, double, keys } = setup;
const secondAdmin = await createUser(db.pool, { admin: true });
const admins = [setup.admin, secondAdmin];
const DAY = 86_400_000;

interface DailyAnswer {
  results: Array<{ job: string; status: string; counts?: { items?: Record<string, string[]> } }>;
}

/** Runs the daily tasks as of `daysLater` days from now (the runtime's clock), with `env`. */
async function runDaily(daysLater: number, slot: string, env: Record<string, string> = {}) {
  const runtime = await testRuntime(
    db,
    { ...payprocEnv(double), ...emailEnv(setup.email), ...env },
    { clock: () => new Date(Date.now() + daysLater * DAY) },
  );
  try {
    const answer = await invoke<DailyAnswer>(runDailyTasks, runtime, {
      token: keys.schedulerToken,
      body: { slot, force: true },
    });
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    const sub = answer.body.results.find((r) => r.job === "escrow-alerts");
    assert.equal(sub?.status, "succeeded");
    return sub?.counts?.items?.flagged ?? [];
  } finally {
    await runtime.close();
  }
}

async function escrowNotices(userId: string, dealId: string) {
  return (await notificationsOf(db.pool, userId)).filter((n) =>
    n.dedupe_key === `escrow-hold:${dealId}`
  );
}

sqlTest(
  "escrow-alerts flags every deal held past ESCROW_ALERT_DAYS once, to every admin, with the days left",
  async () => {
    const funded = await payableDeal(setup, { handover: false });
    const inHandover = await payableDeal(setup, { handover: "started" });
    const paidOut = await payableDeal(setup);
    const released = await invoke(release, setup.runtime, {
      token: await keys.userToken(setup.admin),
      body: { dealId: paidOut.id },
    });
    assert.equal(released.status, 200);
    const unpaid = await createDeal(db.pool);

    // 74 days on: nothing yet (the default is 75).
    assert.deepEqual(await runDaily(74, "escrow-74"), []);
    // 76 days on: the two deals whose money is still in escrow.
    const flagged = await runDaily(76, "escrow-76");
    assert.deepEqual([...flagged].sort(), [funded.id, inHandover.id].sort());
    for (const admin of admins) {
      const [notice] = await escrowNotices(admin.id, funded.id);
      assert.equal(notice?.type, "admin_alerts");
      assert.match(notice?.body ?? "", /held in escrow for 76 days/);
      assert.match(notice?.body ?? "", /14 days left/);
      assert.equal((await escrowNotices(admin.id, paidOut.id)).length, 0);
      assert.equal((await escrowNotices(admin.id, unpaid.id)).length, 0);
    }
    assert.equal(
      setup.email.sentTo(setup.admin.email).filter((m) =>
        m.subject.startsWith("Escrow: 14 days left")
      ).length,
      2,
    );
    assert.ok(
      (await dealEvents(db.pool, funded.id)).includes("funded→funded:escrow_hold_flagged"),
    );

    // The next day (and a run started twice) flags nothing again.
    assert.deepEqual(await runDaily(77, "escrow-77"), []);
    assert.deepEqual(await runDaily(77, "escrow-77b"), []);
    for (const admin of admins) assert.equal((await escrowNotices(admin.id, funded.id)).length, 1);
  },
);

sqlTest("ESCROW_ALERT_DAYS moves the warning earlier", async () => {
  const deal = await payableDeal(setup, { handover: false });
  assert.ok(!(await runDaily(31, "escrow-31-default")).includes(deal.id));
  const flagged = await runDaily(31, "escrow-31", { ESCROW_ALERT_DAYS: "30" });
  assert.ok(flagged.includes(deal.id));
  const [notice] = await escrowNotices(setup.admin.id, deal.id);
  assert.match(notice?.body ?? "", /59 days left/);
});

sqlTest(
  "escrow-alerts flags a deal on the run 75 days and 1 hour after its funding, not on the one 74 days and 23 hours after",
  async () => {
    // Funded at a time of day after the daily run: the run of day 75 comes
    // 74 days and 23 hours on (too early), the next one 75 days and 1 hour
    // on, and that one must flag it — a day late, never two.
    const deal = await payableDeal(setup, { handover: false });
    const hour = 1 / 24;
    assert.ok(!(await runDaily(75 - hour, "escrow-74d23h")).includes(deal.id));
    assert.equal((await escrowNotices(setup.admin.id, deal.id)).length, 0);
    assert.ok(!(await dealEvents(db.pool, deal.id)).includes("funded→funded:escrow_hold_flagged"));

    assert.ok((await runDaily(75 + hour, "escrow-75d1h")).includes(deal.id));
    for (const admin of admins) {
      const notices = await escrowNotices(admin.id, deal.id);
      assert.equal(notices.length, 1);
      assert.match(notices[0]?.body ?? "", /held in escrow for 75 days/);
      assert.match(notices[0]?.body ?? "", /15 days left/);
    }
  },
);
