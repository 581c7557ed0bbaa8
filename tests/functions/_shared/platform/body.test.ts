import assert from "node:assert/strict";
import { z } from "zod";
import {
  MAX_BODY_DEPTH,
  unstorableParts,
} from "../../../../supabase/functions/_shared/platform/body.ts";
import { createFunction } from "../../../../supabase/functions/_shared/platform/function.ts";
import { createTestDatabase, sqlTest } from "../../../support/db.ts";
import { testCredentials } from "../../../support/credentials.ts";
import { invoke, testRuntime } from "../../../support/runtime.ts";

const db = await createTestDatabase();
const keys = await testCredentials();
const runtime = await testRuntime(db);
await db.pool.query("create table public.text_probe (note text, data jsonb)");

/** Stores its input as PostgreSQL text and jsonb, as the real functions do. */
const writer = createFunction({
  name: "send-notification",
  access: "system",
  group: "notifications",
  input: z.object({
    note: z.string(),
    data: z.record(z.string(), z.unknown()).optional(),
  }),
}, {
  async handle({ input, ctx }) {
    await ctx.db.query("insert into public.text_probe (note, data) values ($1, $2::jsonb)", [
      input.note,
      input.data === undefined ? null : JSON.stringify(input.data),
    ]);
    return { written: true };
  },
});

/** A function that takes no body: what it is sent is ignored, as before. */
const noInput = createFunction({
  name: "security-headers",
  access: "public",
  group: "utilities",
}, { handle: () => ({ ok: true }) });

async function probeRows(): Promise<number> {
  const { rows } = await db.pool.query("select count(*)::int as n from public.text_probe");
  return rows[0].n;
}

type Refusal = {
  error: {
    code: string;
    message: string;
    details: Array<{ path: string; code: string; message: string }>;
  };
};

Deno.test("unstorableParts: NUL in a nested string, with its path and the rule", () => {
  assert.deepEqual(unstorableParts({ a: { b: ["ok", "x\u0000y"] } }), [{
    path: "a.b.1",
    code: "nul_character",
    message: "Contains a NUL character (U+0000), which cannot be stored",
  }]);
});

Deno.test("unstorableParts: NUL in a key names the object holding it, not the key", () => {
  const issues = unstorableParts({ data: { "secret\u0000key": "v" } });
  assert.equal(issues.length, 1);
  assert.equal(issues[0]!.path, "data");
  assert.equal(issues[0]!.code, "nul_character");
  assert.match(issues[0]!.message, /^Has a key that contains a NUL character/);
  assert.doesNotMatch(JSON.stringify(issues), /secret/);
});

Deno.test("unstorableParts: a lone high or low surrogate anywhere is refused", () => {
  for (
    const text of ["\uD800", "a\uD83Db", "end\uDBFF", "\uDC00", "x\uDFFFy", "\uDE00\uD83D"]
  ) {
    const issues = unstorableParts({ list: [{ text }] });
    assert.deepEqual(issues.map((issue) => [issue.path, issue.code]), [[
      "list.0.text",
      "lone_surrogate",
    ]], JSON.stringify(text));
  }
  assert.equal(unstorableParts({ ["k\uDC00"]: 1 })[0]?.code, "lone_surrogate");
});

Deno.test("unstorableParts: valid pairs (emoji), other control characters and non-strings pass", () => {
  assert.deepEqual(
    unstorableParts({
      "😀key": "I 😀 \uD83D\uDE00 \u0001\t\n ü €",
      n: 1,
      b: true,
      z: null,
      list: [[], {}, "𝄞"],
    }),
    [],
  );
});

/** `count` arrays nested in one another around `bottom`. */
function arrays(count: number, bottom: unknown = "x"): unknown {
  let value = bottom;
  for (let i = 0; i < count; i++) value = [value];
  return value;
}

/** `{ d: [[…]] }` with `count` nested arrays: `count + 1` levels with the body. */
function nested(count: number, bottom: unknown = "x"): unknown {
  return { d: arrays(count, bottom) };
}

