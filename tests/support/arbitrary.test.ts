import assert from "node:assert/strict";
import fc from "fast-check";
import type { z } from "zod";
import { FUNCTION_NAMES, FUNCTIONS } from "../../shared/functions.ts";
import { unstorableParts } from "../../supabase/functions/_shared/platform/body.ts";
import { AuthHookPayload } from "../../supabase/functions/_shared/email/auth_hook_payload.ts";
import {
  insertRefused,
  malformedBodies,
  REFUSED_CHARACTERS,
  refusedTextBodies,
  shapedBodies,
} from "./arbitrary.ts";

/** Every body schema the fuzz test shapes values by. */
const SCHEMAS: Array<[string, z.ZodType]> = [
  ...FUNCTION_NAMES.flatMap((name) => {
    const input = (FUNCTIONS[name] as { input?: z.ZodType }).input;
    return input ? [[name, input] as [string, z.ZodType]] : [];
  }),
  ["auth-email-webhook", AuthHookPayload],
];

// Refinements across fields (exactly one of userId and email, either userIds or
// a window) make some drawings miss; the fuzz test skips those with `fc.pre`,
// and fast-check allows 100 skips per run, so 1 in 20 is plenty.
Deno.test("shapedBodies: at least 1 in 20 unmutated values of every catalog input is accepted by it", () => {
  for (const [name, schema] of SCHEMAS) {
    const bodies = fc.sample(shapedBodies(schema), { numRuns: 200, seed: 7 })
      .filter((body) => body.label === "shaped");
    const usable = bodies.filter((body) => body.usable);
    assert.ok(
      usable.length >= bodies.length / 20,
      `${name}: only ${usable.length} of ${bodies.length} drawn values match its schema`,
    );
    for (const body of usable) {
      const parsed = schema.safeParse(JSON.parse(body.content as string));
      assert.ok(parsed.success, `${name}: ${body.content}`);
    }
  }
});

Deno.test("refusedTextBodies: accepted by the schema, refused for storage when they hold free text", () => {
  for (const [name, schema] of SCHEMAS) {
    const bodies = fc.sample(refusedTextBodies(schema), { numRuns: 100, seed: 11 })
      .filter((body) => body.usable);
    assert.ok(bodies.length >= 5, `${name}: ${bodies.length} usable of 100`);
    for (const body of bodies) {
      assert.ok(schema.safeParse(JSON.parse(body.content as string)).success, name);
    }
  }
  // send-auth-email's one-time code is free text: every usable body carries a refused character.
  const auth = fc.sample(refusedTextBodies(FUNCTIONS["send-auth-email"].input), {
    numRuns: 100,
    seed: 3,
  }).filter((body) => body.usable);
  for (const body of auth) {
    assert.ok(unstorableParts(JSON.parse(body.content as string)).length > 0, String(body.content));
  }
});

Deno.test("insertRefused: a refused character always leaves the text ill-formed or with a NUL", () => {
  fc.assert(
    fc.property(
      fc.string({ unit: "grapheme" }),
      fc.nat(),
      fc.constantFrom(...REFUSED_CHARACTERS),
      (text, at, char) => {
        assert.ok(unstorableParts(insertRefused(text, at, char)).length === 1);
      },
    ),
    { seed: 5 },
  );
});

Deno.test("malformedBodies: none is a JSON object every function would take as is", () => {
  const bodies = fc.sample(malformedBodies, { numRuns: 300, seed: 13 });
  assert.ok(new Set(bodies.map((body) => body.label)).size >= 5);
  for (const body of bodies) {
    if (typeof body.content !== "string") continue;
    let value: unknown;
    try {
      value = JSON.parse(body.content);
    } catch {
      continue;
    }
    const object = typeof value === "object" && value !== null && !Array.isArray(value);
    const odd = !object || body.content.length > 100_000 ||
      unstorableParts(value).length > 0 || /__proto__|constructor/.test(body.content);
    assert.ok(odd, `${body.label}: ${body.content.slice(0, 200)}`);
  }
});
