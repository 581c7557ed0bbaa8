/**
 * Benchmark: signed `customer.subscription.updated` events posted to
 * `payproc-webhook` through the real local server (gateway, factory,
 * signature check, admission, then one database call that proves the event's
 * copy the newest state, records the event and writes the row with its
 * realtime trigger) at a fixed concurrency, against a baseline
 * measured in the same run: the bare floor of that work — the same signed
 * payloads verified by `constructEventAsync`, then the same subscription row
 * written by one bare `update` per event (its triggers fire as they do for
 * the webhook's write), from this process over a pool of the server's size
 * at the same concurrency. Both scale with the machine's CPU and its
 * database alike, so their ratio holds where events/s does not (the same
 * code measured 1,415 and 629 events/s on two 2-core machines). Afterwards
 * it checks that every event was applied exactly once, that repeated
 * deliveries changed nothing, and that every row ended in the processor's
 * final state.
 *
 * The workload is the one `../shared/peer-bench` sends the peer (the
 * sync engine): each event carries its subscription's next state
 * (`cancel_at_period_end` flips, `metadata.bench_seq` counts) and is created
 * a second after the subscription's previous one, and that state becomes the
 * processor's copy when the event is sent. The rows start mirrored by a read
 * answered before every event (`payproc_state_at`), so each event's copy is
 * provably newer and no event needs a processor read. A third pass sends
 * events the webhook cannot prove newest (created before the row's state):
 * each re-reads its subscription from the processor first (the processor's
 * copy is flipped just before it is sent, so every one changes a row); its
 * figures print as information.
 *
 * The processor double runs in this process (re-reads need an answer); the
 * server runs in a child process; PostgreSQL is embedded. Two
 * rounds are run, each the webhook and the baseline over the same payloads
 * in turns (webhook first, then baseline first), and the best of each is
 * reported (all rounds are printed), with the CPU each part spent per event
 * (from /proc, Linux only). Printed as information: events/s and p50/p95
 * of both, and a bare signature-check loop alone (no database). Env: `BENCH_EVENTS` (per round),
 * `BENCH_CONCURRENCY`, `BENCH_SUBSCRIPTIONS`, `BENCH_DB_POOL` (the server's
 * `DB_POOL_MAX` and the baseline's pool; default: the production default,
 * 5 — no connection is held across a processor call), `BENCH_PROFILE_DIR` (the
 * server writes a V8 CPU profile of the whole run there).
 *
 * Target: events/s of the webhook at least {@linkcode TARGET_RATIO} of the
 * baseline's, with every event applied exactly once; a missed target exits
 * 1 (see `support/targets.ts`).
 *
 * @module
 */
import { fileURLToPath } from "node:url";
import pg from "pg";
import Stripe from "stripe";
import { migrate } from "../local/db/migrate.ts";
import { freePort, startPostgres } from "../local/db/postgres.ts";
import { Env } from "../supabase/functions/_shared/platform/env.ts";
import { PayprocDouble, type PayprocSubscription } from "../tests/support/payproc_double.ts";
import { summarize, waitForServer } from "./support/load.ts";
import { RatioTargets } from "./support/targets.ts";

const CONCURRENCY = Number(Deno.env.get("BENCH_CONCURRENCY") ?? "32");
const EVENTS = Number(Deno.env.get("BENCH_EVENTS") ?? "6000");
const SUBSCRIPTIONS = Number(Deno.env.get("BENCH_SUBSCRIPTIONS") ?? "1000");
/** The server's pool (`DB_POOL_MAX`) and the baseline's: the production default unless set. */
const DB_POOL = new Env({ DB_POOL_MAX: Deno.env.get("BENCH_DB_POOL") }).values.DB_POOL_MAX;
const REPLAYS = 500;
const PROFILE_DIR = Deno.env.get("BENCH_PROFILE_DIR");
/** Events of the pass that re-reads (information). */
const REREADS = 3000;
const ROUNDS = 2;
const WEBHOOK_SECRET = "whsec_bench_secret";
/**
 * Webhook events/s ÷ baseline events/s, at least. Measured 0.70–0.82 on the
 * development machine (2026-11-28: signed copies written without a read,
 * gathered into one call under load); when every event re-read its
 * subscription it was 0.23–0.32. The target is well under the lowest, so a
 * loaded machine does not miss it, and far above what re-reading reached.
 */
const TARGET_RATIO = 0.5;

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));
const state = await Deno.makeTempDir({ prefix: "bench-webhook-" });
const postgres = await startPostgres({
  dataDir: `${state}/db`,
  port: freePort(),
  persistent: false,
});
const double = new PayprocDouble();
let server: Deno.ChildProcess | undefined;

