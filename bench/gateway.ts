/**
 * Benchmark: requests per second of `security-headers` through the real local
 * server (gateway + verify_jwt + factory: CORS, headers, auth, logging)
 * against a bare `Deno.serve` returning the same JSON, in one run, plus the
 * local server's peak resident memory.
 *
 * Targets: the factory keeps at least half the bare throughput; the server
 * stays under 300 MB.
 *
 * @module
 */
import { fileURLToPath } from "node:url";
import { LOCAL_JWT_SECRET, signProjectKey } from "../local/keys.ts";
import { freePort, startPostgres } from "../local/postgres.ts";
import { peakRssMiB, runLoad, waitForServer } from "./support/load.ts";

const CONCURRENCY = 32;
const DURATION_MS = Number(Deno.env.get("BENCH_DURATION_MS") ?? "5000");
const ROUNDS = 2;

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
  const bareRequest = () => new Request(`http://127.0.0.1:${barePort}/`, { method: "POST" });
  const localRequest = () =>
    new Request(`http://127.0.0.1:${localPort}/functions/v1/security-headers`, {
      method: "POST",
      headers: { authorization: `Bearer ${anonKey}`, "content-type": "application/json" },
      body: "{}",
    });
  // Warm both (JIT, pools) before measuring.
  await runLoad(bareRequest, { concurrency: 4, durationMs: 500 });
  await runLoad(localRequest, { concurrency: 4, durationMs: 500 });

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
  console.log(`  ratio             ${ratio.toFixed(2)} (target >= 0.50)`);
  console.log(
    `  server peak RSS   ${rss === null ? "n/a" : `${rss.toFixed(0)} MiB`} (target < 300 MB)`,
  );
  if (l.errors > 0 || b.errors > 0) throw new Error("requests failed during the run");
} finally {
  bare.kill("SIGTERM");
  local.kill("SIGTERM");
  await bare.status;
  await local.status;
  await db.stop();
  await Deno.remove(state, { recursive: true }).catch(() => {});
}
