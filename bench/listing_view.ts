/**
 * Benchmark: one explore page (9 listings) read through `listing_view_secure`
 * as a signed-in free user, against the same page read from `listings`
 * directly, over 100k listings. Prints median and p95 latencies and the
 * ratio view / table (target: at most 2x).
 *
 * The table page runs as `service_role`: RLS keeps other sellers' listings
 * from a signed-in user, so the raw table is read the way only the service
 * connection can; it is the cost of the same nine rows without the blur
 * policy (checked: both sides return the same listings). Each side reads
 * three pages:
 *
 * - the first page (`order by created_at desc limit 9`);
 * - page 101 by offset (`... offset 900`), as numbered pages would;
 * - page 101 by keyset (`where (created_at, id) < (cursor) order by
 *   created_at desc, id desc limit 9`, the cursor being the last listing of
 *   page 100), which is how the explore page pages: it reads nine index
 *   entries wherever it is, while an offset makes both sides read and drop
 *   900 rows, the view paying its per-row work on each of them.
 *
 * Each page is read both unprepared (parsed and planned on every call, as
 * behind Supabase's transaction pooler) and as a named prepared statement
 * (as PostgREST runs it on a direct connection). Each query runs in its own
 * transaction with the role and claims set the way PostgREST sets them; only
 * the query is timed. After the timings it prints both sides' plans with
 * their planning and execution times, and fails if the view's pages do not
 * read the explore index.
 *
 *     deno run -A bench/listing_view.ts [--listings 100000] [--iterations 1000]
 *
 * @module
 */
import pg from "pg";
import { EXPLORE_VIEWER, seedExploreListings } from "./support/explore_listings.ts";
import { parseArgs } from "node:util";
import { EXPLORE_PAGE_SIZE } from "../shared/explore.ts";
import { freePort, startPostgres } from "../local/postgres.ts";
import { migrate } from "../local/migrate.ts";

/** The explore page size (`docs/listings.md#explore-pages`). */
const PAGE_SIZE = EXPLORE_PAGE_SIZE;
/** The deep page read by offset and by keyset: page 101. */
const DEEP_OFFSET = 100 * PAGE_SIZE;
/** The partial index the explore page must read: (created_at desc, id desc) where approved. */
const EXPLORE_INDEX = "listings_approved_created_at_idx";

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

const VIEWER = EXPLORE_VIEWER;

type Side = "view" | "table";

/** One page as both sides read it; `tail` follows `select * from <relation>`. */
interface Page {
  label: string;
  tail: string;
}

/** One measured query: which side, which page, and how it is sent. */
interface Case {
  label: string;
  side: Side;
  page: Page;
  /** Sent as a named prepared statement, or parsed and planned on every call. */
  prepared: boolean;
}

const RELATION: Record<Side, string> = {
  view: "public.listing_view_secure",
  table: "public.listings",
};
const ROLE: Record<Side, "authenticated" | "service_role"> = {
  view: "authenticated",
  table: "service_role",
};

const dataDir = await Deno.makeTempDir({ prefix: "market-bench-pg-" });
const server = await startPostgres({ dataDir, port: freePort(), persistent: false });
try {
  await migrate(server.url, { includePlatform: true });
  const client = new pg.Client({ connectionString: server.url });
  await client.connect();
  try {
    console.log(`Generating ${listingCount} listings...`);
    await seedExploreListings(client, listingCount, { viewsCount: true });
    const pages = await explorePages(client);
    const cases: Case[] = [false, true].flatMap((prepared) =>
      pages.flatMap((page) =>
        (["view", "table"] as const).map((side) => ({
          label: `${side.padEnd(5)} ${page.label}, ${prepared ? "prepared" : "unprepared"}`,
          side,
          page,
          prepared,
        }))
      )
    );
    await assertSameRows(client, pages);
    const samples = new Map<Case, number[]>(cases.map((c) => [c, []]));
    for (let i = 0; i < warmup + iterations; i++) {
      // Alternate the order so drift affects both sides alike.
      const order = i % 2 === 0 ? cases : [...cases].reverse();
      for (const c of order) {
        const { ms, rows } = await timeQuery(client, c);
        if (rows !== PAGE_SIZE) {
          throw new Error(
            `Cannot benchmark: "${c.label}" returned ${rows} rows, expected ${PAGE_SIZE}`,
          );
        }
        if (i >= warmup) samples.get(c)!.push(ms);
      }
    }
    report(cases, samples, pages);
    for (const page of [pages[0]!, pages[2]!]) {
      await explain(client, "view", page);
      await explain(client, "table", page);
    }
  } finally {
    await client.end();
  }
} finally {
  await server.stop();
  await Deno.remove(dataDir, { recursive: true }).catch(() => {});
}

/**
 * The three pages. The keyset cursor is the last listing of page 100, so the
 * keyset page holds the same listings as the offset page. Values are part of
 * the text, as PostgREST writes them, so that a prepared statement gets one
 * cached (generic) plan.
 */