/** CPU seconds (user + system) of a process, from /proc; 0 where unavailable. */
function cpuSeconds(pid: number): number {
  try {
    const fields = Deno.readTextFileSync(`/proc/${pid}/stat`).split(") ")[1]!.split(" ");
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}

/** CPU seconds of the embedded PostgreSQL: the postmaster and its backends. */
function postgresCpuSeconds(dataDir: string): number {
  try {
    const master = Number(Deno.readTextFileSync(`${dataDir}/postmaster.pid`).split("\n")[0]);
    let total = cpuSeconds(master);
    for (const entry of Deno.readDirSync("/proc")) {
      if (!/^\d+$/.test(entry.name)) continue;
      try {
        const ppid =
          Deno.readTextFileSync(`/proc/${entry.name}/stat`).split(") ")[1]!.split(" ")[1];
        if (Number(ppid) === master) total += cpuSeconds(Number(entry.name));
      } catch {
        // The process ended meanwhile.
      }
    }
    return total;
  } catch {
    return 0;
  }
}

/** CPU seconds of the server, this process (double and load) and PostgreSQL. */
function cpuNow(serverPid: number): number[] {
  return [cpuSeconds(serverPid), cpuSeconds(Deno.pid), postgresCpuSeconds(postgres.dataDir)];
}

interface Delivery {
  id: string;
  subscription: string;
  body: string;
  signature: string;
  /** The state the event reports, made the processor's copy when it is sent (null: flip it). */
  state: PayprocSubscription | null;
}

interface Timing {
  events: number;
  errors: number;
  seconds: number;
  perSecond: number;
  p50Ms: number;
  p95Ms: number;
}

try {
  await migrate(postgres.url, { includePlatform: true });
  const db = new pg.Pool({ connectionString: postgres.url, max: 4 });
  // No scheduled job may run during the measurement.
  await db.query("update public.job_schedules set enabled = false");

  // Users, their customers and subscriptions at the processor, mirrored rows.
  double.addPrice({ lookupKey: "starter_monthly", unitAmount: 900, interval: "month" });
  const users = (await db.query<{ id: string }>(
    `insert into auth.users (email)
     select 'bench-' || g || '@example.test' from generate_series(1, $1) g returning id`,
    [SUBSCRIPTIONS],
  )).rows;
  const subscriptions = users.map(({ id }) => {
    const customer = double.addCustomer({ metadata: { user_id: id } });
    const subscription = double.addSubscription({
      customer: customer.id,
      lookupKey: "starter_monthly",
      withInvoice: false,
    });
    return { userId: id, customer: customer.id, subscription: subscription.id };
  });
  // Mirrored by a read answered at `seededAt` (a processor time before every
  // event below), as the webhook or a sync would have left them.
  const seededAt = double.store.now() - 3600;
  await db.query(
    `insert into public.subscriptions
       (user_id, subscription_level, payproc_customer_id, payproc_subscription_id, payproc_state_at)
     select *, to_timestamp($5) from unnest($1::uuid[], $2::text[], $3::text[], $4::text[])`,
    [
      subscriptions.map((s) => s.userId),
      subscriptions.map(() => "starter"),
      subscriptions.map((s) => s.customer),
      subscriptions.map((s) => s.subscription),
      seededAt,
    ],
  );
  /** How many changes each subscription has had (its events' `bench_seq`). */
  const seqOf = new Map(subscriptions.map((s) => [s.subscription, 0]));

  const port = freePort();
  server = new Deno.Command(Deno.execPath(), {
    // BENCH_PROFILE_DIR: the server writes a V8 CPU profile there when it stops.
    args: [
      "run",
      "-A",
      ...(PROFILE_DIR ? ["--cpu-prof", `--cpu-prof-dir=${PROFILE_DIR}`] : []),
      here("../local/start.ts"),
    ],
    env: {
      SUPABASE_DB_URL: postgres.url,
      PORT: String(port),
      LOCAL_STATE_DIR: state,
      LOG_LEVEL: "warn",
      DB_POOL_MAX: String(DB_POOL),
      PAYPROC_SECRET_KEY: "sk_test_bench",
      PAYPROC_API_BASE: double.url,
      PAYPROC_WEBHOOK_SECRET: WEBHOOK_SECRET,
      PAYPROC_TIMEOUT_MS: "5000",
    },
    stdout: "null",
    stderr: "inherit",
  }).spawn();
  const url = `http://127.0.0.1:${port}/functions/v1/payproc-webhook`;
  await waitForServer(url);

  /**
   * `next`: each event carries its subscription's next state, created a
   * second after its previous one (provably newer than the row). `reread`:
   * each carries the processor's current copy, created before the rows'
   * state (the webhook must re-read), and flips the copy when sent.
   */
  const prepare = async (count: number, mode: "next" | "reread"): Promise<Delivery[]> => {
    const deliveries: Delivery[] = [];
    for (let i = 0; i < count; i++) {
      const target = subscriptions[i % subscriptions.length]!;
      let state: PayprocSubscription | null = null;
      let created = seededAt;
      if (mode === "next") {
        const seq = seqOf.get(target.subscription)! + 1;
        seqOf.set(target.subscription, seq);
        state = structuredClone(double.get("subscription", target.subscription)!);
        state.cancel_at_period_end = seq % 2 === 1;
        state.metadata = { ...state.metadata, bench_seq: String(seq) };
        created = seededAt + seq;
      }
      const event = double.event(
        "customer.subscription.updated",
        state ?? double.get("subscription", target.subscription)!,
        { created },
      );
      const signed = await double.signedWebhook(event, WEBHOOK_SECRET);
      deliveries.push({
        id: event.id,
        subscription: target.subscription,
        body: signed.body,
        signature: signed.headers["stripe-signature"],
        state,
      });
    }
    return deliveries;
  };
  const send = async (delivery: Delivery, change: boolean): Promise<number> => {
    if (change) {
      // The processor-side change the event reports (as double.updateSubscription
      // makes, without its copies), or a flip for an event that re-reads.
      const current = double.store.require("subscription", delivery.subscription);
      if (delivery.state) Object.assign(current, delivery.state); // its own copy, used once
      else current.cancel_at_period_end = !current.cancel_at_period_end;
    }
    const res = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", "stripe-signature": delivery.signature },
      body: delivery.body,
    });
    await res.arrayBuffer();
    return res.status;
  };
  const drive = async (
    deliveries: Delivery[],
    work: (d: Delivery) => Promise<number>,
  ): Promise<Timing> => {
    const latencies: number[] = [];
    let errors = 0;
    let next = 0;
    const started = performance.now();
    await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
      while (next < deliveries.length) {
        const delivery = deliveries[next++]!;
        const t0 = performance.now();
        if ((await work(delivery)) !== 200) errors++;
        latencies.push(performance.now() - t0);
      }
    }));
    const { requests, ...timing } = summarize(
      latencies,
      (performance.now() - started) / 1000,
      errors,
    );
    return { events: requests, ...timing };
  };

  // The baseline: the same payload verified, then the same row written by one
  // bare statement, over a pool of the server's size.
  const barePool = new pg.Pool({ connectionString: postgres.url, max: DB_POOL });
  const payprocCryptoProvider = Stripe.createSubtleCryptoProvider();
  const verify = (d: Delivery) =>
    Stripe.webhooks.constructEventAsync(
      d.body,
      d.signature,
      WEBHOOK_SECRET,
      undefined,
      payprocCryptoProvider,
    );
  const bare = async (d: Delivery): Promise<number> => {
    const event = await verify(d);
    const id = (event.data.object as Stripe.Subscription).id;
    // The processor's current value, which the webhook has already stored:
    // the update still writes a new row version and fires the row's triggers
    // (updated_at, the realtime broadcast) as the webhook's write does, and
    // leaves the final state for the checks below.
    const cancel = double.store.require("subscription", id).cancel_at_period_end;
    const { rowCount } = await barePool.query(
      "update public.subscriptions set cancel_at_period_end = $2 where payproc_subscription_id = $1",
      [id, cancel],
    );
    return rowCount === 1 ? 200 : 500;
  };

  // Warm-up (JIT, pools, price cache), not measured.
  const warmUp = await prepare(300, "next");
  await drive(warmUp, (d) => send(d, true));
  await drive(warmUp, bare);
  await db.query("delete from public.payproc_events");

  const serverPid = server.pid;
  const deliveries: Delivery[] = [];
  const rounds: Timing[] = [];
  const baselines: Timing[] = [];
  const cpu = [0, 0, 0];
  /** Subscription reads at the processor the measured webhook rounds made. */
  let roundReads = 0;
  const subscriptionReads = () => double.requestsTo("GET", /^\/v1\/subscriptions\//).length;
  for (let round = 0; round < ROUNDS; round++) {
    const batch = await prepare(EVENTS, "next");
    double.reset(); // recorded requests only cost memory here
    const measureWebhook = async () => {
      const before = cpuNow(serverPid);
      rounds.push(await drive(batch, (d) => send(d, true)));
      cpuNow(serverPid).forEach((after, i) => cpu[i]! += after - before[i]!);
      roundReads += subscriptionReads();
    };
    const measureBaseline = async () => baselines.push(await drive(batch, bare));
    // Alternate the order so drift affects both sides alike.
    if (round % 2 === 0) {
      await measureWebhook();
      await measureBaseline();
    } else {
      await measureBaseline();
      await measureWebhook();
    }
    deliveries.push(...batch);
  }
  await barePool.end();
  const best = (runs: Timing[]) => runs.reduce((a, b) => (a.perSecond >= b.perSecond ? a : b));
  const webhook = best(rounds);
  const baseline = best(baselines);
  const verifyOnly = await drive(deliveries.slice(0, EVENTS), async (d) => {
    await verify(d);
    return 200;
  });
  const replays = await drive(deliveries.slice(0, REPLAYS), (d) => send(d, false));
  // Events the webhook cannot prove newest: each re-reads its subscription.
  const rereadBatch = await prepare(REREADS, "reread");
  double.reset();
  const reread = await drive(rereadBatch, (d) => send(d, true));
  const rereads = subscriptionReads();
  deliveries.push(...rereadBatch);

  // Exactly once: every event recorded once, applied, and no replay did anything.
  const recorded = await db.query<{ outcome: string; n: number }>(
    "select outcome, count(*)::int as n from public.payproc_events group by outcome",
  );
  const outcomes = Object.fromEntries(recorded.rows.map((r) => [r.outcome, r.n]));
  const distinct = new Set(deliveries.map((d) => d.id)).size;
  const mismatched = (await db.query<{ n: number }>(
    `select count(*)::int as n from public.subscriptions s
     join unnest($1::text[], $2::boolean[]) as f(id, cancel) on f.id = s.payproc_subscription_id
     where s.cancel_at_period_end <> f.cancel`,
    [
      subscriptions.map((s) => s.subscription),
      subscriptions.map((s) => double.get("subscription", s.subscription)!.cancel_at_period_end),
    ],
  )).rows[0]!.n;
  await db.end();

  const line = (name: string, t: Timing) =>
    `  ${name.padEnd(26)}${t.perSecond.toFixed(0).padStart(6)} events/s  p50 ${
      t.p50Ms.toFixed(2)
    } ms  p95 ${t.p95Ms.toFixed(2)} ms  errors ${t.errors}`;
  const perRound = (runs: Timing[]) => runs.map((r) => r.perSecond.toFixed(0)).join(", ");
  console.log(
    `payproc-webhook through the local server vs its bare floor (verify + one bare update) ` +
      `(${ROUNDS}×${EVENTS} customer.subscription.updated events over ${SUBSCRIPTIONS} subscriptions, ` +
      `concurrency ${CONCURRENCY}, pool ${DB_POOL}, best round)`,
  );
  console.log(line("webhook (applied)", webhook));
  console.log(`  rounds                    ${perRound(rounds)} events/s`);
  const perEvent = cpu.map((seconds) => (seconds * 1000 / (ROUNDS * EVENTS)).toFixed(2));
  console.log(
    `  CPU per applied event     server ${perEvent[0]} ms, processor double + load ${
      perEvent[1]
    } ms, PostgreSQL ${perEvent[2]} ms`,
  );
  console.log(line("bare verify + update", baseline));
  console.log(`  rounds                    ${perRound(baselines)} events/s`);
  console.log(line("bare signature check", verifyOnly));
  console.log(line("replays (duplicates)", replays));
  console.log(line("webhook, each re-reading", reread));
  console.log(
    `  processor reads           ${roundReads} in the measured rounds; ${rereads} for the ${REREADS} ` +
      `events that re-read (information: ${
        (reread.perSecond / baseline.perSecond).toFixed(2)
      }x the baseline)`,
  );
  console.log(
    `  information               p95 webhook ÷ baseline ${
      (webhook.p95Ms / baseline.p95Ms).toFixed(2)
    }x; events/s webhook ÷ signature check alone ${
      (webhook.perSecond / verifyOnly.perSecond).toFixed(3)
    }x`,
  );
  console.log(
    `  exactly once              ${distinct} events sent, recorded ${
      JSON.stringify(outcomes)
    }, ${REPLAYS} replays, ${mismatched} rows differ from the processor`,
  );
  const targets = new RatioTargets();
  targets.atLeast(
    "webhook ÷ baseline events/s",
    webhook.perSecond / baseline.perSecond,
    TARGET_RATIO,
  );
  if ([...rounds, ...baselines, replays, reread].some((r) => r.errors > 0)) {
    throw new Error("deliveries failed during the run");
  }
  if (roundReads !== 0) throw new Error("Events whose copy is provably newest read the processor");
  if (rereads !== REREADS) throw new Error(`${REREADS} events to re-read made ${rereads} reads`);
  if ((outcomes.applied ?? 0) !== distinct || Object.keys(outcomes).length !== 1) {
    throw new Error("Not every event was applied exactly once");
  }
  if (mismatched > 0) throw new Error("Some rows do not match the processor's final state");
  targets.summarize();
} finally {
  if (server) {
    server.kill("SIGTERM");
    await server.status;
  }
  await double.close();
  await postgres.stop();
  await Deno.remove(state, { recursive: true }).catch(() => {});
}
