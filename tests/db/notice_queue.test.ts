import assert from "node:assert/strict";
import {
  CONVERSATION_LIMITS,
  UNREAD_EMAIL_DELAY_MINUTES,
  UNREAD_EMAIL_MIN_INTERVAL_MINUTES,
} from "../../shared/conversations.ts";
import {
  ACCESS_REQUEST_EXPIRY_DAYS,
  ACCESS_REQUEST_LIMIT_PER_DAY,
} from "../../shared/listing_access.ts";
import { NOTICE_KIND_NAMES } from "../../shared/notice_kinds.ts";
import { NOTIFICATION_TYPES } from "../../shared/notifications.ts";
import { createTestDatabase, sqlTest } from "../support/db.ts";
import { asRole, createUser } from "../support/sql.ts";
import { rejectsWith } from "./core_fixtures.ts";

const db = await createTestDatabase();

const user = await createUser(db.pool);
const admin = await createUser(db.pool, { admin: true });

sqlTest("notice_queue: its kinds are shared/notice_kinds.ts's, one check constraint", async () => {
  const { rows } = await db.pool.query<{ definition: string }>(
    `select pg_get_constraintdef(oid) as definition from pg_constraint
     where conrelid = 'public.notice_queue'::regclass and conname = 'notice_queue_kind_known'`,
  );
  const inSql = [...rows[0]!.definition.matchAll(/'([a-z_]+)'/g)].map((m) => m[1]).sort();
  assert.deepEqual(inSql, [...NOTICE_KIND_NAMES].sort());
});

sqlTest(
  "queue_notice(): one pending row per kind, user and subject; a sent one leaves room for the next",
  async () => {
    const subject = crypto.randomUUID();
    const queue = (due = "now()") =>
      db.pool.query(`select public.queue_notice('conversation_unread', $1, $2, ${due})`, [
        user.id,
        subject,
      ]);
    await queue();
    await queue("now() + interval '1 hour'");
    const pending = await db.pool.query(
      "select status, due_at <= now() as due from public.notice_queue where subject_id = $1",
      [subject],
    );
    assert.deepEqual(
      pending.rows,
      [{ status: "pending", due: true }],
      "the second call added nothing",
    );
    await db.pool.query(
      "update public.notice_queue set status = 'sent', done_at = now() where subject_id = $1",
      [subject],
    );
    await queue();
    assert.equal(
      (await db.pool.query("select 1 from public.notice_queue where subject_id = $1", [subject]))
        .rowCount,
      2,
    );
    await assert.rejects(
      db.pool.query("select public.queue_notice('no_such_kind', $1, $2)", [user.id, subject]),
      (e: { code?: string }) => e.code === "23514",
    );
    await assert.rejects(
      db.pool.query("select public.queue_notice('conversation_unread', null, $1)", [subject]),
      (e: { code?: string }) => e.code === "22023",
    );
  },
);

sqlTest(
  "notice_queue RLS: admins read it; users, visitors and anonymous sessions neither read nor write it, nor queue",
  async () => {
    await db.pool.query(
      "select public.queue_notice('conversation_unread', $1, gen_random_uuid())",
      [user.id],
    );
    await asRole(db.pool, { role: "authenticated", userId: admin.id }, async (c) => {
      assert.ok((await c.query("select id from public.notice_queue")).rows.length >= 1);
      await rejectsWith(c, "42501", "delete from public.notice_queue");
    });
    for (
      const who of [
        { role: "authenticated" as const, userId: user.id },
        { role: "authenticated" as const, userId: admin.id, anonymous: true },
      ]
    ) {
      await asRole(db.pool, who, async (c) => {
        assert.deepEqual((await c.query("select id from public.notice_queue")).rows, []);
        await rejectsWith(c, "42501", "update public.notice_queue set status = 'sent'");
        await rejectsWith(
          c,
          "42501",
          "select public.queue_notice('conversation_unread', $1, gen_random_uuid())",
          [
            user.id,
          ],
        );
      });
    }
    await asRole(db.pool, { role: "anon" }, async (c) => {
      await rejectsWith(c, "42501", "select * from public.notice_queue");
    });
  },
);

