/**
 * Benchmark: the cold start of every function — a fresh Deno process
 * that imports the function's `handler.ts`, serves it and answers one POST
 * carrying the anon key — against the same process serving a bare handler
 * (`Deno.serve` answering fixed JSON). Reports the median wall time of each
 * from spawn to exit, and its ratio to the bare module measured in the same
 * run. Transpiled modules are cached first (one unmeasured run each), as a
 * deployed function's bundle is. No database or service is configured, so
 * the answer is the factory's (200, 400, 403 or 503) and what is measured is
 * what the function loads before it can answer: its declaration and the
 * modules on its path, while the heavy libraries (zod, `jose`, the SDKs,
 * `pdf-lib`, the page extractor) load on first use.
 *
 * Targets (ratios to the bare module; see `support/targets.ts`): every
 * function that takes no body (its catalog entry has no `input`) within 2x,
 * the median of all functions within 2.5x, none above 3x. A missed target
 * exits 1. No function loads zod at cold start (its input schema loads on
 * the first request that passes its access rule), nor `jose`, the SDKs or
 * `pdf-lib` (`tests/functions/_cold_start/imports.test.ts`).
 *
 * It also bundles each function's `index.ts` with `deno bundle` (esbuild,
 * npm packages included, code-split at dynamic imports) and reports the
 * bundle's size, which is about what its deployment carries (the eszip
 * holds every module, lazy ones too), and the part a cold start loads: the
 * entry chunk and the chunks it imports statically.
 *
 * Env: `BENCH_RUNS` (per function, default 7), `BENCH_FUNCTIONS`
 * (comma-separated names; default every function; the targets then cover
 * those), `BENCH_BUNDLE=0` to skip the bundle sizes.
 *
 * @module
 */
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { FUNCTION_NAMES, FUNCTIONS } from "../shared/functions.ts";
import { LOCAL_JWT_SECRET, signProjectKey } from "../local/keys.ts";
import { RatioTargets } from "./support/targets.ts";

const RUNS = Number(Deno.env.get("BENCH_RUNS") ?? "7");
/** A function that takes no body, at most (each). */
const NO_BODY_RATIO = 2;
/** The median function, at most. */
const MEDIAN_RATIO = 2.5;
/** Any function, at most. */
const EVERY_RATIO = 3;

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

/** Sizes in bytes of function `name`'s bundle: all of it, and what a cold start loads. */
interface BundleSize {
  total: number;
  atStart: number;
}

/** Static imports of a chunk (`import … from "./x.js"`, `export … from`), not `import("./x.js")`. */
const STATIC_CHUNK_IMPORT =
  /^(?:import|export)\b[^;]*?\bfrom\s*"\.\/([^"]+)"|^import\s*"\.\/([^"]+)"/gm;

/** Bundles function `name` into a temporary directory; null (and a warning) when bundling fails. */
async function bundleSize(name: string): Promise<BundleSize | null> {
  const outdir = await Deno.makeTempDir({ prefix: `bench-bundle-${name}-` });
  try {
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        "bundle",
        "--platform=deno",
        "--code-splitting",
        "--outdir",
        outdir,
        `supabase/functions/${name}/index.ts`,
      ],
      cwd: repo,
      stdout: "null",
      stderr: "piped",
    }).output();
    if (out.code !== 0) {
      const why = new TextDecoder().decode(out.stderr).trim().split("\n").slice(-3).join(" / ");
      console.warn(`Cannot bundle ${name}: ${why}`);
      return null;
    }
    const sizes = new Map<string, number>();
    for (const entry of Deno.readDirSync(outdir)) {
      if (entry.isFile) sizes.set(entry.name, Deno.statSync(join(outdir, entry.name)).size);
    }
    const loaded = new Set<string>();
    const visit = (file: string) => {
      if (loaded.has(file) || !sizes.has(file)) return;
      loaded.add(file);
      for (const match of Deno.readTextFileSync(join(outdir, file)).matchAll(STATIC_CHUNK_IMPORT)) {
        visit(match[1] ?? match[2]!);
      }
    };
    visit("index.js");
    const sum = (files: Iterable<string>) => [...files].reduce((n, f) => n + sizes.get(f)!, 0);
    return { total: sum(sizes.keys()), atStart: sum(loaded) };
  } finally {
    await Deno.remove(outdir, { recursive: true });
  }
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

const only = Deno.env.get("BENCH_FUNCTIONS")?.split(",").map((s) => s.trim());
const names = FUNCTION_NAMES.filter((name) => !only || only.includes(name));
const takesNoBody = (name: (typeof names)[number]) => !("input" in FUNCTIONS[name]);
const targetOf = (name: string) => `supabase/functions/${name}/handler.ts`;
const targets = ["bare", ...names.map(targetOf)];
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
const ratioOf = (name: string) => results.get(targetOf(name))!.ms / bare;

// Bundled after the timed runs, so bundling does not load the machine while they run.
const bundles = new Map<string, BundleSize | null>();
if (Deno.env.get("BENCH_BUNDLE") !== "0") {
  for (const name of names) bundles.set(name, await bundleSize(name));
}
const kb = (bytes: number | undefined) =>
  bytes === undefined ? "n/a" : `${(bytes / 1024).toFixed(0)} KB`;

console.log(
  `cold start: fresh process, import, Deno.serve, one POST with the anon key (median of ${RUNS});\n` +
    `bundle: deno bundle of index.ts, all of it / what a cold start loads ("-": takes no body)`,
);
console.log(`  ${"bare Deno.serve module".padEnd(36)}${bare.toFixed(0).padStart(5)} ms   1.00x`);
for (const name of names) {
  const { ms, status } = results.get(targetOf(name))!;
  const bundle = bundles.get(name);
  console.log(
    `  ${`${takesNoBody(name) ? "-" : " "} ${name}`.padEnd(36)}${ms.toFixed(0).padStart(5)} ms  ${
      ratioOf(name).toFixed(2).padStart(5)
    }x  answered ${status}  bundle ${kb(bundle?.total).padStart(8)} / ${
      kb(bundle?.atStart).padStart(7)
    }`,
  );
}

console.log("");
const slowest = (list: readonly string[]) =>
  list.reduce((a, b) => (ratioOf(b) > ratioOf(a) ? b : a));
const noBody = names.filter(takesNoBody);
const checks = new RatioTargets();
if (noBody.length > 0) {
  const worst = slowest(noBody);
  checks.atMost(`no body, each (slowest: ${worst})`, ratioOf(worst), NO_BODY_RATIO);
}
checks.atMost(`median of all ${names.length}`, median(names.map(ratioOf)), MEDIAN_RATIO);
const worst = slowest(names);
checks.atMost(`every function (slowest: ${worst})`, ratioOf(worst), EVERY_RATIO);
checks.summarize();
