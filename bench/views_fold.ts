/**
 * Benchmark: `update-views-count` folding 1M recorded views over 100k
 * listings (target: at most 5 s), and the explore page while it runs
 * (target: median and p95 at most 1.5x the same query idle).
 *
 * The views are inserted directly in bulk (random listings, distinct
 * anonymous viewers, this hour), then folded by the job runner itself
 * (`runViewFold`, the job guard included) with the batch size given. While
 * it folds, another connection reads the explore page (`select * from
 * listing_view_secure where review_status = 'approved' order by created_at
 * desc, id desc limit 9`) as a signed-in free user, with role and claims set
 * as PostgREST sets them (as `bench/listing_view.ts` does), back to back;
 * the same loop runs idle first for the baseline.
 *
 * Then the cost of the listing triggers during a fold: the same views folded
 * through `fold_listing_views()` in the same batches, with every listing
 * trigger enabled, with `listings_guard_review` disabled, and with all user
 * triggers disabled (the updated_at trigger's WHEN clause already skips a
 * views_count change; the review guard runs for every row).
 *
 *     deno run -A bench/views_fold.ts [--listings 100000] [--views 1000000]
 *       [--batch 1000000,500000] [--iterations 300]
 *
 * @module
 */
import pg from "pg";
import { EXPLORE_VIEWER, seedExploreListings } from "./support/explore_listings.ts";
import { parseArgs } from "node:util";
import { freePort, startPostgres } from "../local/postgres.ts";
import { migrate } from "../local/migrate.ts";
import { Runtime } from "../supabase/functions/_shared/runtime.ts";
import { Context } from "../supabase/functions/_shared/context.ts";
import { runViewFold, VIEW_FOLD_BATCH } from "../supabase/functions/_shared/views/fold.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    listings: { type: "string", default: "100000" },
    views: { type: "string", default: "1000000" },
    batch: { type: "string", default: String(VIEW_FOLD_BATCH) },
    iterations: { type: "string", default: "300" },
  },
});
const listingCount = positiveInteger(values.listings, "listings");
const viewCount = positiveInteger(values.views, "views");
const batchSizes = (values.batch ?? "").split(",").map((b) => positiveInteger(b.trim(), "batch"));
const iterations = positiveInteger(values.iterations, "iterations");

/** Fold target (interface: 1M views in at most 5 s). */
const FOLD_TARGET_MS = 5_000;
/** The explore page while folding, against idle. */
const EXPLORE_TARGET_RATIO = 1.5;

const VIEWER = EXPLORE_VIEWER;
const EXPLORE_PAGE = `select * from public.listing_view_secure where review_status = 'approved'
  order by created_at desc, id desc limit 9`;

const dataDir = await Deno.makeTempDir({ prefix: "market-bench-pg-" });
const server = await startPostgres({ dataDir, port: freePort(), persistent: false });
const runtime = new Runtime({ SUPABASE_DB_URL: server.url, LOG_LEVEL: "silent" });
let failed = false;
try {
  await migrate(server.url, { includePlatform: true });
  const admin = new pg.Client({ connectionString: server.url });
  const reader = new pg.Client({ connectionString: server.url });
  await admin.connect();
  await reader.connect();
  try {
    console.log(`Generating ${listingCount} listings...`);
    await seedExploreListings(admin, listingCount, { viewsCount: false });

    for (const batchSize of batchSizes) {
      await seedViews(admin, viewCount, listingCount);
      await exploreWhile(reader, () => false, 50); // warm-up
      const idleBefore = await exploreWhile(reader, () => false, iterations);
      const { ms, counts, during } = await foldWithReader(reader, batchSize);
      await assertFolded(admin, viewCount);
      const idleAfter = await exploreWhile(reader, () => false, iterations);
      // Idle is read both before and after the fold, so drift shows in neither side alone.
      const idle = [...idleBefore, ...idleAfter];
      const idleStats = stats(idle);
      const duringStats = stats(during);
      const ratio = {
        median: duringStats.median / idleStats.median,
        p95: duringStats.p95 / idleStats.p95,
      };
      console.log(
        `\nbatch ${batchSize}: folded ${counts.views} views into ${counts.listings} listing ` +
          `updates in ${counts.batches} batches: ${fmt(ms)} ms ` +
          `(${
            Math.round((counts.views ?? 0) / (ms / 1000))
          } views/s; target at most ${FOLD_TARGET_MS} ms)`,
      );
      for (
        const [label, samples] of [
          ["idle (before and after)", idle],
          ["idle before", idleBefore],
          ["idle after", idleAfter],
          ["while folding", during],
        ] as const
      ) {
        const s = stats(samples);
        console.log(
          `explore page ${label.padEnd(24)} median ${fmt(s.median)} ms, p95 ${
            fmt(s.p95)
          } ms (${samples.length} reads)`,
        );
      }
      console.log(
        `ratio folding/idle: median ${ratio.median.toFixed(2)}x, p95 ${
          ratio.p95.toFixed(2)
        }x (target: at most ${EXPLORE_TARGET_RATIO}x)`,
      );
      if (ms > FOLD_TARGET_MS || ratio.median > EXPLORE_TARGET_RATIO) failed = true;
    }

    const batchSize = batchSizes[0]!;
    console.log(`\nListing triggers during a fold (fold_listing_views(${batchSize}) batches):`);
    const variants: Array<[string, string, string]> = [
      ["every trigger enabled", "", ""],
      [
        "listings_guard_review disabled",
        "alter table public.listings disable trigger listings_guard_review",
        "alter table public.listings enable trigger listings_guard_review",
      ],
      [
        "all user triggers disabled",
        "alter table public.listings disable trigger user",
        "alter table public.listings enable trigger user",
      ],
      ["every trigger enabled (again)", "", ""],
    ];
    for (const [label, before, after] of variants) {
      await seedViews(admin, viewCount, listingCount);
      if (before) await admin.query(before);
      try {
        const { ms, batches } = await foldBySql(admin, batchSize);
        const slowest = Math.max(...batches);
        console.log(
          `  ${label.padEnd(32)} ${fmt(ms)} ms (${batches.length} batches, slowest ${
            fmt(slowest)
          } ms)`,
        );
      } finally {
        if (after) await admin.query(after);
      }
      await assertFolded(admin, viewCount);
    }
  } finally {
    await admin.end();
    await reader.end();
  }
} finally {
  await runtime.close();
  await server.stop();
  await Deno.remove(dataDir, { recursive: true }).catch(() => {});
}
if (failed) {
  console.log("\nA target was missed (see above).");
  Deno.exit(1);
}