sqlTest(
  "prune_notice_queue(): forgets sent and dropped rows done long ago, keeps failed and pending ones, refuses to cut into the last hours",
  async () => {
    const old = crypto.randomUUID();
    await db.pool.query(
      `insert into public.notice_queue (kind, user_id, subject_id, status, done_at, created_at)
     values ('conversation_unread', $1, $2, 'sent', now() - interval '40 days', now() - interval '40 days'),
            ('conversation_reported', $1, $2, 'dropped', now() - interval '40 days', now() - interval '40 days'),
            ('listing_access_approved', $1, $2, 'failed', now() - interval '40 days', now() - interval '40 days'),
            ('listing_access_expired', $1, $2, 'sent', now() - interval '1 day', now() - interval '1 day')`,
      [user.id, old],
    );
    const { rows } = await db.pool.query("select public.prune_notice_queue() as n");
    assert.ok(rows[0].n >= 2);
    const left = await db.pool.query(
      "select kind from public.notice_queue where subject_id = $1 order by kind",
      [old],
    );
    assert.deepEqual(left.rows.map((r) => r.kind), [
      "listing_access_approved",
      "listing_access_expired",
    ]);
    await assert.rejects(
      db.pool.query("select public.prune_notice_queue(interval '1 hour')"),
      (e: { code?: string }) => e.code === "22023",
    );
  },
);

sqlTest(
  "the contract's numbers are the database's: limits, the expiry, the e-mail cadence, the in-app default",
  async () => {
    const { rows } = await db.pool.query<{ name: string; max_hits: number }>(
      "select name, max_hits from public.client_limits",
    );
    const limit = (name: string) => rows.find((r) => r.name === name)?.max_hits;
    assert.equal(limit("message:per_minute"), CONVERSATION_LIMITS.messagesPerMinute);
    assert.equal(limit("message:per_day"), CONVERSATION_LIMITS.messagesPerDay);
    assert.equal(limit("conversation:per_day"), CONVERSATION_LIMITS.conversationsPerDay);
    assert.equal(limit("conversation_report:per_day"), CONVERSATION_LIMITS.reportsPerDay);
    assert.equal(limit("access_request:per_day"), ACCESS_REQUEST_LIMIT_PER_DAY);

    const { rows: [expiry] } = await db.pool.query<{ expr: string }>(
      `select pg_get_expr(d.adbin, d.adrelid) as expr
     from pg_attrdef d
     join pg_attribute a on a.attrelid = d.adrelid and a.attnum = d.adnum
     where d.adrelid = 'public.listing_access_requests'::regclass and a.attname = 'expires_at'`,
    );
    const days = Number(/'(\d+) days'::interval/.exec(expiry!.expr)?.[1]);
    assert.equal(days, ACCESS_REQUEST_EXPIRY_DAYS, expiry!.expr);

    // The cadence: conversation_email_due() on a conversation with one unread message,
    // before and after an e-mail was sent.
    const seller = await createUser(db.pool);
    const buyer = await createUser(db.pool);
    const { rows: [listing] } = await db.pool.query<{ id: string }>(
      `insert into public.listings (seller_id, title, category, asking_price, review_status)
     values ($1, 'Cadence', 'saas', 1, 'pending_review') returning id`,
      [seller.id],
    );
    await db.pool.query("update public.listings set review_status = 'approved' where id = $1", [
      listing!.id,
    ]);
    const { rows: [conversation] } = await db.pool.query<{ id: string }>(
      "select o.id from public.open_conversation($1, $2, $3) o",
      [listing!.id, buyer.id, seller.id],
    );
    const { rows: [message] } = await db.pool.query<{ created_at: Date }>(
      "insert into public.messages (conversation_id, sender_id, body) values ($1, $2, 'Hi') returning created_at",
      [conversation!.id, buyer.id],
    );
    const due = async () =>
      (await db.pool.query<{ due: Date | null }>(
        "select d.due_at as due from public.conversation_email_due($1, $2) d",
        [
          conversation!.id,
          seller.id,
        ],
      )).rows[0]!.due;
    assert.equal(
      (await due())!.getTime() - message!.created_at.getTime(),
      UNREAD_EMAIL_DELAY_MINUTES * 60_000,
    );
    const { rows: [sent] } = await db.pool.query<{ done_at: Date }>(
      `insert into public.notice_queue (kind, user_id, subject_id, status, done_at)
     values ('conversation_unread', $1, $2, 'sent', clock_timestamp()) returning done_at`,
      [seller.id, conversation!.id],
    );
    assert.equal(await due(), null, "the e-mail told it");
    await db.pool.query(
      "insert into public.messages (conversation_id, sender_id, body) values ($1, $2, 'Again')",
      [
        conversation!.id,
        buyer.id,
      ],
    );
    assert.equal(
      (await due())!.getTime() - sent!.done_at.getTime(),
      UNREAD_EMAIL_MIN_INTERVAL_MINUTES * 60_000,
    );

    // The conversation notice's in-app default is the contract's.
    assert.equal(NOTIFICATION_TYPES.conversations.inApp, true);
    const { rows: [body] } = await db.pool.query<{ src: string }>(
      "select prosrc as src from pg_proc where proname = 'refresh_conversation_notice'",
    );
    assert.match(body!.src, /p\.type = 'conversations'\s*\), true\)/, "no preference row: on");
  },
);
