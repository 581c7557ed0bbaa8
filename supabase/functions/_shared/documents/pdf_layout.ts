/**
 * Text on PDF pages drawn with pdf-lib's standard fonts: the one sanitizer
 * every drawn string passes through, line wrapping, and a cursor that flows
 * lines down the page and starts a new page at the bottom margin.
 *
 * The standard fonts (Helvetica) encode WinAnsi only; pdf-lib throws on
 * anything else, so text is made encodable before it is measured or drawn.
 * pdf-lib writes text as hex strings, so user text cannot become operators.
 *
 * @module
 */
import type { PDFDocument, PDFFont, PDFPage } from "pdf-lib";

/** The characters WinAnsi (Windows-1252) encodes above ASCII's printable range. */
const WIN_ANSI_EXTRA = new Set(
  "€‚ƒ„…†‡ˆ‰Š‹ŒŽ‘’“”•–—˜™š›œžŸ".split("").map((c) => c.codePointAt(0)),
);

/** True when the standard fonts can encode `codePoint` (printable ASCII, Latin-1, the Windows-1252 extras). */
export function isWinAnsi(codePoint: number): boolean {
  return (codePoint >= 0x20 && codePoint <= 0x7e) || (codePoint >= 0xa0 && codePoint <= 0xff) ||
    WIN_ANSI_EXTRA.has(codePoint);
}

/** Options of `pdfSafeText`. */
export interface SafeTextOptions {
  /** Longest result in characters; longer text is cut and ends with "…". */
  maxLength?: number;
  /** Keep line breaks (as "\n", at most one blank line in a row); otherwise they become spaces. */
  multiline?: boolean;
}

/**
 * Built on first use, not at cold start: creating a segmenter loads ICU's
 * break rules, about 30 ms (docs/benchmarks.md, `cold_start`).
 */
let graphemes: Intl.Segmenter | undefined;
const LINE_BREAK = /^(?:\r\n|[\n\r\v\f\u0085\u2028\u2029])$/;
const SPACE = /^[\t\p{Zs}]$/u;
const INVISIBLE = /[\p{Cc}\p{Cf}]/gu;
const MARK = /\p{M}/u;
/** How much of the input (UTF-16 units per allowed character) is read when a length cap is set. */
const READ_PER_CHAR = 4;

/**
 * `text` as the standard fonts can draw it: control and format characters
 * (NUL, zero-width, bidi overrides) dropped, tabs and other spaces as " ",
 * runs of spaces collapsed, each character the fonts cannot encode (emoji,
 * CJK) as one "?" per user-perceived character, line breaks kept or made
 * spaces, and cut to `maxLength` with "…". Idempotent.
 */
export function pdfSafeText(text: string, options: SafeTextOptions = {}): string {
  const { maxLength, multiline = false } = options;
  const limit = maxLength === undefined ? text.length : maxLength * READ_PER_CHAR;
  const input = text.slice(0, limit).replace(/[\uD800-\uDBFF]$/, "");
  let out = "";
  graphemes ??= new Intl.Segmenter("en", { granularity: "grapheme" });
  for (const { segment } of graphemes.segment(input)) {
    if (LINE_BREAK.test(segment)) out += multiline ? "\n" : " ";
    else if (SPACE.test(segment)) out += " ";
    else out += encodable(segment);
  }
  out = out.split("\n").map((line) => line.replace(/ {2,}/g, " ").trim()).join("\n")
    .replace(/\n{3,}/g, "\n\n").trim();
  if (maxLength !== undefined && (out.length > maxLength || text.length > limit)) {
    out = `${out.slice(0, Math.max(0, maxLength - 1)).trimEnd()}…`;
  }
  return out;
}

/** One grapheme as the fonts can draw it: itself, "" (invisible), or "?". */
function encodable(grapheme: string): string {
  const visible = grapheme.replace(INVISIBLE, "").normalize("NFC");
  const chars = [...visible].filter((c) => !(MARK.test(c) && !isWinAnsi(c.codePointAt(0)!)));
  if (chars.length === 0) return visible === "" ? "" : "?";
  return chars.every((c) => isWinAnsi(c.codePointAt(0)!)) ? chars.join("") : "?";
}

/**
 * The width of `text` as pdf-lib draws it: the sum of its glyphs' widths
 * (pdf-lib draws without kerning, so the kerned `widthOfTextAtSize` of a
 * whole string can be narrower than what lands on the page).
 */
export function textWidth(text: string, font: PDFFont, size: number): number {
  let width = 0;
  for (const char of text) width += font.widthOfTextAtSize(char, size);
  return width;
}

/**
 * `text`, made safe with `pdfSafeText` (line breaks kept), as lines no wider
 * than `maxWidth`: wrapped at spaces, a word longer than a line broken where
 * it reaches the edge; an empty line stands for a blank line.
 */
