/**
 * Benchmark: `run-price-alerts` over N active alerts and N listings, for
 * N = 10k, 50k and 100k. Targets at 100k: the first run at most 5 s, a
 * no-change rerun at most 1 s, and matching linear in N (the baseline is
 * the smallest N, measured in the same run: its ms per 1k alerts).
 *
 * Each N gets its own migrated database on one embedded PostgreSQL:
 *
 * - N/5 users (each also a seller), N listings over N/500 categories (a few
 *   hundred listings each), 90% approved, 90% in USD, created over the last
 *   30 days; 3% of them changed within the last day (new prices, newly
 *   approved: what saved searches look at);
 * - N/2 listing alerts on random listings with targets between half the
 *   price and just above it (about 2% match), and N/2 saved searches in a
 *   random category with a maximum price and 1 to 3 keywords from the
 *   listings' vocabulary, saved over the last 30 days; channels mixed
 *   (both, e-mail only, in-app only).
 *
 * The job runs through its handler with the scheduler token, its e-mail going
 * through the real `resend` SDK to the e-mail double on 127.0.0.1. Measured:
 * the first run (matching everything new, then telling up to 500 users, as
 * every run does); then the runs that tell the users left over ("drain",
 * reported, not targeted); then a no-change rerun. Matching and delivery
 * times are the run's own (`price_alert_runs.match_ms`, `delivery_ms`).
 *
 *     deno run -A bench/price_alerts.ts [--sizes 10000,50000,100000] [--explain]
 *
 * `--explain` prints the plans of the matching statement (auto_explain of
 * nested statements) in the first run and the rerun at the largest N.
 *
 * @module
 */
import pg from "pg";
import { parseArgs } from "node:util";
import { freePort, startPostgres } from "../local/postgres.ts";
import { migrate } from "../local/migrate.ts";
import handler from "../supabase/functions/run-price-alerts/handler.ts";
import type { Runtime } from "../supabase/functions/_shared/runtime.ts";
import { testCredentials } from "../tests/support/credentials.ts";
import { withDatabase } from "../tests/support/db.ts";
import { EmailDouble } from "../tests/support/email_double.ts";
import { emailEnv } from "../tests/support/notifications.ts";
import { invoke, testRuntime } from "../tests/support/runtime.ts";

/** Targets at the largest N (interface: 100k alerts). */
const FIRST_RUN_TARGET_MS = 5000;
const RERUN_TARGET_MS = 1000;
/** Drain runs at most before giving up (each tells up to 500 users). */
const MAX_DRAIN_RUNS = 50;

/** Words of listing titles and descriptions, and of saved searches' keywords. */
const VOCABULARY = [
  "saas",
  "blog",
  "shop",
  "newsletter",
  "plugin",
  "marketplace",
  "recipes",
  "fitness",
  "crypto",
  "travel",
  "analytics",
  "chatbot",
  "podcast",
  "course",
  "agency",
  "directory",
  "template",
  "extension",
  "game",
  "finance",
  "pets",
  "fashion",
  "music",
  "video",
  "jobs",
  "real estate",
  "education",
  "health",
  "gardening",
  "photography",
  "design",
  "security",
  "hosting",
  "mobile",
  "ai",
  "automation",
  "crm",
  "seo",
  "social",
  "dropshipping",
];

const { values } = parseArgs({
  args: Deno.args,
  options: {
    sizes: { type: "string", default: "10000,50000,100000" },
    explain: { type: "boolean", default: false },
  },
});
const sizes = (values.sizes ?? "").split(",").map((s) => positiveInteger(s.trim()));

/** What one run answered and recorded. */
interface RunFigures {
  wallMs: number;
  matchMs: number;
  deliveryMs: number;
  scanned: number;
  matches: number;
  events: number;
  users: number;
  delivered: number;
  pendingLeft: number;
}

/** The figures of one N. */
interface SizeFigures {
  n: number;
  seedMs: number;
  first: RunFigures;
  drain: RunFigures[];
  rerun: RunFigures;
  emails: number;
}

