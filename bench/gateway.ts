/**
 * Benchmark: requests per second of `security-headers` through the real local
 * server (gateway + verify_jwt + factory: CORS, headers, auth, logging)
 * against a bare `Deno.serve` serving the same exchange (the same request,
 * its body read; the same JSON and headers answered: `support/bare_server.ts`),
 * in one run, plus the local server's peak resident memory. Both are warmed
 * up at full concurrency first, then measured in turns, three rounds each;
 * the best round of each counts (another process's burst lowers one round,
 * not all).
 *
 * Targets (see `support/targets.ts`; a missed one exits 1): the local server
 * keeps at least 0.85 of the bare throughput; its peak RSS stays below
 * 212 MiB.
 *
 * @module
 */
import { fileURLToPath } from "node:url";
import { LOCAL_JWT_SECRET, signProjectKey } from "../local/keys.ts";
import { freePort, startPostgres } from "../local/db/postgres.ts";
import { peakRssMiB, runLoad, waitForServer } from "./support/load.ts";
import { RatioTargets } from "./support/targets.ts";

const CONCURRENCY = 32;
const DURATION_MS = Number(Deno.env.get("BENCH_DURATION_MS") ?? "5000");
const ROUNDS = 3;
/** The local server's throughput, at least (÷ the bare server's). */
const THROUGHPUT_RATIO = 0.85;
/** The local server's peak resident memory in MiB, below. */
const PEAK_RSS_MIB = 212;

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));
const state = await Deno.makeTempDir({ prefix: "bench-gateway-" });
const db = await startPostgres({ dataDir: `${state}/db`, port: freePort(), persistent: false });

const spawn = (args: string[], env: Record<string, string> = {}) =>
  new Deno.Command(Deno.execPath(), { args, env, stdout: "null", stderr: "inherit" }).spawn();

const barePort = freePort();
const bare = spawn(["run", "-A", here("./support/bare_server.ts"), String(barePort)]);
const localPort = freePort();
const local = spawn(["run", "-A", here("../local/start.ts")], {
  SUPABASE_DB_URL: db.url,
  PORT: String(localPort),
  LOCAL_STATE_DIR: state,
  LOG_LEVEL: "warn",
});

try {
  await waitForServer(`http://127.0.0.1:${barePort}/`);
  await waitForServer(`http://127.0.0.1:${localPort}/functions/v1/security-headers`);
  const anonKey = await signProjectKey("anon", LOCAL_JWT_SECRET);
  // The same request to both (the bare server reads its body too).
  const request = (url: string) => () =>
    new Request(url, {
      method: "POST",
      headers: { authorization: `Bearer ${anonKey}`, "content-type": "application/json" },
      body: "{}",
    });
  const bareRequest = request(`http://127.0.0.1:${barePort}/`);
  const localRequest = request(`http://127.0.0.1:${localPort}/functions/v1/security-headers`);
  // Warm both (JIT, pools) before measuring.
  await runLoad(bareRequest, { concurrency: CONCURRENCY, durationMs: 1000 });
  await runLoad(localRequest, { concurrency: CONCURRENCY, durationMs: 1000 });

  const bareRuns = [];
  const localRuns = [];
  for (let round = 0; round < ROUNDS; round++) {
    bareRuns.push(
      await runLoad(bareRequest, { concurrency: CONCURRENCY, durationMs: DURATION_MS }),
    );
    localRuns.push(
      await runLoad(localRequest, { concurrency: CONCURRENCY, durationMs: DURATION_MS }),
    );
  }
  const best = (runs: Awaited<ReturnType<typeof runLoad>>[]) =>
    runs.reduce((a, b) => (a.perSecond >= b.perSecond ? a : b));
  const b = best(bareRuns);
  const l = best(localRuns);
  const rss = peakRssMiB(local.pid);
  const ratio = l.perSecond / b.perSecond;
  console.log(
    `security-headers through the local server vs bare Deno.serve (concurrency ${CONCURRENCY}, ${ROUNDS}×${DURATION_MS} ms each, best round)`,
  );
  console.log(
    `  bare Deno.serve   ${b.perSecond.toFixed(0)} req/s  p50 ${b.p50Ms.toFixed(2)} ms  p95 ${
      b.p95Ms.toFixed(2)
    } ms  errors ${b.errors}`,
  );
  console.log(
    `  local server      ${l.perSecond.toFixed(0)} req/s  p50 ${l.p50Ms.toFixed(2)} ms  p95 ${
      l.p95Ms.toFixed(2)
    } ms  errors ${l.errors}`,
  );
  console.log("");
  const targets = new RatioTargets();
  targets.atLeast("local server ÷ bare Deno.serve, requests/s", ratio, THROUGHPUT_RATIO);
  targets.below("local server peak RSS", rss, PEAK_RSS_MIB, "MiB");
  targets.summarize();
  if (l.errors > 0 || b.errors > 0) throw new Error("requests failed during the run");
} finally {
  bare.kill("SIGTERM");
  local.kill("SIGTERM");
  await bare.status;
  await local.status;
  await db.stop();
  await Deno.remove(state, { recursive: true }).catch(() => {});
}
