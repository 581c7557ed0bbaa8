import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { loadFunctions } from "../../local/functions.ts";
import { FUNCTION_NAMES, FUNCTIONS } from "../../shared/functions.ts";

const functionsDir = fileURLToPath(new URL("../../supabase/functions/", import.meta.url));

Deno.test("every deployed function is declared from its catalog entry: access, input and output", async () => {
  const functions = await loadFunctions();
  assert.deepEqual([...functions.keys()].sort(), [...FUNCTION_NAMES].sort());
  for (const [name, fn] of functions) {
    const entry = FUNCTIONS[fn.definition.name];
    assert.equal(fn.definition.name, name);
    assert.equal(fn.definition.access, entry.access, name);
    assert.equal(fn.definition.group, entry.group, name);
    assert.equal(fn.definition.input, "input" in entry ? entry.input : undefined, name);
    assert.equal(fn.definition.output, entry.output, name);
  }
});

Deno.test("every catalog entry has its function folder, with a handler and an entry point", () => {
  // The interface's 46 and cancel-deal (tests/shared/functions.test.ts says why).
  assert.equal(FUNCTION_NAMES.length, 47);
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
