import assert from "node:assert/strict";
import { createTestDatabase, sqlTest } from "../support/db.ts";
import { asRole, createUser } from "../support/sql.ts";
import { createListing, setSubscription } from "./core_fixtures.ts";

const db = await createTestDatabase();

/** The core schema's tables; each must hold a row for the write attempts to matter. */
const CORE_TABLES = [
  "listings",
  "subscriptions",
  "blurred_fields",
  "commission_tiers",
  "deals",
];

const seller = await createUser(db.pool);
const buyer = await createUser(db.pool);
const listing = await createListing(db.pool, seller.id, "approved");
await setSubscription(db.pool, seller.id, "pro");
await db.pool.query(
  `insert into public.deals (listing_id, buyer_id, seller_id, amount, currency)
   values ($1, $2, $3, 100, 'USD')`,
  [listing.id, buyer.id, seller.id],
);

async function publicTables(): Promise<string[]> {
  const { rows } = await db.pool.query<{ relname: string }>(
    `select c.relname from pg_class c join pg_namespace n on n.oid = c.relnamespace
     where n.nspname = 'public' and c.relkind in ('r', 'p') order by c.relname`,
  );
  return rows.map((r) => r.relname);
}

async function snapshot(table: string): Promise<string> {
  const { rows } = await db.pool.query(`select * from public.${table} order by 1`);
  return JSON.stringify(rows);
}

sqlTest("every core table exists with row level security enabled", async () => {
  const { rows } = await db.pool.query<{ relname: string; relrowsecurity: boolean }>(
    `select c.relname, c.relrowsecurity from pg_class c join pg_namespace n on n.oid = c.relnamespace
     where n.nspname = 'public' and c.relname = any($1)`,
    [CORE_TABLES],
  );
  assert.deepEqual(rows.map((r) => r.relname).sort(), [...CORE_TABLES].sort());
  assert.ok(rows.every((r) => r.relrowsecurity));
});

sqlTest("anon writes nothing to any table in public", async () => {
  for (const table of await publicTables()) {
    const before = await snapshot(table);
    const { rows: columns } = await db.pool.query<{ attname: string }>(
      `select a.attname from pg_attribute a
       where a.attrelid = ('public.' || $1)::regclass and a.attnum > 0 and not a.attisdropped
       order by a.attnum limit 1`,
      [table],
    );
    const column = columns[0]!.attname;
    const attempts = [
      `insert into public.${table} default values`,
      `update public.${table} set ${column} = ${column}`,
      `delete from public.${table}`,
      `truncate public.${table} cascade`,
    ];
    for (const sql of attempts) {
      await asRole(db.pool, { role: "anon" }, async (c) => {
        const outcome = await c.query(sql).then(
          (result) => `rows:${result.rowCount ?? 0}`,
          (error: unknown) => `error:${(error as { code?: string }).code}`,
        );
        // The contact form is the one table anon may insert into (valid rows
        // only): an empty row fails its not-null constraint.
        const refusedRow = table === "contact_messages" && sql.startsWith("insert") &&
          outcome === "error:23502";
        assert.ok(
          outcome === "rows:0" || outcome === "error:42501" || refusedRow,
          `anon: ${sql} -> ${outcome}`,
        );
      });
    }
    assert.equal(await snapshot(table), before, table);
  }
});

sqlTest("a signed-in user cannot write the core tables they do not own", async () => {
  const stranger = await createUser(db.pool);
  for (const table of CORE_TABLES) {
    const before = await snapshot(table);
    for (
      const sql of [
        `update public.${table} set updated_at = now()`,
        `delete from public.${table}`,
        `truncate public.${table} cascade`,
      ]
    ) {
      await asRole(db.pool, { role: "authenticated", userId: stranger.id }, async (c) => {
        const outcome = await c.query(sql).then(
          (result) => `rows:${result.rowCount ?? 0}`,
          (error: unknown) => `error:${(error as { code?: string }).code}`,
        );
        assert.ok(
          outcome === "rows:0" || outcome === "error:42501",
          `${table}: ${sql} -> ${outcome}`,
        );
      });
    }
    assert.equal(await snapshot(table), before, table);
  }
});

sqlTest("every table, view and function in public explains itself with a comment", async () => {
  const { rows } = await db.pool.query<{ kind: string; name: string }>(
    `select 'function' as kind, p.oid::regprocedure::text as name
     from pg_proc p join pg_namespace n on n.oid = p.pronamespace
     where n.nspname = 'public' and obj_description(p.oid, 'pg_proc') is null
     union all
     select 'relation', c.relname
     from pg_class c join pg_namespace n on n.oid = c.relnamespace
     where n.nspname = 'public' and c.relkind in ('r', 'p', 'v', 'm')
       and obj_description(c.oid, 'pg_class') is null`,
  );
  assert.deepEqual(rows, []);
});
