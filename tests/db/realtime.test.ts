import assert from "node:assert/strict";
import type pg from "pg";
import { createTestDatabase, sqlTest } from "../support/db.ts";
import { messagesFor } from "../support/realtime.ts";
import { asRole, createUser } from "../support/sql.ts";
import { createListing, setSubscription } from "./core_fixtures.ts";

const db = await createTestDatabase();

sqlTest(
  "realtime: every subscription change is broadcast to the subscriber's private topic",
  async () => {
    const user = await createUser(db.pool);
    await setSubscription(db.pool, user.id, "starter");
    await db.pool.query(
      "update public.subscriptions set subscription_status = 'past_due' where user_id = $1",
      [user.id],
    );
    await db.pool.query("delete from public.subscriptions where user_id = $1", [user.id]);
    const messages = await messagesFor(db.pool, user.id);
    assert.deepEqual(messages.map((m) => m.event), ["INSERT", "UPDATE", "DELETE"]);
    for (const m of messages) {
      assert.equal(m.private, true);
      assert.equal(m.payload.table, "subscriptions");
      assert.equal(m.payload.schema, "public");
    }
    assert.equal(messages[0]!.payload.record?.subscription_level, "starter");
    assert.equal(messages[1]!.payload.record?.subscription_status, "past_due");
    assert.equal(messages[1]!.payload.old_record?.subscription_status, "active");
    assert.equal(messages[2]!.payload.record, null);
    assert.equal(messages[2]!.payload.old_record?.user_id, user.id);
  },
);

sqlTest(
  "realtime: a listing's review status change is broadcast to its seller; other edits are not",
  async () => {
    const seller = await createUser(db.pool);
    const admin = await createUser(db.pool, { admin: true });
    const listing = await createListing(db.pool, seller.id, "draft");
    await db.pool.query("update public.listings set title = 'Renamed' where id = $1", [listing.id]);
    assert.deepEqual(await messagesFor(db.pool, seller.id), []);

    await asRole(db.pool, { role: "authenticated", userId: seller.id }, async (c) => {
      await c.query("update public.listings set review_status = 'pending_review' where id = $1", [
        listing.id,
      ]);
      await c.query("commit");
    });
    await asRole(db.pool, { role: "authenticated", userId: admin.id }, async (c) => {
      await c.query("update public.listings set review_status = 'approved' where id = $1", [
        listing.id,
      ]);
      await c.query("commit");
    });
    const messages = await messagesFor(db.pool, seller.id);
    assert.deepEqual(
      messages.map((
        m,
      ) => [m.event, m.payload.old_record?.review_status, m.payload.record?.review_status]),
      [["UPDATE", "draft", "pending_review"], ["UPDATE", "pending_review", "approved"]],
    );
    assert.deepEqual(await messagesFor(db.pool, admin.id), []);
  },
);

sqlTest(
  "realtime.messages: a user reads and joins only their own topic; anon nothing",
  async () => {
    const alice = await createUser(db.pool);
    const bob = await createUser(db.pool);
    await setSubscription(db.pool, alice.id, "pro");
    await setSubscription(db.pool, bob.id, "pro");

    const readAs = (userId: string, channel: string | null) =>
      asRole(db.pool, { role: "authenticated", userId }, async (c: pg.PoolClient) => {
        if (channel !== null) {
          await c.query("select set_config('realtime.topic', $1, true)", [channel]);
        }
        const { rows } = await c.query<{ topic: string }>(
          "select distinct topic from realtime.messages",
        );
        return rows.map((r) => r.topic);
      });

    assert.deepEqual(await readAs(alice.id, null), [`user:${alice.id}`]);
    // Joining one's own channel is authorized...
    assert.deepEqual(await readAs(alice.id, `user:${alice.id}`), [`user:${alice.id}`]);
    // ...another user's is not, even though alice has messages of her own.
    assert.deepEqual(await readAs(alice.id, `user:${bob.id}`), []);
    assert.deepEqual(await readAs(bob.id, null), [`user:${bob.id}`]);

    await asRole(db.pool, { role: "anon" }, async (c) => {
      const result = await c.query("select count(*)::int as n from realtime.messages").then(
        (r) => r.rows[0].n as number,
        (error: unknown) => (error as { code?: string }).code,
      );
      assert.ok(result === 0 || result === "42501", `anon read ${String(result)}`);
    });
  },
);
