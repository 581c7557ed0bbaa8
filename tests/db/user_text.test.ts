import assert from "node:assert/strict";
import fc from "fast-check";
import { UserText } from "../../shared/schemas.ts";
import { cleanUserText, userTextProblem } from "../../shared/user_text.ts";
import { createTestDatabase, sqlTest } from "../support/db.ts";

const db = await createTestDatabase();

/** What public.clean_user_text() answers for `text`: the cleaned text, or its SQLSTATE and message. */
async function sqlVerdict(text: string, max: number, required: boolean) {
  try {
    const { rows } = await db.pool.query<{ cleaned: string | null }>(
      "select public.clean_user_text($1, 'the text', $2, $3) as cleaned",
      [text, max, required],
    );
    return { cleaned: rows[0]!.cleaned };
  } catch (error) {
    const { code, message } = error as { code: string; message: string };
    return { code, message };
  }
}

/** What shared/user_text.ts says of `text`, in the same shape. */
function tsVerdict(text: string, max: number, required: boolean) {
  const problem = userTextProblem(text, { max, required });
  if (problem === null) {
    const cleaned = cleanUserText(text);
    return { cleaned: cleaned === "" ? null : cleaned };
  }
  return { code: "22023", problem };
}

/** Characters that exercise every rule: line breaks, spaces, tabs, controls, wide and combined ones. */
const CHARACTER = fc.constantFrom(
  "a",
  "Z",
  " ",
  "\t",
  "\n",
  "\r",
  "\r\n",
  "\u0007",
  "\u001b",
  "\u007f",
  "\u0085",
  "\u009f",
  "\u00a0",
  "é",
  "e\u0301",
  "😀",
  "\u2028",
  "<",
  "&",
);

sqlTest(
  "clean_user_text() and shared/user_text.ts give the same verdict on any text",
  async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(CHARACTER, { maxLength: 30 }).map((parts) => parts.join("")),
        fc.integer({ min: 1, max: 12 }),
        fc.boolean(),
        async (text, max, required) => {
          const inSql = await sqlVerdict(text, max, required);
          const inTs = tsVerdict(text, max, required);
          if ("cleaned" in inTs) {
            assert.deepEqual(inSql, inTs, JSON.stringify({ text, max, required }));
          } else {
            assert.equal(inSql.code, "22023", JSON.stringify({ text, max, required, inSql }));
            const expected = {
              empty: /it is empty/,
              control_character: /control character/,
              too_long: /characters long/,
            };
            assert.match(
              inSql.message ?? "",
              expected[inTs.problem],
              JSON.stringify({ text, inSql }),
            );
          }
          // The zod schema agrees with both.
          const parsed = UserText(max, required).safeParse(text);
          assert.equal(parsed.success, "cleaned" in inTs, JSON.stringify({ text, max, required }));
          if (parsed.success && "cleaned" in inTs) assert.equal(parsed.data ?? null, inTs.cleaned);
        },
      ),
      { numRuns: 400, seed: 20261128 },
    );
  },
);

sqlTest("clean_user_text(): the limit counts characters, not bytes or UTF-16 units", async () => {
  for (const text of ["😀".repeat(4), "é".repeat(4)]) {
    assert.deepEqual(await sqlVerdict(text, 4, true), { cleaned: text });
    assert.deepEqual(tsVerdict(text, 4, true), { cleaned: text });
    assert.equal((await sqlVerdict(`${text}x`, 4, true)).code, "22023");
    assert.equal(tsVerdict(`${text}x`, 4, true).code, "22023");
  }
  assert.deepEqual(await sqlVerdict(" \r\n a\r\nb\rc \t", 10, true), { cleaned: "a\nb\nc" });
  assert.deepEqual(await sqlVerdict(" \n ", 10, false), { cleaned: null });
});
