import assert from "node:assert/strict";
import handler from "../../supabase/functions/sync-invoices/handler.ts";
import { billingSetup, countRows } from "../support/billing.ts";
import { sqlTest } from "../support/db.ts";
import { invoke } from "../support/runtime.ts";
import { createUser } from "../support/sql.ts";
import { assertOneRanOneSkipped } from "../support/jobs.ts";

interface JobAnswer {
  scanned: number;
  changed: number;
  counts: Record<string, number>;
  error?: { code: string; details?: { failures: Array<{ item: string; code: string }> } };
}

const DAY = 86_400;

sqlTest(
  "sync-invoices: mirrors invoices, then resumes from its cursor (with overlap for late payments)",
  async () => {
    const setup = await billingSetup();
    const { db, double, runtime, keys } = setup;
    try {
      const user = await createUser(db.pool);
      const customer = double.addCustomer({ email: user.email });
      await db.pool.query(
        "insert into public.subscriptions (user_id, payproc_customer_id) values ($1, $2)",
        [user.id, customer.id],
      );
      const now = Math.floor(Date.now() / 1000);
      double.addInvoice({ customer: customer.id, amount: 1000, created: now - 30 * DAY });
      const recent = double.addInvoice({
        customer: customer.id,
        amount: 2550,
        status: "open",
        created: now - DAY,
      });

      const first = await invoke<JobAnswer>(handler, runtime, { token: keys.schedulerToken });
      assert.equal(first.status, 200, JSON.stringify(first.body));
      assert.equal(first.body.scanned, 2);
      assert.equal(first.body.changed, 2);
      assert.equal(first.body.counts.cursor, now - DAY);
      const row = await db.pool.query(
        "select * from public.invoices where payproc_invoice_id = $1",
        [recent.id],
      );
      assert.equal(row.rows[0].user_id, user.id);
      assert.equal(row.rows[0].status, "open");
      assert.equal(row.rows[0].amount_due, "25.50");

      // The recent invoice is paid later; a new one appears. The old one is not read again.
      const stored = double.store.require("invoice", recent.id);
      stored.status = "paid";
      stored.amount_paid = stored.amount_due;
      stored.amount_remaining = 0;
      double.addInvoice({ customer: customer.id, amount: 500, created: now });
      const second = await invoke<JobAnswer>(handler, runtime, { token: keys.schedulerToken });
      assert.equal(second.status, 200);
      assert.equal(second.body.scanned, 2);
      assert.equal(second.body.changed, 2);
      const paid = await db.pool.query(
        "select status, amount_paid from public.invoices where payproc_invoice_id = $1",
        [recent.id],
      );
      assert.deepEqual(paid.rows[0], { status: "paid", amount_paid: "25.50" });
      assert.equal(await countRows(db.pool, "public.invoices"), 3);
      const cursor = await db.pool.query(
        "select cursor from public.job_cursors where job_name = 'sync-invoices'",
      );
      assert.deepEqual(cursor.rows[0].cursor, { created: now });
    } finally {
      await setup.close();
    }
  },
);

sqlTest(
  "sync-invoices: a failed invoice is listed, the rest are kept, and the cursor stays",
  async () => {
    const setup = await billingSetup();
    const { db, double, runtime, keys } = setup;
    try {
      const customer = double.addCustomer();
      const good = double.addInvoice({ customer: customer.id, amount: 100 });
      const bad = double.addInvoice({ customer: customer.id, amount: 100, currency: "usdx" });
      const res = await invoke<JobAnswer>(handler, runtime, { token: keys.schedulerToken });
      assert.equal(res.status, 500);
      assert.equal(res.body.error?.code, "partial_failure");
      assert.deepEqual(res.body.error?.details?.failures.map((f) => [f.item, f.code]), [[
        bad.id,
        "internal",
      ]]);
      assert.equal(
        await countRows(db.pool, "public.invoices", "payproc_invoice_id = $1", [good.id]),
        1,
      );
      assert.equal(await countRows(db.pool, "public.job_cursors"), 0);
    } finally {
      await setup.close();
    }
  },
);

sqlTest(
  "sync-invoices: an overlapping start is skipped with 200; processor down → 503",
  async () => {
    const setup = await billingSetup();
    const { double, runtime, keys } = setup;
    try {
      double.failNext({ method: "GET", path: "/v1/invoices", delayMs: 300 });
      const both = await Promise.all([
        invoke<JobAnswer>(handler, runtime, { token: keys.schedulerToken }),
        invoke<JobAnswer>(handler, runtime, { token: keys.schedulerToken }),
      ]);
      assertOneRanOneSkipped(both);
      double.failNext({ method: "GET", path: "/v1/invoices", status: 502, times: 3 });
      const down = await invoke<JobAnswer>(handler, runtime, { token: keys.schedulerToken });
      assert.equal(down.status, 503);
      assert.equal(down.body.error?.code, "upstream_unavailable");
    } finally {
      await setup.close();
    }
  },
);
