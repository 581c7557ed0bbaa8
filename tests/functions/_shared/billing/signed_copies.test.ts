import assert from "node:assert/strict";
import { applyCopies } from "../../../../supabase/functions/_shared/billing/signed_copies.ts";
import { mirroredObject } from "../../../../supabase/functions/_shared/billing/subscription_rows.ts";
import { Db } from "../../../../supabase/functions/_shared/platform/db.ts";
import { createTestDatabase, sqlTest } from "../../../support/db.ts";
import { createUser } from "../../../support/sql.ts";

const test = await createTestDatabase();

/** A row mirroring a new subscription, current as of Unix second `at`. */
async function mirrored(at: number) {
  const user = await createUser(test.pool);
  const id = crypto.randomUUID().slice(0, 8);
  await test.pool.query(
    `insert into public.subscriptions (user_id, subscription_level, subscription_status, source,
       payproc_customer_id, payproc_subscription_id, payproc_state_at)
     values ($1, 'starter', 'active', 'payproc', $2, $3, to_timestamp($4))`,
    [user.id, `cus_${id}`, `sub_${id}`, at],
  );
  const mirror = (status: string, level = "starter") =>
    mirroredObject({
      subscriptionId: `sub_${id}`,
      customerId: `cus_${id}`,
      level: level as "starter",
      status: status as "active",
      priceId: null,
      interval: null,
      periodStart: null,
      periodEnd: null,
      cancelAtPeriodEnd: false,
      created: 0,
    });
  return { user, mirror };
}

function ledger(created: number) {
  return {
    id: `evt_${crypto.randomUUID().slice(0, 12)}`,
    type: "customer.subscription.updated",
    created,
    account: null,
    livemode: false,
    api_version: null,
    endpoint: "platform",
  };
}

sqlTest(
  "applyCopies(): a batch with an item the database refuses writes the others one by one; the refused one fails alone",
  async () => {
    const t = Math.floor(Date.now() / 1000);
    const good = await mirrored(t);
    const bad = await mirrored(t);
    const db = new Db(test.url, 2);
    try {
      const outcomes = await applyCopies(db, [
        { mirror: good.mirror("past_due"), event: ledger(t + 1) },
        // Not a level subscriptions accepts: the whole batch call fails.
        { mirror: bad.mirror("past_due", "platinum"), event: ledger(t + 1) },
      ]);
      assert.deepEqual(outcomes[0], { ok: true, value: { outcome: "applied", detail: null } });
      assert.equal(outcomes[1]?.ok, false);
      const status = async (userId: string) =>
        (await test.pool.query(
          "select subscription_status from public.subscriptions where user_id = $1",
          [
            userId,
          ],
        )).rows[0].subscription_status;
      assert.equal(await status(good.user.id), "past_due");
      assert.equal(await status(bad.user.id), "active");
    } finally {
      await db.close();
    }
  },
);
