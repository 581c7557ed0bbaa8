import assert from "node:assert/strict";
import { PageSizes, PDFDocument, type PDFFont, StandardFonts } from "pdf-lib";
import {
  Cursor,
  isWinAnsi,
  pdfSafeText,
  textWidth,
  wrapText,
} from "../../../../supabase/functions/_shared/documents/pdf_layout.ts";
import { pdfRuns, pdfText } from "../../../support/pdf_text.ts";

async function fonts(): Promise<{ doc: PDFDocument; regular: PDFFont; bold: PDFFont }> {
  const doc = await PDFDocument.create({ updateMetadata: false });
  return {
    doc,
    regular: await doc.embedFont(StandardFonts.Helvetica),
    bold: await doc.embedFont(StandardFonts.HelveticaBold),
  };
}

function encodes(font: PDFFont, text: string): boolean {
  try {
    font.encodeText(text);
    return true;
  } catch {
    return false;
  }
}

/** A fixed pseudo-random sequence (the same every run). */
function lcg(seed: number): () => number {
  let state = seed;
  return () => (state = (state * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
}

const NASTY = [
  "",
  "   ",
  "plain",
  "Shop) Tj ET BT /F1 99 Tf (pwned",
  "\\) (x",
  "tab\there\r\nnew\rline\n\n\n\nfar\u2028sep",
  "nul\u0000bell\u0007del\u007f c1\u0085\u009b",
  "zero\u200Bwidth\u200D joiner \uFEFFbom \u00ADsoft",
  "rtl \u202Eevil\u202C text \u2066iso\u2069",
  "emoji 🎉 family 👨‍👩‍👧 flag 🇫🇷 thumbs 👍🏽 heart ❤️",
  "cjk 漢字 かな 한국어 arabic مرحبا hebrew שלום",
  "e\u0301 precomposes, q\u0301 does not",
  "lone \uD800 surrogate \uDC00",
  "spaces\u00A0nbsp\u2003em\u202Fnarrow\u3000ideographic",
  "€ ‚ƒ„…†‡ˆ‰Š‹ŒŽ‘’“”•–—˜™š›œžŸ ¡¢£¤¥ ÿ",
  "a".repeat(3000),
];

Deno.test("isWinAnsi() agrees with what Helvetica and Helvetica-Bold can encode", async () => {
  const { regular, bold } = await fonts();
  const astral = [0x1f389, 0x20000, 0x10ffff];
  for (let cp = 0; cp <= 0xffff; cp++) {
    if (cp >= 0xd800 && cp <= 0xdfff) continue;
    const char = String.fromCodePoint(cp);
    assert.equal(isWinAnsi(cp), encodes(regular, char), `U+${cp.toString(16)}`);
    assert.equal(isWinAnsi(cp), encodes(bold, char), `U+${cp.toString(16)} bold`);
  }
  for (const cp of astral) assert.equal(isWinAnsi(cp), false);
});

Deno.test("pdfSafeText() drops controls and format characters and turns spaces into one space", () => {
  assert.equal(pdfSafeText("nul\u0000bell\u0007del\u007f end"), "nulbelldel end");
  assert.equal(pdfSafeText("zero\u200Bwidth\u200D \uFEFFbom \u00ADsoft"), "zerowidth bom soft");
  assert.equal(pdfSafeText("rtl \u202Eevil\u202C"), "rtl evil");
  assert.equal(pdfSafeText("  a\t\tb\u00A0c\u2003d\u3000e  "), "a b c d e");
});

Deno.test("pdfSafeText() makes each character the fonts cannot draw one ?", () => {
  assert.equal(pdfSafeText("party 🎉 family 👨‍👩‍👧 flag 🇫🇷 👍🏽"), "party ? family ? flag ? ?");
  assert.equal(pdfSafeText("漢字 ok"), "?? ok");
  assert.equal(pdfSafeText("e\u0301 q\u0301"), "é q");
  assert.equal(pdfSafeText("a\uD800b"), "a?b");
  assert.equal(pdfSafeText("Zoë pays €5 – “fine”"), "Zoë pays €5 – “fine”");
});

Deno.test("pdfSafeText() keeps line breaks only when multiline, at most one blank line", () => {
  const text = "one\r\ntwo\rthree\n\n\n\nfour\u2028five";
  assert.equal(pdfSafeText(text), "one two three four five");
  assert.equal(pdfSafeText(text, { multiline: true }), "one\ntwo\nthree\n\nfour\nfive");
  assert.equal(pdfSafeText("\n\n  padded  \n\n", { multiline: true }), "padded");
});

Deno.test("pdfSafeText() cuts text longer than maxLength with an ellipsis", () => {
  assert.equal(pdfSafeText("abcdef", { maxLength: 6 }), "abcdef");
  assert.equal(pdfSafeText("abcdefg", { maxLength: 6 }), "abcde…");
  assert.equal(pdfSafeText("abcd efgh", { maxLength: 6 }), "abcd…");
  const huge = pdfSafeText("word ".repeat(1_000_000), { maxLength: 500 });
  assert.equal(huge.length, 500);
  assert.ok(huge.endsWith("…"));
  const invisible = pdfSafeText("\u200B".repeat(10_000) + "tail", { maxLength: 100 });
  assert.equal(invisible, "…", "text beyond what was read still counts as cut");
  assert.equal(pdfSafeText("🎉".repeat(10), { maxLength: 5 }), "????…");
});

Deno.test("pdfSafeText() is idempotent and its output is always encodable", async () => {
  const { regular } = await fonts();
  for (const text of NASTY) {
    for (
      const options of [{}, { multiline: true }, { maxLength: 40 }, {
        maxLength: 40,
        multiline: true,
      }]
    ) {
      const once = pdfSafeText(text, options);
      assert.equal(pdfSafeText(once, options), once, JSON.stringify(text));
      assert.ok(encodes(regular, once.replaceAll("\n", "")), JSON.stringify(once));
      if (options.maxLength) assert.ok(once.length <= options.maxLength);
    }
  }
});

Deno.test("wrapText() never makes a line wider than maxWidth, kerned or not", async () => {
  const { regular, bold } = await fonts();
  const random = lcg(7);
  const alphabet = "AVWTYLjfi.,;mwM€…— ";
  for (let round = 0; round < 300; round++) {
    const font = round % 2 === 0 ? regular : bold;
    const size = 6 + Math.floor(random() * 14);
    const maxWidth = 20 + random() * 480;
    const length = Math.floor(random() * 400);
    const text = Array.from({ length }, () => alphabet[Math.floor(random() * alphabet.length)])
      .join("");
    for (const line of wrapText(text, font, size, maxWidth)) {
      assert.ok(textWidth(line, font, size) <= maxWidth, `${line} at ${size} in ${maxWidth}`);
      assert.ok(font.widthOfTextAtSize(line, size) <= maxWidth, `${line} kerned`);
      assert.equal(line, line.trim());
    }
  }
});

Deno.test("wrapText() wraps at spaces and keeps every word and blank line", async () => {
  const { regular } = await fonts();
  const text = "The quick brown fox jumps over the lazy dog ".repeat(20).trim();
  const lines = wrapText(text, regular, 10, 200);
  assert.ok(lines.length > 5);
  assert.equal(lines.join(" "), text);
  assert.deepEqual(wrapText("one\n\ntwo", regular, 10, 200), ["one", "", "two"]);
  assert.deepEqual(wrapText("", regular, 10, 200), [""]);
});

Deno.test("wrapText() breaks a word longer than the line where it reaches the edge", async () => {
  const { regular } = await fonts();
  const url = "https://example.com/" + "very-long-path-".repeat(30);
  const lines = wrapText(`see ${url} now`, regular, 10, 150);
  assert.equal(lines[0], "see");
  assert.equal(lines.at(-1)?.endsWith(" now") || lines.at(-1) === "now", true);
  assert.ok(lines.join("").replaceAll(" ", "").includes(url));
  for (const line of lines) assert.ok(textWidth(line, regular, 10) <= 150);
  assert.deepEqual(
    wrapText("WWW", regular, 10, 1),
    ["W", "W", "W"],
    "one character per line at worst",
  );
});

Deno.test("wrapText() sanitizes what it wraps", async () => {
  const { regular } = await fonts();
  assert.deepEqual(wrapText("a\u0000b 🎉\tc", regular, 10, 500), ["ab ? c"]);
});

Deno.test("Cursor starts a new page at the bottom margin and keeps text inside the margins", async () => {
  const { doc, regular } = await fonts();
  const geometry = {
    size: PageSizes.A5 as [number, number],
    margin: { top: 40, bottom: 50, left: 30, right: 30 },
  };
  const cursor = new Cursor(doc, geometry);
  const style = { font: regular, size: 10, leading: 14 };
  for (let i = 1; i <= 80; i++) cursor.write(`Line ${i} ${"word ".repeat(i % 30)}`, style);
  cursor.columns([
    { text: "left ".repeat(40), style: { ...style, width: 100 } },
    { text: "right", style: { ...style, indent: 150 } },
  ]);
  const bytes = await doc.save();
  const pages = await pdfRuns(bytes);
  assert.equal(pages.length, cursor.pages.length);
  assert.ok(pages.length > 3);
  for (const page of pages) {
    for (const run of page.runs.filter((r) => r.str !== "")) {
      assert.ok(run.x >= geometry.margin.left - 0.01, run.str);
      assert.ok(run.x + run.width <= page.width - geometry.margin.right + 0.01, run.str);
      assert.ok(run.y >= geometry.margin.bottom, `${run.str} at ${run.y}`);
      assert.ok(run.y <= page.height - geometry.margin.top, run.str);
    }
  }
  const { text } = await pdfText(bytes);
  for (let i = 1; i <= 80; i++) assert.match(text, new RegExp(`^Line ${i}\\b`, "m"));
});
