import assert from "node:assert/strict";
import { expireGrants } from "../../../../supabase/functions/_shared/billing/grants.ts";
import { Db } from "../../../../supabase/functions/_shared/platform/db.ts";
import { createTestDatabase, sqlTest } from "../../../support/db.ts";
import { createUser } from "../../../support/sql.ts";

const db = await createTestDatabase();
const sql = new Db(db.url);

sqlTest(
  "expireGrants() ends grants past their end (all, or one user's) and leaves the rest",
  async () => {
    const [past, running, endless, other] = await Promise.all(
      [1, 2, 3, 4].map(() => createUser(db.pool)),
    );
    const insert = (id: string, end: string | null) =>
      db.pool.query(
        `insert into public.subscriptions (user_id, subscription_level, source, current_period_start, current_period_end)
       values ($1, 'starter', 'grant', now() - interval '40 days', $2::timestamptz)`,
        [id, end],
      );
    await insert(past!.id, new Date(Date.now() - 1000).toISOString());
    await insert(running!.id, new Date(Date.now() + 86_400_000).toISOString());
    await insert(endless!.id, null);
    await insert(other!.id, new Date(Date.now() - 1000).toISOString());

    assert.deepEqual(await expireGrants(sql, past!.id), [past!.id]);
    assert.deepEqual(await expireGrants(sql), [other!.id]);
    assert.deepEqual(await expireGrants(sql), []);
    const { rows } = await db.pool.query(
      "select user_id, subscription_level, subscription_status from public.subscriptions order by subscription_level",
    );
    const byUser = new Map(
      rows.map((r) => [r.user_id, `${r.subscription_level}/${r.subscription_status}`]),
    );
    assert.equal(byUser.get(past!.id), "free/canceled");
    assert.equal(byUser.get(other!.id), "free/canceled");
    assert.equal(byUser.get(running!.id), "starter/active");
    assert.equal(byUser.get(endless!.id), "starter/active");
    await sql.close();
  },
);