/** Whether the server's log (auto_explain's plans) is printed. */
let printServerLog = false;
const dataDir = await Deno.makeTempDir({ prefix: "market-bench-pg-" });
const server = await startPostgres({
  dataDir,
  port: freePort(),
  persistent: false,
  onLog: (line) => {
    if (printServerLog) console.log(`  | ${line}`);
  },
});
const double = new EmailDouble();
const keys = await testCredentials();
const results: SizeFigures[] = [];
try {
  const admin = new pg.Client({ connectionString: server.url });
  await admin.connect();
  try {
    for (const n of sizes) {
      const name = `bench_price_alerts_${n}`;
      await admin.query(`drop database if exists ${name}`);
      await admin.query(`create database ${name}`);
      const url = withDatabase(server.url, name);
      await migrate(url, { includePlatform: true });
      results.push(await benchSize(url, n, values.explain === true && n === Math.max(...sizes)));
      await admin.query(`drop database ${name} with (force)`);
    }
  } finally {
    await admin.end();
  }
  report(results);
} finally {
  await double.close();
  await server.stop();
  await Deno.remove(dataDir, { recursive: true }).catch(() => {});
}

/** Seeds one N, runs the job (first, drain, rerun) and answers the figures. */
async function benchSize(url: string, n: number, explain: boolean): Promise<SizeFigures> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  const runtime = await testRuntime({ url, pool, close: () => pool.end() }, emailEnv(double));
  try {
    console.log(`\nN = ${n}: seeding ${n} listings, ${n} alerts, ${n / 5} users...`);
    const start = performance.now();
    await seed(client, n);
    const seedMs = performance.now() - start;
    console.log(`  seeded in ${fmt(seedMs)} ms`);
    if (explain) await startExplain(client, url);
    double.reset();
    const first = await runOnce(runtime, client);
    console.log(`  first run: ${describe(first)}`);
    const drain: RunFigures[] = [];
    let left = first.pendingLeft;
    while (left > 0 && drain.length < MAX_DRAIN_RUNS) {
      const figures = await runOnce(runtime, client);
      drain.push(figures);
      left = figures.pendingLeft;
    }
    if (left > 0) throw new Error(`Cannot benchmark: ${left} events still pending after draining`);
    if (drain.length > 0) {
      const users = drain.reduce((sum, d) => sum + d.users, 0);
      const each = drain.reduce((sum, d) => sum + d.wallMs, 0) / drain.length;
      console.log(`  drain: ${drain.length} run(s) told ${users} more users, ${fmt(each)} ms each`);
    }
    const rerun = await runOnce(runtime, client);
    console.log(`  no-change rerun: ${describe(rerun)}`);
    if (rerun.events !== 0 || rerun.users !== 0) {
      throw new Error("Cannot benchmark: the no-change rerun created events or told users");
    }
    await assertEverythingTold(client);
    return { n, seedMs, first, drain, rerun, emails: double.sent.length };
  } finally {
    await runtime.close();
    await client.end();
  }
}

/** Runs the job once through its handler; answers its figures. */
async function runOnce(runtime: Runtime, client: pg.Client): Promise<RunFigures> {
  const start = performance.now();
  const res = await invoke<{
    scanned?: number;
    counts?: Record<string, number>;
    error?: unknown;
  }>(handler, runtime, { token: keys.schedulerToken });
  const wallMs = performance.now() - start;
  if (res.status !== 200 || !res.body.counts) {
    throw new Error(`Cannot benchmark: the run answered ${res.status} ${JSON.stringify(res.body)}`);
  }
  const { rows } = await client.query<{ match_ms: number; delivery_ms: number }>(
    "select match_ms, delivery_ms from public.price_alert_runs order by started_at desc limit 1",
  );
  const counts = res.body.counts;
  return {
    wallMs,
    matchMs: rows[0]?.match_ms ?? Number.NaN,
    deliveryMs: rows[0]?.delivery_ms ?? Number.NaN,
    scanned: res.body.scanned ?? 0,
    matches: counts.matches ?? 0,
    events: counts.events_created ?? 0,
    users: counts.users_notified ?? 0,
    delivered: counts.delivered ?? 0,
    pendingLeft: counts.pending_left ?? 0,
  };
}

