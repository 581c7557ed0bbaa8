import assert from "node:assert/strict";
import { loadFunctions } from "../../local/functions.ts";
import { FUNCTION_SCHEMAS, FUNCTIONS } from "../../shared/functions.ts";

Deno.test("every deployed function validates its body with the schema the frontend contract names", async () => {
  const functions = await loadFunctions();
  for (const [name, fn] of functions) {
    assert.equal(fn.definition.access, FUNCTIONS[fn.definition.name].access, name);
    const documented = (FUNCTION_SCHEMAS as Record<string, { input?: unknown }>)[name];
    if (documented?.input) assert.equal(fn.definition.input, documented.input, name);
  }
});
