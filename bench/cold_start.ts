/**
 * Benchmark: the cold start of every function — a fresh Deno process
 * that imports the function's `handler.ts`, serves it and answers one POST
 * carrying the anon key — against the same process serving a bare handler
 * (`Deno.serve` answering fixed JSON). Reports the median wall time of each
 * from spawn to exit, and its ratio to the bare module measured in the same
 * run. Transpiled modules are cached first (one unmeasured run each), as a
 * deployed function's bundle is. No database or service is configured, so
 * the answer is the factory's (200, 403 or 503) and what is measured is
 * what the function loads before it can answer.
 *
 * Target: `security-headers` within 3x of the bare module. Env:
 * `BENCH_RUNS` (per function, default 7), `BENCH_FUNCTIONS` (comma-separated
 * names; default every function).
 *
 * @module
 */
import { fileURLToPath } from "node:url";
import { FUNCTION_NAMES } from "../shared/functions.ts";
import { LOCAL_JWT_SECRET, signProjectKey } from "../local/keys.ts";

const RUNS = Number(Deno.env.get("BENCH_RUNS") ?? "7");
const TARGET_RATIO = 3;
const repo = fileURLToPath(new URL("../", import.meta.url));
const child = fileURLToPath(new URL("./support/cold_start_child.ts", import.meta.url));
const anonKey = await signProjectKey("anon", LOCAL_JWT_SECRET);
const env = {
  SUPABASE_URL: "http://127.0.0.1:54321",
  SUPABASE_JWT_SECRET: LOCAL_JWT_SECRET,
  LOG_LEVEL: "silent",
};

/** Wall milliseconds of one cold start of `target`, and the status it answered. */
async function once(target: string): Promise<{ ms: number; status: number }> {
  const started = performance.now();
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--no-check", child, target, anonKey],
    cwd: repo,
    env,
    clearEnv: true,
    stdout: "piped",
    stderr: "inherit",
  }).output();
  const ms = performance.now() - started;
  if (out.code !== 0) throw new Error(`Cannot cold-start ${target}: exit ${out.code}`);
  const status = Number(new TextDecoder().decode(out.stdout).trim().split(" ")[0]);
  return { ms, status };
}

const only = Deno.env.get("BENCH_FUNCTIONS")?.split(",").map((s) => s.trim());
const names = FUNCTION_NAMES.filter((name) => !only || only.includes(name));
const targets = ["bare", ...names.map((name) => `supabase/functions/${name}/handler.ts`)];
const runs = new Map(
  targets.map((target) => [target, [] as Array<{ ms: number; status: number }>]),
);
for (const target of targets) await once(target); // fills the module cache, not measured
// Round by round over every target, so drift in machine load hits them alike.
for (let round = 0; round < RUNS; round++) {
  for (const target of targets) runs.get(target)!.push(await once(target));
}
const results = new Map([...runs].map(([target, list]) => {
  list.sort((a, b) => a.ms - b.ms);
  return [target, list[Math.floor(list.length / 2)]!] as const;
}));
const bare = results.get("bare")!.ms;

console.log(
  `cold start: fresh process, import, Deno.serve, one POST with the anon key (median of ${RUNS})`,
);
console.log(`  ${"bare Deno.serve module".padEnd(32)}${bare.toFixed(0).padStart(5)} ms   1.00x`);
for (const name of names) {
  const { ms, status } = results.get(`supabase/functions/${name}/handler.ts`)!;
  console.log(
    `  ${name.padEnd(32)}${ms.toFixed(0).padStart(5)} ms  ${
      (ms / bare).toFixed(2)
    }x  (answered ${status})`,
  );
}
const simplest = (results.get("supabase/functions/security-headers/handler.ts")?.ms ?? NaN) / bare;
console.log(
  `  target                          security-headers within ${TARGET_RATIO}x: ${
    simplest <= TARGET_RATIO ? "met" : "MISSED"
  } (${simplest.toFixed(2)}x)`,
);