async function explorePages(client: pg.Client): Promise<Page[]> {
  const { rows } = await client.query<{ created_at: string; id: string }>(
    `select created_at::text as created_at, id from public.listings
     where review_status = 'approved'
     order by created_at desc, id desc offset $1 limit 1`,
    [DEEP_OFFSET - 1],
  );
  const cursor = rows[0];
  if (!cursor) throw new Error("Cannot benchmark: too few approved listings for a deep page");
  const approved = "where review_status = 'approved'";
  return [
    { label: "first page", tail: `${approved} order by created_at desc limit ${PAGE_SIZE}` },
    {
      label: `offset ${DEEP_OFFSET}`,
      tail: `${approved} order by created_at desc limit ${PAGE_SIZE} offset ${DEEP_OFFSET}`,
    },
    {
      label: `keyset after ${DEEP_OFFSET}`,
      tail: `${approved} and (created_at, id) < ('${cursor.created_at}', '${cursor.id}') ` +
        `order by created_at desc, id desc limit ${PAGE_SIZE}`,
    },
  ];
}

/** The SQL of a side's page. */
function pageSql(side: Side, page: Page): string {
  return `select * from ${RELATION[side]} ${page.tail}`;
}

/** Runs `fn` in a transaction under `side`'s role and claims, then rolls back. */
async function asSide<T>(client: pg.Client, side: Side, fn: () => Promise<T>): Promise<T> {
  await client.query("begin");
  try {
    const claims = side === "view"
      ? { role: "authenticated", sub: VIEWER, aud: "authenticated" }
      : { role: "service_role" };
    await client.query("select set_config('request.jwt.claims', $1, true)", [
      JSON.stringify(claims),
    ]);
    await client.query(`set local role ${ROLE[side]}`);
    return await fn();
  } finally {
    await client.query("rollback");
  }
}

/** Checks that, on every page, the view returns the same listings as the table. */
async function assertSameRows(client: pg.Client, pages: Page[]): Promise<void> {
  for (const page of pages) {
    const ids = async (side: Side) =>
      await asSide(client, side, async () => {
        const { rows } = await client.query<{ id: string }>(pageSql(side, page));
        return rows.map((r) => r.id).join();
      });
    if (await ids("view") !== await ids("table")) {
      throw new Error(`Cannot benchmark: on the ${page.label}, the view and the table differ`);
    }
  }
  // The offset page and the keyset page are the same page.
  const [, offset, keyset] = pages;
  const same = await asSide(client, "table", async () => {
    const a = await client.query<{ id: string }>(pageSql("table", offset!));
    const b = await client.query<{ id: string }>(pageSql("table", keyset!));
    return a.rows.map((r) => r.id).join() === b.rows.map((r) => r.id).join();
  });
  if (!same) throw new Error("Cannot benchmark: the keyset page is not the offset page");
}

/** Runs one case in its own transaction under its role; times the query alone. */
async function timeQuery(client: pg.Client, c: Case): Promise<{ ms: number; rows: number }> {
  return await asSide(client, c.side, async () => {
    const text = pageSql(c.side, c.page);
    const query = c.prepared ? { name: statementName(c), text } : { text };
    const start = performance.now();
    const result = await client.query(query);
    const ms = performance.now() - start;
    return { ms, rows: result.rowCount ?? 0 };
  });
}

/** Prints median and p95 per case and the view / table ratios. */
function report(cases: Case[], samples: Map<Case, number[]>, pages: Page[]): void {
  const stats = new Map<Case, { median: number; p95: number }>();
  for (const [c, ms] of samples) {
    const sorted = [...ms].sort((a, b) => a - b);
    stats.set(c, { median: quantile(sorted, 0.5), p95: quantile(sorted, 0.95) });
  }
  console.log(
    `\n${listingCount} listings, ${iterations} iterations (after ${warmup} warm-up), page of ${PAGE_SIZE}`,
  );
  console.log(`${"case".padEnd(40)} median ms    p95 ms`);
  for (const c of cases) {
    const s = stats.get(c)!;
    console.log(`${c.label.padEnd(40)} ${fmt(s.median)} ${fmt(s.p95)}`);
  }
  console.log("");
  for (const prepared of [false, true]) {
    for (const page of pages) {
      const find = (side: Side) =>
        stats.get(
          cases.find((c) => c.side === side && c.page === page && c.prepared === prepared)!,
        )!;
      const view = find("view");
      const table = find("table");
      const how = prepared ? "prepared" : "unprepared";
      console.log(
        `ratio view/table, ${`${page.label}, ${how}:`.padEnd(32)} ` +
          `median ${(view.median / table.median).toFixed(2)}x, ` +
          `p95 ${(view.p95 / table.p95).toFixed(2)}x (target: at most 2x)`,
      );
    }
  }
}

/**
 * Prints a side's plan of a page (EXPLAIN ANALYZE, BUFFERS, with planning
 * and execution time), run as the benchmark runs it; fails when the view's
 * page does not read the explore index.
 */
async function explain(client: pg.Client, side: Side, page: Page): Promise<void> {
  const lines = await asSide(client, side, async () => {
    const { rows } = await client.query<{ "QUERY PLAN": string }>(
      `explain (analyze, buffers, costs off) ${pageSql(side, page)}`,
    );
    return rows.map((r) => r["QUERY PLAN"]);
  });
  console.log(`\nPlan of the ${side === "view" ? "view" : "table"}'s ${page.label}:`);
  for (const line of lines) console.log(`  ${line}`);
  if (side === "view" && !lines.some((l) => l.includes(`Index Scan using ${EXPLORE_INDEX}`))) {
    throw new Error(`The view's ${page.label} does not read ${EXPLORE_INDEX}`);
  }
}

/** A statement name for a case. */
function statementName(c: Case): string {
  return `page_${c.side}_${c.page.label.replaceAll(/\W+/g, "_")}`;
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
