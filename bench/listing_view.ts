/**
 * Benchmark: one explore page (9 listings) read through `listing_view_secure`
 * as a signed-in free user, against the same page read from `listings`
 * directly, over 100k listings. Prints median and p95 latencies and the
 * ratio view / table (target: at most 2x).
 *
 * The table page runs as `service_role`: RLS keeps other sellers' listings
 * from a signed-in user, so the raw table is read the way only the service
 * connection can; it is the cost of the same nine rows without the blur
 * policy. Each page is measured on the first page and at offset 900, and
 * both unprepared (parsed and planned on every call, as behind Supabase's
 * transaction pooler) and as a named prepared statement (as PostgREST runs
 * it on a direct connection). Each query runs in its own transaction with
 * the role and claims set the way PostgREST sets them; only the query is
 * timed.
 *
 *     deno run -A bench/listing_view.ts [--listings 100000] [--iterations 1000]
 *
 * @module
 */
import pg from "pg";
import { parseArgs } from "node:util";
import { freePort, startPostgres } from "../local/postgres.ts";
import { migrate } from "../local/migrate.ts";

/** The explore page size (interface §8). */
const PAGE_SIZE = 9;
/** Listings approved, out of every ten generated. */
const APPROVED_PER_TEN = 8;

const { values } = parseArgs({
  args: Deno.args,
  options: {
    listings: { type: "string", default: "100000" },
    iterations: { type: "string", default: "1000" },
    warmup: { type: "string", default: "100" },
  },
});
const listingCount = positiveInteger(values.listings, "listings");
const iterations = positiveInteger(values.iterations, "iterations");
const warmup = positiveInteger(values.warmup, "warmup");

const VIEWER = "00000000-0000-4000-8000-00000000f4ee";

/** One measured query: what it reads, as whom, and how it is sent. */
interface Case {
  label: string;
  sql: string;
  offset: number;
  role: "authenticated" | "service_role";
  /** Sent as a named prepared statement, or parsed and planned on every call. */
  prepared: boolean;
}

const viewSql = `select * from public.listing_view_secure
  where review_status = 'approved' order by created_at desc limit ${PAGE_SIZE} offset `;
const tableSql = `select * from public.listings
  where review_status = 'approved' order by created_at desc limit ${PAGE_SIZE} offset `;

const pages = [0, 100 * PAGE_SIZE];
const modes = [false, true];
const cases: Case[] = modes.flatMap((prepared) =>
  pages.flatMap((offset): Case[] => {
    const how = prepared ? "prepared" : "unprepared";
    return [
      {
        label: `view,  offset ${offset}, ${how}`,
        sql: viewSql,
        offset,
        role: "authenticated",
        prepared,
      },
      {
        label: `table, offset ${offset}, ${how}`,
        sql: tableSql,
        offset,
        role: "service_role",
        prepared,
      },
    ];
  })
);

const dataDir = await Deno.makeTempDir({ prefix: "market-bench-pg-" });
const server = await startPostgres({ dataDir, port: freePort(), persistent: false });
try {
  await migrate(server.url, { includePlatform: true });
  const client = new pg.Client({ connectionString: server.url });
  await client.connect();
  try {
    console.log(`Generating ${listingCount} listings...`);
    await seed(client, listingCount);
    const samples = new Map<Case, number[]>(cases.map((c) => [c, []]));
    for (let i = 0; i < warmup + iterations; i++) {
      // Alternate the order so drift affects both sides alike.
      const order = i % 2 === 0 ? cases : [...cases].reverse();
      for (const c of order) {
        const { ms, rows } = await timeQuery(client, c);
        if (rows !== PAGE_SIZE) {
          throw new Error(`Cannot benchmark: "${c.label}" returned ${rows} rows, expected 9`);
        }
        if (i >= warmup) samples.get(c)!.push(ms);
      }
    }
    report(samples);
    await explainViewPage(client);
  } finally {
    await client.end();
  }
} finally {
  await server.stop();
  await Deno.remove(dataDir, { recursive: true }).catch(() => {});
}

