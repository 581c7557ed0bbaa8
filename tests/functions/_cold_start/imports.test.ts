/**
 * What a function loads at cold start: the modules its `handler.ts` reaches
 * by static value imports, as `deno info` resolves them (`import type` is
 * not followed, nor `import()`, which loads on first use). Each function
 * loads its own path; the configuration needs no library; the heavy
 * libraries load when first used (docs/benchmarks.md, `cold_start`).
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { FUNCTION_NAMES, FUNCTIONS } from "../../../shared/functions.ts";

const repo = fileURLToPath(new URL("../../../", import.meta.url));

/** The part of `deno info --json` read here. */
interface ModuleGraph {
  roots: string[];
  modules: Array<{
    specifier: string;
    dependencies?: Array<{ code?: { specifier: string }; isDynamic?: boolean }>;
  }>;
}

/** Modules of one graph: repo-relative files, and npm package names and Node built-ins (`node:crypto`). */
interface Modules {
  files: Set<string>;
  packages: Set<string>;
}

/** The modules `path` (repo-relative) loads: at start (static value imports) or at all (`import()` too). */
async function modulesOf(path: string): Promise<{ atStart: Modules; all: Modules }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", path],
    cwd: repo,
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) throw new Error(`deno info ${path}: ${new TextDecoder().decode(out.stderr)}`);
  const graph: ModuleGraph = JSON.parse(new TextDecoder().decode(out.stdout));
  const bySpecifier = new Map(graph.modules.map((m) => [m.specifier, m]));
  const walk = (followDynamic: boolean): Modules => {
    const found: Modules = { files: new Set(), packages: new Set() };
    const seen = new Set<string>();
    const visit = (specifier: string) => {
      if (seen.has(specifier)) return;
      seen.add(specifier);
      const npm = /^npm:\/?((?:@[^/]+\/)?[^@/]+)/.exec(specifier);
      if (npm || specifier.startsWith("node:")) {
        // A library (what it loads inside is its own) or a Node built-in.
        found.packages.add(npm?.[1] ?? specifier);
        return;
      }
      if (specifier.startsWith("file://")) {
        found.files.add(fileURLToPath(specifier).slice(repo.length));
      }
      for (const dependency of bySpecifier.get(specifier)?.dependencies ?? []) {
        if (dependency.code && (followDynamic || !dependency.isDynamic)) {
          visit(dependency.code.specifier);
        }
      }
    };
    visit(graph.roots[0]!);
    return found;
  };
  return { atStart: walk(false), all: walk(true) };
}

const handler = (name: string) => `supabase/functions/${name}/handler.ts`;

Deno.test("the configuration is read without any library (no zod at cold start)", async () => {
  const { atStart } = await modulesOf("supabase/functions/_shared/platform/env.ts");
  assert.deepEqual([...atStart.packages], []);
});

Deno.test("no function loads zod at cold start: a request schema loads once a call passes the access rule", async () => {
  const withBody = FUNCTION_NAMES.filter((name) => "input" in FUNCTIONS[name]);
  assert.ok(withBody.includes("cancel-deal"), "the catalog reads as expected");
  for (const name of FUNCTION_NAMES) {
    const { atStart, all } = await modulesOf(handler(name));
    assert.ok(!atStart.packages.has("zod"), `${name} loads zod at cold start`);
    if (withBody.includes(name)) assert.ok(all.packages.has("zod"), `${name} validates with zod`);
  }
});

Deno.test("generate-apa-pdf loads pdf-lib with the first agreement it renders", async () => {
  const { atStart, all } = await modulesOf(handler("generate-apa-pdf"));
  assert.ok(all.packages.has("pdf-lib"), "it renders with pdf-lib");
  assert.ok(!atStart.packages.has("pdf-lib"), "pdf-lib is loaded at cold start");
});

Deno.test("analyze-project loads the page extractor and the prompt with its first analysis", async () => {
  const { atStart, all } = await modulesOf(handler("analyze-project"));
  for (const file of ["extract.ts", "prompt.ts", "ask.ts"]) {
    const path = `supabase/functions/_shared/analysis/${file}`;
    assert.ok(all.files.has(path), `analyze-project uses ${path}`);
    assert.ok(!atStart.files.has(path), `${path} is loaded at cold start`);
  }
});

Deno.test("deal-deadlines loads its job's steps with its first run", async () => {
  const { atStart, all } = await modulesOf(handler("deal-deadlines"));
  for (const file of ["deadlines_job.ts", "releases.ts", "cases.ts", "repayouts.ts"]) {
    const path = `supabase/functions/_shared/deals/${file}`;
    assert.ok(all.files.has(path), `deal-deadlines uses ${path}`);
    assert.ok(!atStart.files.has(path), `${path} is loaded at cold start`);
  }
});

Deno.test("no function loads a service SDK, pdf-lib, jose or a webhook verifier at cold start", async () => {
  // The webhook verifiers load Deno's Node compatibility layer (node:crypto,
  // the CommonJS standardwebhooks): tens of milliseconds each.
  const lazy = [
    ...["pg", "stripe", "resend", "@anthropic-ai/sdk", "@supabase/supabase-js", "pdf-lib"],
    ...["standardwebhooks", "node:crypto"],
    // HS256 tokens (the keys and nearly every user token) verify with
    // WebCrypto; jose loads with the first ES256/RS256 token.
    "jose",
  ];
  for (const name of FUNCTION_NAMES) {
    const { atStart } = await modulesOf(handler(name));
    const loaded = lazy.filter((pkg) => atStart.packages.has(pkg));
    assert.deepEqual(loaded, [], `${name} loads at cold start`);
  }
});
