import assert from "node:assert/strict";
import type Stripe from "stripe";
import { processEvent } from "../../../../supabase/functions/_shared/billing/webhook_events.ts";
import {
  handlerFor,
  WEBHOOK_HANDLERS,
} from "../../../../supabase/functions/_shared/billing/webhook_handlers.ts";
import type { WebhookHandlers } from "../../../../supabase/functions/_shared/billing/webhook_types.ts";
import { Context } from "../../../../supabase/functions/_shared/context.ts";
import { billingSetup, countRows } from "../../../support/billing.ts";
import { sqlTest } from "../../../support/db.ts";

const { db, double, runtime } = await billingSetup();
const ctx = () => new Context(runtime, crypto.randomUUID(), runtime.log);

Deno.test("WEBHOOK_HANDLERS covers the billing event types; unknown types have no handler", () => {
  assert.deepEqual(Object.keys(WEBHOOK_HANDLERS).sort(), [
    "account.updated",
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
  ]);
  assert.equal(handlerFor("payment_intent.succeeded"), undefined);
  assert.equal(handlerFor("toString"), undefined);
});

sqlTest(
  "processEvent() with an extended table: effects commit with the record, a throwing handler rolls both back",
  async () => {
    const event = double.event(
      "payment_intent.succeeded",
      { id: "pi_x", object: "payment_intent" } as never,
    ) as unknown as Stripe.Event;
    let fail = true;
    const handlers: WebhookHandlers = {
      ...WEBHOOK_HANDLERS,
      "payment_intent.succeeded": async ({ sql }) => {
        await sql.query("insert into public.job_cursors (job_name, cursor) values ('effect', '1')");
        if (fail) throw new Error("boom");
        return { outcome: "applied" };
      },
    };
    await assert.rejects(processEvent(ctx(), event, handlers), /boom/);
    assert.equal(await countRows(db.pool, "public.payproc_events", "id = $1", [event.id]), 0);
    assert.equal(await countRows(db.pool, "public.job_cursors", "job_name = 'effect'"), 0);

    fail = false;
    assert.deepEqual(await processEvent(ctx(), event, handlers), { outcome: "applied" });
    assert.deepEqual(await processEvent(ctx(), event, handlers), { outcome: "duplicate" });
    assert.equal(await countRows(db.pool, "public.job_cursors", "job_name = 'effect'"), 1);
  },
);
