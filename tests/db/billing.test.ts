import assert from "node:assert/strict";
import { createTestDatabase, sqlTest } from "../support/db.ts";
import { asRole, createUser } from "../support/sql.ts";

const db = await createTestDatabase();
const owner = await createUser(db.pool);
const other = await createUser(db.pool);
const admin = await createUser(db.pool, { admin: true });

await db.pool.query(
  `insert into public.invoices (payproc_invoice_id, user_id, payproc_customer_id, status, currency, payproc_created)
   values ('in_owner', $1, 'cus_owner', 'paid', 'USD', now()),
          ('in_other', $2, 'cus_other', 'open', 'USD', now())`,
  [owner.id, other.id],
);
await db.pool.query(
  `insert into public.connect_accounts (user_id, payproc_account_id) values ($1, 'acct_owner'), ($2, 'acct_other')`,
  [owner.id, other.id],
);
await db.pool.query(
  `insert into public.payproc_events (id, type, created) values ('evt_1', 'invoice.paid', now())`,
);
await db.pool.query(
  `insert into public.job_runs (job_name, status, finished_at) values ('x', 'succeeded', now())`,
);
await db.pool.query(`insert into public.job_cursors (job_name, cursor) values ('x', '{}')`);

const asOwner = { role: "authenticated" as const, userId: owner.id };
const asAdmin = { role: "authenticated" as const, userId: admin.id };

async function ids(identity: Parameters<typeof asRole>[1], sql: string): Promise<string[]> {
  return await asRole(
    db.pool,
    identity,
    async (c) => (await c.query(sql)).rows.map((r) => Object.values(r)[0] as string),
  );
}

sqlTest("invoices: a user reads only their own, an admin all, anon none", async () => {
  assert.deepEqual(await ids(asOwner, "select payproc_invoice_id from public.invoices"), [
    "in_owner",
  ]);
  assert.deepEqual(
    await ids(asAdmin, "select payproc_invoice_id from public.invoices order by 1"),
    ["in_other", "in_owner"],
  );
  await assert.rejects(
    ids({ role: "anon" }, "select payproc_invoice_id from public.invoices"),
    /permission denied/,
  );
});

sqlTest("connect_accounts: a seller reads only their own account, an admin all", async () => {
  assert.deepEqual(await ids(asOwner, "select payproc_account_id from public.connect_accounts"), [
    "acct_owner",
  ]);
  assert.equal(
    (await ids(asAdmin, "select payproc_account_id from public.connect_accounts")).length,
    2,
  );
});

sqlTest("payproc_events, job_runs and job_cursors: admins only", async () => {
  for (const table of ["payproc_events", "job_runs", "job_cursors"]) {
    assert.deepEqual(
      await ids(asOwner, `select count(*)::text from public.${table}`),
      ["0"],
      table,
    );
    assert.deepEqual(
      await ids(asAdmin, `select count(*)::text from public.${table}`),
      ["1"],
      table,
    );
  }
});

sqlTest("users write none of the billing tables nor the KYC copy on their profile", async () => {
  const writes = [
    "insert into public.invoices (payproc_invoice_id, payproc_customer_id, status, currency, payproc_created) values ('in_x', 'c', 'paid', 'USD', now())",
    "update public.invoices set status = 'void'",
    "update public.connect_accounts set payouts_enabled = true",
    "insert into public.payproc_events (id, type, created) values ('evt_x', 't', now())",
    "delete from public.job_runs",
    "update public.profiles set payouts_enabled = true, kyc_status = 'verified'",
  ];
  for (const sql of writes) {
    await assert.rejects(asRole(db.pool, asOwner, (c) => c.query(sql)), /permission denied/, sql);
  }
});

sqlTest("job_runs: one unfinished run per job", async () => {
  await db.pool.query("insert into public.job_runs (job_name) values ('guarded')");
  await assert.rejects(
    db.pool.query("insert into public.job_runs (job_name) values ('guarded')"),
    /job_runs_one_unfinished_per_job/,
  );
  await db.pool.query(
    "update public.job_runs set status = 'succeeded', finished_at = now() where job_name = 'guarded'",
  );
  await db.pool.query("insert into public.job_runs (job_name) values ('guarded')");
});

sqlTest("billing schedules are in job_schedules", async () => {
  const { rows } = await db.pool.query(
    `select function_name, cron from public.job_schedules
     where function_name in ('payproc-sync', 'daily-subscription-sync', 'sync-invoices', 'auto-fix-subscription-dates')
     order by 1`,
  );
  assert.deepEqual(rows, [
    { function_name: "auto-fix-subscription-dates", cron: "30 4 * * *" },
    { function_name: "daily-subscription-sync", cron: "0 3 * * *" },
    { function_name: "payproc-sync", cron: "17 * * * *" },
    { function_name: "sync-invoices", cron: "40 */6 * * *" },
  ]);
});