/** Every event ended sent or suppressed (e-mail in the double, in-app rows written). */
async function assertEverythingTold(client: pg.Client): Promise<void> {
  const { rows } = await client.query<{ status: string; n: number }>(
    "select status, count(*)::integer as n from public.price_alert_events group by status",
  );
  const open = rows.filter((r) => r.status !== "sent" && r.status !== "suppressed");
  if (open.length > 0) {
    throw new Error(`Cannot benchmark: events left ${JSON.stringify(open)}`);
  }
}

/**
 * Users, listings and alerts of one N (see the module doc), written in bulk:
 * listings and alerts without their row triggers (review state machine,
 * realtime, normalization), as a restore would; users through theirs, so
 * each has a profile with an address.
 */
async function seed(client: pg.Client, n: number): Promise<void> {
  const users = Math.max(1, Math.floor(n / 5));
  const categories = Math.max(1, Math.floor(n / 500));
  await client.query("select setseed(0.4242)");
  await client.query(
    `insert into auth.users (email, created_at)
     select 'bench-' || g || '@example.test', now() - interval '60 days'
     from generate_series(1, $1::int) g`,
    [users],
  );
  await client.query("begin");
  await client.query("set local session_replication_role = replica");
  await client.query(
    `create temporary table bench_users on commit drop as
     select id, row_number() over (order by id)::int as n from auth.users`,
  );
  await client.query(
    `insert into public.listings (seller_id, title, description, url, category, asking_price,
       currency, review_status, created_at, updated_at, submitted_at, reviewed_at)
     select u.id,
            initcap(c.w[1]) || ' ' || c.w[2] || ' project ' || c.g,
            'A ' || c.w[3] || ' business with ' || c.w[4] || ' and ' || c.w[5] || '.',
            'https://project-' || c.g || '.example',
            'category-' || floor(random() * $2::int)::int,
            round((1000 + random() * 99000)::numeric, 2),
            case when random() < 0.1 then 'EUR' else 'USD' end,
            case when random() < 0.1 then 'pending_review' else 'approved' end,
            c.created_at,
            case when random() < 0.03
                 then greatest(c.created_at, now() - random() * interval '1 day')
                 else c.created_at end,
            c.created_at, c.created_at
     from (
       select g, now() - random() * interval '30 days' as created_at,
              array(select ($4::text[])[1 + floor(random() * cardinality($4::text[]))::int]
                    from generate_series(1, 5) where g > 0) as w
       from generate_series(1, $1::int) g
     ) c
     join bench_users u on u.n = 1 + c.g % $3::int`,
    [n, categories, users, VOCABULARY],
  );
  await client.query(
    `create temporary table bench_listings on commit drop as
     select id, asking_price, row_number() over (order by id)::int as n from public.listings`,
  );
  // Listing alerts: targets from half the price to just above it.
  await client.query(
    `insert into public.price_alerts (user_id, listing_id, target_price, channels, created_at,
       updated_at)
     select u.id, l.id, round(l.asking_price * (0.5 + random() * 0.51)::numeric, 2),
            (array['{email,in_app}', '{email,in_app}', '{email,in_app}', '{email}',
                   '{in_app}'])[1 + c.g % 5]::text[],
            c.at, c.at
     from (
       select g, now() - random() * interval '30 days' as at,
              1 + floor(random() * $2::int)::int as user_n,
              1 + floor(random() * $1::int)::int as listing_n
       from generate_series(1, $1::int / 2) g
     ) c
     join bench_users u on u.n = c.user_n
     join bench_listings l on l.n = c.listing_n`,
    [n, users],
  );
  // Saved searches: a category, a maximum price, 1 to 3 keywords.
  await client.query(
    `insert into public.price_alerts (user_id, category, currency, max_price, keywords, channels,
       created_at, updated_at)
     select u.id, 'category-' || c.category,
            case when random() < 0.1 then 'EUR' else 'USD' end,
            round((1000 + random() * 10000)::numeric, 2),
            array(select distinct ($4::text[])[1 + floor(random() * cardinality($4::text[]))::int]
                  from generate_series(1, 1 + c.g % 3)),
            (array['{email,in_app}', '{email,in_app}', '{email,in_app}', '{email}',
                   '{in_app}'])[1 + c.g % 5]::text[],
            c.at, c.at
     from (
       select g, now() - random() * interval '30 days' as at,
              1 + floor(random() * $2::int)::int as user_n,
              floor(random() * $3::int)::int as category
       from generate_series(1, $1::int - $1::int / 2) g
     ) c
     join bench_users u on u.n = c.user_n`,
    [n, users, categories, VOCABULARY],
  );
  await client.query("commit");
  await client.query("vacuum (analyze)");
}