/**
 * A fresh start: no views, no cursor, counts at zero, then `views` views of
 * random listings by distinct anonymous viewers this hour; vacuumed and
 * analyzed so every round starts alike.
 */
async function seedViews(client: pg.Client, views: number, listings: number): Promise<void> {
  await client.query("truncate public.listing_views");
  await client.query("delete from public.job_cursors where job_name = 'update-views-count'");
  await client.query("delete from public.job_runs where job_name = 'update-views-count'");
  await client.query("begin");
  await client.query("set local session_replication_role = replica");
  await client.query("update public.listings set views_count = 0 where views_count <> 0");
  await client.query("commit");
  await client.query("select setseed(0.42)");
  await client.query(
    `with numbered as (select id, row_number() over (order by id) - 1 as n from public.listings)
     insert into public.listing_views (listing_id, viewer_key, viewed_hour)
     select l.id, 'a:bench-viewer-' || g, date_trunc('hour', now(), 'UTC')
     from (select g, floor(random() * $2)::bigint as n from generate_series(1, $1::int) g) v
     join numbered l on l.n = v.n
     order by v.g`,
    [views, listings],
  );
  await client.query("vacuum analyze public.listings, public.listing_views");
}

/** Folds everything through the job runner while `reader` reads explore pages back to back. */
async function foldWithReader(
  reader: pg.Client,
  batchSize: number,
): Promise<{ ms: number; counts: Record<string, number>; during: number[] }> {
  let folding = true;
  const start = performance.now();
  const fold = runViewFold(new Context(runtime, crypto.randomUUID(), runtime.log), {
    batchSize,
    maxBatches: 1_000,
  }).finally(() => folding = false);
  const during = exploreWhile(reader, () => folding);
  const answer = await fold;
  const ms = performance.now() - start;
  if ("skipped" in answer) throw new Error("Cannot benchmark: the fold was skipped");
  return { ms, counts: answer.counts, during: await during };
}

/** Folds everything through `fold_listing_views(batchSize)`; times the run and each batch. */
async function foldBySql(
  client: pg.Client,
  batchSize: number,
): Promise<{ ms: number; batches: number[] }> {
  const batches: number[] = [];
  const start = performance.now();
  for (;;) {
    const t = performance.now();
    const { rows } = await client.query<{ views: number }>(
      "select views from public.fold_listing_views($1)",
      [batchSize],
    );
    batches.push(performance.now() - t);
    if (rows[0]!.views < batchSize) break;
  }
  return { ms: performance.now() - start, batches };
}

/**
 * Reads the explore page as the free viewer, each read in its own
 * transaction with role and claims set; only the query is timed. Reads
 * `count` pages, or with no count as long as `more()` says so.
 */
async function exploreWhile(
  client: pg.Client,
  more: () => boolean,
  count?: number,
): Promise<number[]> {
  const samples: number[] = [];
  while (count === undefined ? more() : samples.length < count) {
    await client.query("begin");
    try {
      await client.query("select set_config('request.jwt.claims', $1, true)", [
        JSON.stringify({ role: "authenticated", sub: VIEWER, aud: "authenticated" }),
      ]);
      await client.query("set local role authenticated");
      const start = performance.now();
      const result = await client.query(EXPLORE_PAGE);
      samples.push(performance.now() - start);
      if (result.rowCount !== 9) {
        throw new Error(`Cannot benchmark: the explore page returned ${result.rowCount} rows`);
      }
    } finally {
      await client.query("rollback");
    }
  }
  return samples;
}

/** Checks that every view was folded exactly once. */
async function assertFolded(client: pg.Client, views: number): Promise<void> {
  const { rows } = await client.query<{ total: string }>(
    "select sum(views_count)::text as total from public.listings",
  );
  if (Number(rows[0]!.total) !== views) {
    throw new Error(`Cannot benchmark: folded ${rows[0]!.total} views, expected ${views}`);
  }
}

function stats(ms: number[]): { median: number; p95: number } {
  const sorted = [...ms].sort((a, b) => a - b);
  return { median: quantile(sorted, 0.5), p95: quantile(sorted, 0.95) };
}

function quantile(sorted: number[], q: number): number {
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[index] ?? Number.NaN;
}

function fmt(ms: number): string {
  return ms.toFixed(2).padStart(8);
}

function positiveInteger(value: string | undefined, name: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) {
    throw new Error(`Cannot benchmark: --${name} "${value}" is not a positive integer`);
  }
  return n;
}
