import assert from "node:assert/strict";
import type Stripe from "stripe";
import { RereadNeeded } from "../../../../supabase/functions/_shared/platform/payproc_calls.ts";
import { processEvent } from "../../../../supabase/functions/_shared/payproc_webhook/events.ts";
import {
  CONNECT_HANDLERS,
  handlerFor,
  PLATFORM_HANDLERS,
} from "../../../../supabase/functions/payproc-webhook/dispatch.ts";
import type { WebhookHandler } from "../../../../supabase/functions/_shared/payproc_webhook/types.ts";
import { Context } from "../../../../supabase/functions/_shared/platform/context.ts";
import { billingSetup, countRows } from "../../../support/billing.ts";
import { sqlTest } from "../../../support/db.ts";

const { db, double, runtime } = await billingSetup();
const ctx = () => new Context(runtime, crypto.randomUUID(), runtime.log);

Deno.test("the dispatch tables: billing and deal events on the platform, account events on Connect only", () => {
  assert.deepEqual(Object.keys(PLATFORM_HANDLERS).sort(), [
    "charge.dispute.closed",
    "charge.dispute.created",
    "charge.dispute.updated",
    "charge.refund.updated",
    "charge.refunded",
    "checkout.session.completed",
    "customer.subscription.created",
    "customer.subscription.deleted",
    "customer.subscription.paused",
    "customer.subscription.resumed",
    "customer.subscription.updated",
    "invoice.finalized",
    "invoice.paid",
    "invoice.payment_failed",
    "invoice.payment_succeeded",
    "payment_intent.canceled",
    "payment_intent.payment_failed",
    "payment_intent.processing",
    "payment_intent.succeeded",
    "refund.failed",
    "transfer.created",
    "transfer.reversed",
    "transfer.updated",
  ]);
  assert.deepEqual(Object.keys(CONNECT_HANDLERS), ["account.updated"]);
  assert.equal(handlerFor("platform", "account.updated"), undefined);
  assert.equal(handlerFor("connect", "customer.subscription.updated"), undefined);
  assert.equal(handlerFor("connect", "payment_intent.succeeded"), undefined);
  assert.equal(handlerFor("platform", "payout.paid"), undefined);
  assert.equal(handlerFor("platform", "toString"), undefined);
});

function payoutEvent(): Stripe.Event {
  return double.event(
    "payout.paid",
    { id: `po_${crypto.randomUUID().slice(0, 8)}`, object: "payout" } as never,
  ) as unknown as Stripe.Event;
}

sqlTest(
  "processEvent(): effects commit with the record, a throwing write rolls both back, a repeat is a duplicate",
  async () => {
    const event = payoutEvent();
    let fail = true;
    const handler: WebhookHandler = {
      read: () => Promise.resolve(null),
      async write({ sql }) {
        await sql.query("insert into public.job_cursors (job_name, cursor) values ('effect', '1')");
        if (fail) throw new Error("boom");
        return { outcome: "applied" };
      },
    };
    const lookup = () => handler;
    await assert.rejects(processEvent(ctx(), { event, endpoint: "platform" }, lookup), /boom/);
    assert.equal(await countRows(db.pool, "public.payproc_events", "id = $1", [event.id]), 0);
    assert.equal(await countRows(db.pool, "public.job_cursors", "job_name = 'effect'"), 0);

    fail = false;
    const verified = { event, endpoint: "platform" as const };
    assert.deepEqual(await processEvent(ctx(), verified, lookup), { outcome: "applied" });
    assert.deepEqual(await processEvent(ctx(), verified, lookup), { outcome: "duplicate" });
    assert.equal(await countRows(db.pool, "public.job_cursors", "job_name = 'effect'"), 1);
    const { rows } = await db.pool.query(
      "select endpoint from public.payproc_events where id = $1",
      [
        event.id,
      ],
    );
    assert.equal(rows[0].endpoint, "platform");
  },
);

sqlTest(
  "processEvent(): reads before the transaction, and again (completing) when the write met an unread object",
  async () => {
    const event = payoutEvent();
    const phases: string[] = [];
    /** Transactions open on this test's database right now (the reads must see none). */
    const openTransactions = async () =>
      (await db.pool.query<{ n: number }>(
        `select count(*)::int as n from pg_stat_activity
         where datname = current_database() and xact_start is not null and pid <> pg_backend_pid()`,
      )).rows[0]!.n;
    const handler: WebhookHandler<Stripe.Event, string[]> = {
      async read() {
        phases.push(`read (open transactions: ${await openTransactions()})`);
        return [];
      },
      async complete({ read, also }) {
        phases.push(
          `complete ${JSON.stringify(also)} (open transactions: ${await openTransactions()})`,
        );
        return [...read, ...also];
      },
      async write({ read }) {
        phases.push(
          `write ${JSON.stringify(read)} (open transactions: ${await openTransactions()})`,
        );
        if (!read.includes("sub_other")) throw new RereadNeeded("sub_other");
        return { outcome: "applied" };
      },
    };
    const outcome = await processEvent(
      ctx(),
      { event, endpoint: "platform" },
      () => handler as WebhookHandler,
    );
    assert.deepEqual(outcome, { outcome: "applied" });
    assert.deepEqual(phases, [
      "read (open transactions: 0)",
      "complete [] (open transactions: 0)",
      "write [] (open transactions: 1)",
      'complete ["sub_other"] (open transactions: 0)',
      'write ["sub_other"] (open transactions: 1)',
    ]);
  },
);

sqlTest("processEvent(): an event without a handler is recorded as ignored", async () => {
  const event = payoutEvent();
  const outcome = await processEvent(ctx(), { event, endpoint: "platform" }, handlerFor);
  assert.equal(outcome.outcome, "ignored");
  const { rows } = await db.pool.query(
    "select outcome, detail from public.payproc_events where id = $1",
    [
      event.id,
    ],
  );
  assert.deepEqual(rows[0], {
    outcome: "ignored",
    detail: 'no handler for "payout.paid" on the platform endpoint',
  });
});
