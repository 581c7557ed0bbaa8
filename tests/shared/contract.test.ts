import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { staleFiles } from "../../local/generators/catalog.ts";
import { loadFunctions } from "../../local/functions.ts";
import { FUNCTION_NAMES as NAMES_AT_COLD_START } from "../../shared/function_names.ts";
import { FUNCTION_NAMES, type FunctionName, FUNCTIONS } from "../../shared/functions.ts";
import * as Contract from "../../shared/mod.ts";

const functionsDir = fileURLToPath(new URL("../../supabase/functions/", import.meta.url));

Deno.test("the catalog is every function's own declaration: access, group, summary, input and output", async () => {
  const functions = await loadFunctions();
  assert.deepEqual([...functions.keys()].sort(), [...FUNCTION_NAMES].sort());
  assert.deepEqual([...NAMES_AT_COLD_START].sort(), [...FUNCTION_NAMES].sort());
  for (const [name, fn] of functions) {
    const entry = FUNCTIONS[name as FunctionName];
    const declared = fn.definition;
    assert.equal(declared.name, name);
    assert.equal(declared.access, entry.access, name);
    assert.equal(declared.group, entry.group, name);
    assert.equal(declared.summary, entry.summary, name);
    assert.equal(declared.scheduler, "scheduler" in entry ? entry.scheduler : undefined, name);
    const input = typeof declared.input === "function" ? await declared.input() : declared.input;
    assert.equal(input, "input" in entry ? entry.input : undefined, name);
    assert.ok(declared.output, `${name} names its output schema`);
    assert.equal(Contract[declared.output], entry.output, name);
  }
});

Deno.test("shared/catalog.ts, shared/function_names.ts and config.toml's function blocks are fresh", async () => {
  assert.deepEqual(await staleFiles(), [], "run `deno task catalog`");
});

Deno.test("every catalog entry has its function folder, with a handler and an entry point", () => {
  for (const name of FUNCTION_NAMES) {
    assert.ok(existsSync(`${functionsDir}${name}/handler.ts`), `${name}/handler.ts`);
    assert.ok(existsSync(`${functionsDir}${name}/index.ts`), `${name}/index.ts`);
  }
});
Deno.test("deal functions take a dealId", () => {
  for (const name of FUNCTION_NAMES) {
    const entry = FUNCTIONS[name];
    if (entry.access !== "deal-participant") continue;
    assert.ok("input" in entry, `${name} needs an input`);
    // The access rule reads `dealId` from the input: every such input has one, a UUID.
    const dealId = entry.input.shape.dealId;
    assert.ok(dealId.safeParse(crypto.randomUUID()).success, name);
    assert.ok(!dealId.safeParse("not-a-uuid").success, name);
  }
});