export function wrapText(text: string, font: PDFFont, size: number, maxWidth: number): string[] {
  const space = textWidth(" ", font, size);
  const lines: string[] = [];
  for (const paragraph of pdfSafeText(text, { multiline: true }).split("\n")) {
    let line = "";
    let width = 0;
    for (const word of paragraph.split(" ").filter((w) => w !== "")) {
      const wordWidth = textWidth(word, font, size);
      if (line !== "" && width + space + wordWidth <= maxWidth) {
        line += ` ${word}`;
        width += space + wordWidth;
        continue;
      }
      if (line !== "") lines.push(line);
      [line, width] = wordWidth <= maxWidth
        ? [word, wordWidth]
        : breakWord(word, font, size, maxWidth, lines);
    }
    lines.push(line);
  }
  return lines;
}

/** Pushes full-width pieces of `word` onto `lines`; answers the last piece and its width. */
function breakWord(
  word: string,
  font: PDFFont,
  size: number,
  maxWidth: number,
  lines: string[],
): [string, number] {
  let piece = "";
  let width = 0;
  for (const char of word) {
    const charWidth = textWidth(char, font, size);
    if (piece !== "" && width + charWidth > maxWidth) {
      lines.push(piece);
      [piece, width] = ["", 0];
    }
    piece += char;
    width += charWidth;
  }
  return [piece, width];
}

/** A page's size and margins, in points. */
export interface PageGeometry {
  size: [number, number];
  margin: { top: number; bottom: number; left: number; right: number };
}

/** How a block of text is drawn by `Cursor.write`. */
export interface TextStyle {
  font: PDFFont;
  size: number;
  /** Distance between baselines. */
  leading: number;
  /** From the left margin. */
  indent?: number;
  /** Width available from `indent`; the rest of the line by default. */
  width?: number;
}

/** One column of a row of text (`Cursor.columns`). */
export interface Column {
  text: string;
  style: TextStyle;
}

/**
 * The writing position in a document: lines go down from the top margin,
 * and a new page starts when the next line would cross the bottom margin.
 */
export class Cursor {
  /** Every page, in order. */
  readonly pages: PDFPage[] = [];
  #page!: PDFPage;
  #font: PDFFont | undefined;
  /** The top of the next line. */
  y = 0;

  constructor(readonly doc: PDFDocument, readonly geometry: PageGeometry) {
    this.newPage();
  }

  /** The page being written. */
  get page(): PDFPage {
    return this.#page;
  }

  /** The width between the margins. */
  get contentWidth(): number {
    const { size, margin } = this.geometry;
    return size[0] - margin.left - margin.right;
  }

  /** Starts a new page, the cursor at its top margin. */
  newPage(): void {
    this.#page = this.doc.addPage(this.geometry.size);
    this.pages.push(this.#page);
    this.#font = undefined;
    this.y = this.#top;
  }

  /** Starts a new page unless `height` more fits above the bottom margin (keeps a block together). */
  room(height: number): void {
    if (this.y !== this.#top && this.y - height < this.geometry.margin.bottom) this.newPage();
  }

  /** Moves down by `height` (vertical space; none at the top of a page). */
  gap(height: number): void {
    if (this.y === this.#top) return;
    this.y -= height;
    if (this.y < this.geometry.margin.bottom) this.newPage();
  }

  /** Draws `text` wrapped to the style's width, line by line, breaking pages as needed. */
  write(text: string, style: TextStyle): void {
    this.columns([{ text, style }]);
  }

  /** The height `columns` would take (the tallest column). */
  measure(columns: Column[]): number {
    return this.#wrap(columns).length * Math.max(...columns.map((c) => c.style.leading));
  }

  /**
   * Draws columns side by side (a label and its value, two signature
   * blocks), each wrapped to its width, row by row, breaking pages as needed.
   */
  columns(columns: Column[]): void {
    const leading = Math.max(...columns.map((c) => c.style.leading));
    for (const row of this.#wrap(columns)) {
      this.room(leading);
      this.y -= leading;
      row.forEach((line, k) => {
        const { style } = columns[k]!;
        if (line === "") return;
        this.#useFont(style.font);
        this.page.drawText(line, {
          x: this.geometry.margin.left + (style.indent ?? 0),
          y: this.y + leading - style.size,
          size: style.size,
        });
      });
    }
  }

  /** A horizontal line `width` long at the cursor, from `indent`. */
  rule(indent: number, width: number): void {
    const x = this.geometry.margin.left + indent;
    this.page.drawLine({
      start: { x, y: this.y },
      end: { x: x + width, y: this.y },
      thickness: 0.5,
    });
  }

  /** Makes `font` the page's current font (a font resource per change, not per line). */
  #useFont(font: PDFFont): void {
    if (this.#font === font) return;
    this.page.setFont(font);
    this.#font = font;
  }

  /** The columns' wrapped lines as rows ("" where a column has ended). */
  #wrap(columns: Column[]): string[][] {
    const lines = columns.map(({ text, style }) =>
      wrapText(text, style.font, style.size, style.width ?? this.contentWidth - (style.indent ?? 0))
    );
    const count = Math.max(...lines.map((l) => l.length));
    return Array.from({ length: count }, (_, i) => lines.map((l) => l[i] ?? ""));
  }

  get #top(): number {
    return this.geometry.size[1] - this.geometry.margin.top;
  }
}