Deno.test(`unstorableParts: ${MAX_BODY_DEPTH} levels of nesting pass, one more is too_deep`, () => {
  assert.deepEqual(unstorableParts(nested(MAX_BODY_DEPTH - 1)), []);
  const issues = unstorableParts(nested(MAX_BODY_DEPTH));
  assert.deepEqual(issues, [{
    path: ["d", ...Array(MAX_BODY_DEPTH - 1).fill("0")].join("."),
    code: "too_deep",
    message: `Nests deeper than ${MAX_BODY_DEPTH} levels, more than a body may`,
  }]);
});

Deno.test("unstorableParts: a body nested 500,000 levels deep is walked without recursion", () => {
  const issues = unstorableParts(nested(500_000, "bottom\u0000"));
  assert.deepEqual(issues.map((issue) => issue.code), ["too_deep"]);
});

Deno.test("unstorableParts: lists at most 20 issues", () => {
  assert.equal(unstorableParts({ list: Array(100).fill("\u0000") }).length, 20);
});

sqlTest(
  "defineFunction() refuses NUL, lone surrogates and deep nesting with 400 invalid_input before the handler, writing nothing; an emoji is stored",
  async () => {
    for (
      const [body, path, code] of [
        [{ note: "a\u0000b" }, "note", "nul_character"],
        [
          { note: "ok", data: { nested: { deeper: ["x", "\u0000"] } } },
          "data.nested.deeper.1",
          "nul_character",
        ],
        [{ note: "ok", data: { ["bad\u0000key"]: 1 } }, "data", "nul_character"],
        [{ note: "high \uD800 alone" }, "note", "lone_surrogate"],
        [{ note: "ok", data: { low: "\uDC00 alone" } }, "data.low", "lone_surrogate"],
        [{ note: "ok", ["\uD801"]: "an unknown key zod would strip" }, "", "lone_surrogate"],
        [
          { note: "ok", data: { x: arrays(100) } },
          `data.x${".0".repeat(MAX_BODY_DEPTH - 2)}`,
          "too_deep",
        ],
      ] as const
    ) {
      const res = await invoke<Refusal>(writer, runtime, { token: keys.serviceKey, body });
      assert.equal(res.status, 400, JSON.stringify(res.body));
      assert.equal(res.body.error.code, "invalid_input");
      assert.deepEqual(res.body.error.details.map((d) => [d.path, d.code]), [[path, code]]);
      const rule = {
        nul_character: "a NUL character",
        lone_surrogate: "a lone UTF-16 surrogate",
        too_deep: "nests deeper than",
      }[code];
      assert.ok(res.body.error.message.includes(rule), res.body.error.message);
      assert.ok(
        res.body.error.message.startsWith(
          `Cannot accept the request body: ${path === "" ? "the body" : `"${path}"`}`,
        ),
        res.body.error.message,
      );
      // The value is not echoed: no part of it, and no refused character.
      assert.doesNotMatch(JSON.stringify(res.body), /alone|bad|strip/);
      assert.deepEqual(unstorableParts(res.body), []);
    }
    // The same escapes arriving as raw JSON text, as a client would send them.
    const raw = await invoke<Refusal>(writer, runtime, {
      token: keys.serviceKey,
      rawBody: '{"note":"x\\u0000"}',
    });
    assert.equal(raw.status, 400);
    assert.equal(raw.body.error.details[0]?.code, "nul_character");
    assert.equal(await probeRows(), 0, "nothing was written");

    // Refusing stops there: a valid surrogate pair (an emoji) is stored as sent,
    // 64 levels of nesting pass, and a function that takes no body still
    // ignores what it is sent.
    const emoji = await invoke(writer, runtime, {
      token: keys.serviceKey,
      body: { note: "ship it 🚀", data: { "🔑": "𝄞", deep: arrays(MAX_BODY_DEPTH - 3) } },
    });
    assert.equal(emoji.status, 200, JSON.stringify(emoji.body));
    const { rows } = await db.pool.query("select note, data->'🔑' as key from public.text_probe");
    assert.deepEqual(rows, [{ note: "ship it 🚀", key: "𝄞" }]);
    const ignored = await invoke(noInput, runtime, {
      token: keys.anonKey,
      body: { anything: "x\u0000", ["\uD800"]: 1 },
    });
    assert.equal(ignored.status, 200, JSON.stringify(ignored.body));
  },
);