/**
 * Prints the plans (with timings) of every statement over 50 ms, nested ones
 * inside the job's SQL functions included, from the server's log.
 */
async function startExplain(client: pg.Client, url: string): Promise<void> {
  const name = new URL(url).pathname.slice(1);
  // auto_explain for every new session of this database (the runtime's pool).
  await client.query(`alter database ${name} set session_preload_libraries = 'auto_explain'`);
  await client.query(`alter database ${name} set auto_explain.log_min_duration = 50`);
  await client.query(`alter database ${name} set auto_explain.log_analyze = on`);
  await client.query(`alter database ${name} set auto_explain.log_buffers = on`);
  await client.query(`alter database ${name} set auto_explain.log_nested_statements = on`);
  printServerLog = true;
}

function describe(r: RunFigures): string {
  return `${fmt(r.wallMs)} ms (match ${fmt(r.matchMs)} ms, delivery ${fmt(r.deliveryMs)} ms); ` +
    `${r.scanned} alerts, ${r.matches} matches, ${r.events} events, ${r.users} users told, ` +
    `${r.delivered} delivered, ${r.pendingLeft} left`;
}

/** Prints the table, the linearity against the smallest N, and the targets. */
function report(all: SizeFigures[]): void {
  const base = all[0];
  if (!base) return;
  const perK = (ms: number, n: number) => ms / (n / 1000);
  console.log(
    "\n       N   first ms  (match  deliver)  matches   events  users  rerun ms (match)" +
      "  match ms/1k  rerun ms/1k",
  );
  for (const r of all) {
    console.log(
      `${String(r.n).padStart(8)} ${fmt(r.first.wallMs).padStart(10)} ${
        fmt(r.first.matchMs).padStart(7)
      } ${fmt(r.first.deliveryMs).padStart(8)} ${String(r.first.matches).padStart(8)} ${
        String(r.first.events).padStart(8)
      } ${String(r.first.users).padStart(6)} ${fmt(r.rerun.wallMs).padStart(9)} ${
        `(${fmt(r.rerun.matchMs)})`.padStart(8)
      } ${perK(r.first.matchMs, r.n).toFixed(2).padStart(12)} ${
        perK(r.rerun.wallMs, r.n).toFixed(2).padStart(12)
      }`,
    );
  }
  console.log(`\nLinearity against N = ${base.n} (ms per 1k alerts, ratio to the baseline):`);
  for (const r of all) {
    console.log(
      `  N = ${r.n}: first-run matching ${
        (perK(r.first.matchMs, r.n) / perK(base.first.matchMs, base.n)).toFixed(2)
      }x, no-change rerun ${
        (perK(r.rerun.wallMs, r.n) / perK(base.rerun.wallMs, base.n)).toFixed(2)
      }x`,
    );
  }
  const largest = all.at(-1)!;
  const met = (ms: number, target: number) => ms <= target ? "met" : "MISSED";
  console.log(
    `\nAt N = ${largest.n}: first run ${
      fmt(largest.first.wallMs)
    } ms (target ${FIRST_RUN_TARGET_MS}: ${
      met(largest.first.wallMs, FIRST_RUN_TARGET_MS)
    }), no-change rerun ${fmt(largest.rerun.wallMs)} ms (target ${RERUN_TARGET_MS}: ${
      met(largest.rerun.wallMs, RERUN_TARGET_MS)
    }); ${largest.emails} e-mails reached the double`,
  );
}

function fmt(ms: number): string {
  return ms.toFixed(0);
}

function positiveInteger(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) {
    throw new Error(`Cannot benchmark: size "${value}" is not a positive integer`);
  }
  return n;
}