/** Creates the viewer (free plan: no subscription), 1000 sellers and the listings. */
async function seed(client: pg.Client, count: number): Promise<void> {
  await client.query(
    `insert into auth.users (id, email) values ($1, 'free-viewer@example.test')`,
    [VIEWER],
  );
  await client.query(
    `insert into auth.users (email)
     select 'seller-' || g || '@example.test' from generate_series(1, 1000) g`,
  );
  // Bulk load without the review state machine and realtime triggers.
  await client.query("begin");
  await client.query("set local session_replication_role = replica");
  await client.query(
    `with sellers as (
       select id, row_number() over (order by id) - 1 as n from auth.users where id <> $2
     )
     insert into public.listings (
       seller_id, title, description, url, category, asking_price, currency,
       monthly_revenue, monthly_profit, monthly_traffic, review_status, views_count,
       created_at, updated_at
     )
     select s.id, 'Project ' || g, 'Description of project ' || g,
       'https://project-' || g || '.example', (array['saas', 'content', 'ecommerce', 'app'])[1 + g % 4],
       1000 + g % 50000, 'USD', g % 9000, g % 4000 - 500, g % 100000,
       case when g % 10 < $3 then 'approved'
            when g % 10 = $3 then 'pending_review' else 'draft' end,
       g % 500, now() - g * interval '1 minute', now() - g * interval '1 minute'
     from generate_series(1, $1::int) g
     join sellers s on s.n = g % 1000`,
    [count, VIEWER, APPROVED_PER_TEN],
  );
  await client.query("commit");
  await client.query("analyze");
}

/** Runs one case in its own transaction under its role; times the query alone. */
async function timeQuery(client: pg.Client, c: Case): Promise<{ ms: number; rows: number }> {
  await client.query("begin");
  try {
    const claims = c.role === "authenticated"
      ? { role: "authenticated", sub: VIEWER, aud: "authenticated" }
      : { role: "service_role" };
    await client.query("select set_config('request.jwt.claims', $1, true)", [
      JSON.stringify(claims),
    ]);
    await client.query(`set local role ${c.role}`);
    // The offset is part of the text, as PostgREST writes it, so that a
    // prepared statement gets one cached (generic) plan.
    const text = `${c.sql}${c.offset}`;
    const query = c.prepared ? { name: statementName(c), text } : { text };
    const start = performance.now();
    const result = await client.query(query);
    const ms = performance.now() - start;
    return { ms, rows: result.rowCount ?? 0 };
  } finally {
    await client.query("rollback");
  }
}

/** Prints median and p95 per case and the view / table ratios. */
function report(samples: Map<Case, number[]>): void {
  const stats = new Map<Case, { median: number; p95: number }>();
  for (const [c, ms] of samples) {
    const sorted = [...ms].sort((a, b) => a - b);
    stats.set(c, { median: quantile(sorted, 0.5), p95: quantile(sorted, 0.95) });
  }
  console.log(
    `\n${listingCount} listings, ${iterations} iterations (after ${warmup} warm-up), page of ${PAGE_SIZE}`,
  );
  console.log(`${"case".padEnd(34)} median ms    p95 ms`);
  for (const [c, s] of stats) {
    console.log(`${c.label.padEnd(34)} ${fmt(s.median)} ${fmt(s.p95)}`);
  }
  for (const prepared of modes) {
    for (const offset of pages) {
      const find = (sql: string) =>
        stats.get(
          cases.find((c) => c.offset === offset && c.sql === sql && c.prepared === prepared)!,
        )!;
      const view = find(viewSql);
      const table = find(tableSql);
      console.log(
        `ratio view/table, offset ${offset}, ${prepared ? "prepared" : "unprepared"}: ` +
          `median ${(view.median / table.median).toFixed(2)}x, ` +
          `p95 ${(view.p95 / table.p95).toFixed(2)}x (target: at most 2x)`,
      );
    }
  }
}

/** Shows the view page's plan, to confirm it reads the explore index. */
async function explainViewPage(client: pg.Client): Promise<void> {
  await client.query("begin");
  try {
    await client.query("select set_config('request.jwt.claims', $1, true)", [
      JSON.stringify({ role: "authenticated", sub: VIEWER }),
    ]);
    await client.query("set local role authenticated");
    const { rows } = await client.query<{ "QUERY PLAN": string }>(
      `explain (analyze, costs off) ${viewSql}0`,
    );
    console.log("\nPlan of the view page:");
    for (const row of rows) console.log(`  ${row["QUERY PLAN"]}`);
  } finally {
    await client.query("rollback");
  }
}

/** A statement name for a case. */
function statementName(c: Case): string {
  return `page_${c.sql === viewSql ? "view" : "table"}_${c.offset}`;
}

function quantile(sorted: number[], q: number): number {
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[index] ?? Number.NaN;
}

function fmt(ms: number): string {
  return ms.toFixed(3).padStart(9);
}

function positiveInteger(value: string | undefined, name: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) {
    throw new Error(`Cannot benchmark: --${name} "${value}" is not a positive integer`);
  }
  return n;
}
