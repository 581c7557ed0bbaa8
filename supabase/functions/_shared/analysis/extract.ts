/**
 * Readable text of a fetched page for the analysis prompt: title, meta
 * description, h1–h3 headings and the main text, with scripts, styles and
 * page chrome dropped and the text capped.
 *
 * HTML is read by one left-to-right scan (a tolerant tokenizer, no DOM, no
 * backtracking regexes over the document), so a 1 MiB page costs linear time
 * whatever its markup. The rules, in the order they apply:
 *
 * - Never text: comments, CDATA, doctype and `<?…>`; the content of script,
 *   style, noscript, template, svg, math, iframe, object, canvas, noembed,
 *   noframes, textarea and select; of page chrome (nav, footer, aside)
 *   wherever it is; of elements with `hidden` or `aria-hidden="true"`. An
 *   unclosed comment, CDATA section, script, style or title swallows the
 *   rest of the page, as in a browser; so does a tag cut off by the end.
 * - Text comes from the first `<main>` (or `role="main"`) when it has any,
 *   else the first `<article>`, else the whole page (the body, or everything
 *   when there is no body tag). `<title>` content is never body text.
 * - Block elements (p, div, li, br, h1–h6, tr, section, …) end a line; table
 *   cells are separated by a space; whitespace runs collapse to one space
 *   (also inside pre), lines are trimmed and blank lines removed.
 * - Entities: numeric (invalid code points become U+FFFD, 0x80–0x9F are read
 *   as windows-1252 like browsers do) and a table of common named ones. A
 *   named one needs its `;`, except amp, lt, gt, quot, nbsp, copy and reg when
 *   not followed by a letter, digit or `=` (so `?a=1&copy=2` stays a query).
 * - Implied end tags are inferred only from the innermost open element (a
 *   block start closes an open p, `<li>` an open li, `<tr>` an open cell or
 *   row, a heading an open heading); an end tag closes its nearest open
 *   namesake (a heading end tag any open heading) and everything left open
 *   inside it, and is ignored when none is open; `</body>` and `</html>`
 *   close nothing.
 * - Every output has control characters other than newline removed (tabs
 *   and other whitespace become spaces) and is trimmed.
 *
 * @module
 */

/** What a page says, as plain text. */
export interface ExtractedPage {
  /** `<title>`, else og:title / twitter:title, else the first h1 (at most 300 chars). */
  title: string | null;
  /** meta name=description, else og:description / twitter:description (at most 1000 chars). */
  description: string | null;
  /** h1–h3 text in document order, whitespace-collapsed, deduplicated, at most 40 of ≤ 200 chars. */
  headings: string[];
  /** The main text, one block per line, at most `maxTextChars`. */
  text: string;
  /** `text` was cut at `maxTextChars` (at a word boundary when one is near). */
  truncated: boolean;
}

/** Options of `extractPage`. */
export interface ExtractOptions {
  /** Longest `text` returned; a positive integer, default `DEFAULT_MAX_TEXT_CHARS`. */
  maxTextChars?: number;
}

/** Default cap of `ExtractedPage.text`, in UTF-16 code units. */
export const DEFAULT_MAX_TEXT_CHARS = 12_000;

const TITLE_MAX = 300;
const DESCRIPTION_MAX = 1_000;
const HEADING_MAX = 200;
const HEADINGS_MAX = 40;

/**
 * Extracts `ExtractedPage` from `body`; text/plain is taken as is
 * (normalized whitespace, capped), text/html parsed.
 */
export function extractPage(
  body: string,
  contentType: "text/html" | "text/plain",
  options: ExtractOptions = {},
): ExtractedPage {
  const max = options.maxTextChars ?? DEFAULT_MAX_TEXT_CHARS;
  if (!Number.isSafeInteger(max) || max < 1) {
    throw new RangeError(
      `Cannot extract page: maxTextChars must be a positive integer, got "${max}"`,
    );
  }
  if (contentType === "text/plain") {
    return { title: null, description: null, headings: [], ...capText(cleanBlock(body), max) };
  }
  const page = new PageCollector();
  tokenize(body, page);
  return page.result(max);
}

// ---------------------------------------------------------------- tokenizer

/** Receives the tokens of `tokenize` in document order. */
interface HtmlSink {
  /** Text between tags, entities not yet decoded. */
  text(raw: string): void;
  /** A start tag with its raw attribute values; answers whether it opened an element. */
  open(name: string, attrs: Map<string, string>, selfClosing: boolean): boolean;
  /** An end tag. */
  close(name: string): void;
  /** The content of a raw-text or RCDATA element (script, style, title, …). */
  raw(name: string, content: string): void;
  /** The end of the document. */
  end(): void;
}

/** The space-separated words of `list`, as a set. */
function words(list: string): Set<string> {
  return new Set(list.split(" "));
}

/** Elements whose content is not markup, up to their end tag. */
const RAW_TEXT = words(
  "script style noscript iframe noembed noframes title textarea",
);

function isWhitespace(c: number): boolean {
  return c === 32 || c === 9 || c === 10 || c === 12 || c === 13;
}

function isAsciiLetter(c: number): boolean {
  return (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
}

/** Feeds the tokens of `html` to `sink` in one forward scan. */
function tokenize(html: string, sink: HtmlSink): void {
  const n = html.length;
  let i = 0;
  while (i < n) {
    const lt = html.indexOf("<", i);
    if (lt === -1) break;
    if (lt > i) sink.text(html.slice(i, lt));
    const next = html.charCodeAt(lt + 1);
    if (isAsciiLetter(next)) {
      const tag = readTag(html, lt + 1, true);
      if (!tag) return sink.end(); // the document ends inside the tag
      i = tag.end;
      const opened = sink.open(tag.name, tag.attrs, tag.selfClosing);
      if (!opened || !RAW_TEXT.has(tag.name)) continue;
      const close = findRawEnd(html, i, tag.name);
      sink.raw(tag.name, html.slice(i, close === -1 ? n : close));
      if (close === -1) return sink.end();
      const endTag = readTag(html, close + 2, false);
      if (!endTag) return sink.end();
      i = endTag.end;
      sink.close(tag.name);
    } else if (next === 47 /* / */ && isAsciiLetter(html.charCodeAt(lt + 2))) {
      const tag = readTag(html, lt + 2, false);
      if (!tag) return sink.end();
      i = tag.end;
      sink.close(tag.name);
    } else if (html.startsWith("<!--", lt)) {
      i = skipComment(html, lt);
      if (i === -1) return sink.end();
    } else if (html.startsWith("<![CDATA[", lt)) {
      const close = html.indexOf("]]>", lt + 9);
      if (close === -1) return sink.end();
      i = close + 3;
    } else if (next === 33 /* ! */ || next === 63 /* ? */ || next === 47 /* / */) {
      // Doctype, processing instruction, `</>` or `</3`: a bogus comment up to ">".
      const close = html.indexOf(">", lt + 2);
      if (close === -1) return sink.end();
      i = close + 1;
    } else {
      sink.text("<"); // a stray "<" is text
      i = lt + 1;
    }
  }
  if (i < n) sink.text(html.slice(i));
  sink.end();
}

/** Where the comment opened at `start` ends (after "-->"), or -1 when it never does. */
function skipComment(html: string, start: number): number {
  if (html.startsWith(">", start + 4)) return start + 5; // <!-->
  if (html.startsWith("->", start + 4)) return start + 6; // <!--->
  const close = html.indexOf("-->", start + 4);
  return close === -1 ? -1 : close + 3;
}

interface Tag {
  name: string;
  attrs: Map<string, string>;
  selfClosing: boolean;
  /** Index just after the tag's ">". */
  end: number;
}

/**
 * Reads a tag whose name starts at `start` (after "<" or "</"): its
 * lower-case name and, when `keepAttrs`, its raw attribute values (the first
 * of duplicates wins). Answers null when the document ends inside the tag.
 */
function readTag(html: string, start: number, keepAttrs: boolean): Tag | null {
  const n = html.length;
  let j = start;
  while (j < n) {
    const c = html.charCodeAt(j);
    if (isWhitespace(c) || c === 47 || c === 62) break;
    j++;
  }
  const name = html.slice(start, j).toLowerCase();
  const attrs = new Map<string, string>();
  for (;;) {
    while (j < n && isWhitespace(html.charCodeAt(j))) j++;
    if (j >= n) return null;
    let c = html.charCodeAt(j);
    if (c === 62 /* > */) return { name, attrs, selfClosing: false, end: j + 1 };
    if (c === 47 /* / */) {
      j++;
      if (html.charCodeAt(j) === 62) return { name, attrs, selfClosing: true, end: j + 1 };
      continue;
    }
    const nameStart = j++; // the first character may be "=" (a parse error browsers accept)
    while (j < n) {
      c = html.charCodeAt(j);
      if (isWhitespace(c) || c === 47 || c === 62 || c === 61) break;
      j++;
    }
    const attrName = html.slice(nameStart, j);
    while (j < n && isWhitespace(html.charCodeAt(j))) j++;
    let value = "";
    if (html.charCodeAt(j) === 61 /* = */) {
      j++;
      while (j < n && isWhitespace(html.charCodeAt(j))) j++;
      if (j >= n) return null;
      const quote = html.charCodeAt(j);
      if (quote === 34 || quote === 39) {
        const close = html.indexOf(quote === 34 ? '"' : "'", j + 1);
        if (close === -1) return null;
        value = html.slice(j + 1, close);
        j = close + 1;
      } else {
        const valueStart = j;
        while (j < n && !isWhitespace(html.charCodeAt(j)) && html.charCodeAt(j) !== 62) j++;
        value = html.slice(valueStart, j);
      }
    }
    if (keepAttrs) {
      const key = attrName.toLowerCase();
      if (!attrs.has(key)) attrs.set(key, value);
    }
  }
}

/** Index of the "</name" that ends a raw-text element, searching from `from`; -1 when none. */
function findRawEnd(html: string, from: number, name: string): number {
  let at = html.indexOf("</", from);
  while (at !== -1) {
    let k = 0;
    // Names are lower-case ASCII letters: `| 0x20` folds an upper-case letter onto its lower case.
    while (k < name.length && (html.charCodeAt(at + 2 + k) | 0x20) === name.charCodeAt(k)) k++;
    if (k === name.length) {
      const after = html.charCodeAt(at + 2 + k);
      if (Number.isNaN(after) || isWhitespace(after) || after === 47 || after === 62) return at;
    }
    at = html.indexOf("</", at + 2);
  }
  return -1;
}

// ---------------------------------------------------------------- page model

/** Where text inside an open element goes; inherited from the parent at open. */
interface Frame {
  readonly name: string;
  /** Inside dropped content: no text, no headings, no meta. */
  readonly drop: boolean;
  /** Inside svg or math, where `<x/>` closes itself and `<title>` is not the page's. */
  readonly foreign: boolean;
  /** Inside pre/listing: newlines in text are line breaks. */
  readonly pre: boolean;
  /** Inside the first main. */
  readonly main: boolean;
  /** Inside the first article. */
  readonly article: boolean;
}

const VOID = words(
  "area base br col embed hr img input keygen link meta param source track wbr",
);

/** Elements whose whole content is never text (see the module doc). */
const DROPPED = words(
  "script style noscript template svg math iframe object canvas noembed noframes " +
    "textarea select nav footer aside",
);

/** Elements that start and end a line. */
const BLOCK = words(
  "address article aside blockquote body br caption center dd details dialog dir div " +
    "dl dt fieldset figcaption figure footer form h1 h2 h3 h4 h5 h6 header hgroup hr " +
    "html legend li listing main menu nav ol optgroup option p pre section summary table " +
    "tbody tfoot thead tr ul",
);

/** Starting one of these closes an open `<p>` (HTML's implied end tag). */
const CLOSES_P = new Set(
  [...BLOCK].filter((name) => !["br", "body", "html", "option", "optgroup"].includes(name)),
);

const HEADINGS = new Set(["h1", "h2", "h3", "h4", "h5", "h6"]);
const CELLS = new Set(["td", "th"]);
const ROWS = new Set(["td", "th", "tr"]);
const DEFINITIONS = new Set(["dt", "dd"]);
const OPTIONS = new Set(["option", "optgroup"]);

/** For an element whose start implies the end of an open sibling: the names it closes. */
const CLOSES_SIBLING = new Map<string, Set<string>>([
  ["li", new Set(["li"])],
  ["dt", DEFINITIONS],
  ["dd", DEFINITIONS],
  ["option", new Set(["option"])],
  ["optgroup", OPTIONS],
  ["tr", ROWS],
  ["td", CELLS],
  ["th", CELLS],
  ...[...HEADINGS].map((h): [string, Set<string>] => [h, HEADINGS]),
]);

/** Meta names (or properties) read, lower case. */
const META_KEYS = new Set([
  "description",
  "og:title",
  "og:description",
  "twitter:title",
  "twitter:description",
]);

const ROOT: Frame = {
  name: "#root",
  drop: false,
  foreign: false,
  pre: false,
  main: false,
  article: false,
};

/** Builds an `ExtractedPage` from the tokens of one HTML document. */
class PageCollector implements HtmlSink {
  private readonly stack: Frame[] = [];
  /** How many frames of each name are open: makes a stray end tag O(1). */
  private readonly openCount = new Map<string, number>();
  private top: Frame = ROOT;
  private mainSeen = false;
  private articleSeen = false;
  private readonly body: string[] = [];
  private readonly main: string[] = [];
  private readonly article: string[] = [];
  private title: string | null = null;
  private readonly metas = new Map<string, string>();
  private heading: { frame: Frame; parts: string[]; length: number } | null = null;
  private readonly headings: string[] = [];
  private firstH1: string | null = null;

  text(raw: string): void {
    const frame = this.top;
    if (frame.drop) return;
    const decoded = decodeEntities(raw);
    const text = frame.pre ? decoded.replace(/\r\n?/g, "\n") : decoded.replace(/[\r\n]+/g, " ");
    this.body.push(text);
    if (frame.main) this.main.push(text);
    if (frame.article) this.article.push(text);
    this.addHeadingText(text);
  }

  open(name: string, attrs: Map<string, string>, selfClosing: boolean): boolean {
    this.closeImplied(name);
    const parent = this.top;
    if (VOID.has(name) || (selfClosing && (parent.foreign || name === "svg" || name === "math"))) {
      if (name === "br" || name === "hr") this.lineBreak();
      if (name === "meta" && !parent.drop) this.readMeta(attrs);
      return false;
    }
    const drop = parent.drop || DROPPED.has(name) || attrs.has("hidden") ||
      attrs.get("aria-hidden")?.trim().toLowerCase() === "true";
    const isMain = !drop && !this.mainSeen &&
      (name === "main" || attrs.get("role")?.trim().toLowerCase() === "main");
    const isArticle = !drop && !this.articleSeen && name === "article";
    this.mainSeen ||= isMain;
    this.articleSeen ||= isArticle;
    const frame: Frame = {
      name,
      drop,
      foreign: parent.foreign || name === "svg" || name === "math",
      pre: parent.pre || name === "pre" || name === "listing",
      main: parent.main || isMain,
      article: parent.article || isArticle,
    };
    this.stack.push(frame);
    this.openCount.set(name, (this.openCount.get(name) ?? 0) + 1);
    this.top = frame;
    if (BLOCK.has(name)) this.lineBreak();
    if (CELLS.has(name)) this.cellBreak();
    if (!drop && !this.heading && (name === "h1" || name === "h2" || name === "h3")) {
      this.heading = { frame, parts: [], length: 0 };
    }
    return true;
  }

  close(name: string): void {
    if (BLOCK.has(name)) this.lineBreak(); // also `</p>` or `</br>` without an open one
    if (CELLS.has(name)) this.cellBreak();
    if (name === "html" || name === "body") return; // the body stays open, as in browsers
    const target = this.openCount.get(name) ? name : this.openHeadingFor(name);
    if (target === undefined) return; // nothing of that name is open: ignored
    while (this.stack.length > 0 && this.pop().name !== target) {
      // pops the elements left open inside `target`
    }
  }

  raw(name: string, content: string): void {
    const frame = this.top;
    if (name !== "title" || frame.drop || frame.foreign || this.title !== null) return;
    const title = capText(cleanInline(decodeEntities(content)), TITLE_MAX).text;
    if (title) this.title = title;
  }

  end(): void {
    while (this.stack.length > 0) this.pop();
  }

  /** The page, with its text capped at `maxTextChars`. */
  result(maxTextChars: number): ExtractedPage {
    const candidates = [this.main, this.article, this.body];
    let text = "";
    for (const parts of candidates) {
      text = cleanBlock(parts.join(""));
      if (text) break;
    }
    return {
      title: this.title ?? this.meta("og:title", TITLE_MAX) ??
        this.meta("twitter:title", TITLE_MAX) ?? this.firstH1,
      description: this.meta("description", DESCRIPTION_MAX) ??
        this.meta("og:description", DESCRIPTION_MAX) ??
        this.meta("twitter:description", DESCRIPTION_MAX),
      headings: this.headings,
      ...capText(text, maxTextChars),
    };
  }

  private meta(key: string, max: number): string | null {
    const value = this.metas.get(key);
    return value === undefined ? null : capText(value, max).text;
  }

  private readMeta(attrs: Map<string, string>): void {
    const content = attrs.get("content");
    if (content === undefined) return;
    for (const attr of ["name", "property"]) {
      const key = attrs.get(attr)?.trim().toLowerCase();
      if (key === undefined || !META_KEYS.has(key) || this.metas.has(key)) continue;
      const value = cleanInline(decodeEntities(content));
      if (value) this.metas.set(key, value);
    }
  }

  /** For a heading end tag without its namesake open: the nearest open h1–h6 (HTML closes it). */
  private openHeadingFor(name: string): string | undefined {
    if (!HEADINGS.has(name) || ![...HEADINGS].some((h) => this.openCount.get(h))) return undefined;
    return this.stack.findLast((frame) => HEADINGS.has(frame.name))?.name;
  }

  /** Pops implied-closed elements off the top before `name` opens. */
  private closeImplied(name: string): void {
    if (this.top.name === "p" && CLOSES_P.has(name)) this.pop();
    const siblings = CLOSES_SIBLING.get(name);
    while (siblings?.has(this.top.name)) this.pop();
  }

  private pop(): Frame {
    const frame = this.stack.pop() ?? ROOT;
    this.openCount.set(frame.name, (this.openCount.get(frame.name) ?? 1) - 1);
    this.top = this.stack.at(-1) ?? ROOT;
    if (this.heading?.frame === frame) this.finishHeading(frame.name);
    return frame;
  }

  private lineBreak(): void {
    this.body.push("\n");
    if (this.mainSeen) this.main.push("\n");
    if (this.articleSeen) this.article.push("\n");
    this.addHeadingText(" ");
  }

  private cellBreak(): void {
    if (this.top.drop) return;
    this.body.push(" ");
    if (this.top.main) this.main.push(" ");
    if (this.top.article) this.article.push(" ");
    this.addHeadingText(" ");
  }

  private addHeadingText(text: string): void {
    const heading = this.heading;
    // Enough for a capped heading after whitespace collapses; bounds an unclosed h1.
    if (!heading || this.top.drop || heading.length > HEADING_MAX * 5) return;
    const collapsed = text.replace(WHITESPACE_RUN, " ");
    heading.parts.push(collapsed);
    heading.length += collapsed.length;
  }

  private finishHeading(name: string): void {
    const text = cleanInline(this.heading?.parts.join("") ?? "");
    this.heading = null;
    if (!text) return;
    if (name === "h1" && this.firstH1 === null) this.firstH1 = capText(text, TITLE_MAX).text;
    const capped = capText(text, HEADING_MAX).text;
    if (this.headings.length < HEADINGS_MAX && !this.headings.includes(capped)) {
      this.headings.push(capped);
    }
  }
}

// ---------------------------------------------------------------- entities

/** Latin-1 entity names for U+00A0…U+00FF, in code point order. */
const LATIN1_NAMES = (
  "nbsp iexcl cent pound curren yen brvbar sect uml copy ordf laquo not shy reg macr " +
  "deg plusmn sup2 sup3 acute micro para middot cedil sup1 ordm raquo frac14 frac12 frac34 " +
  "iquest Agrave Aacute Acirc Atilde Auml Aring AElig Ccedil Egrave Eacute Ecirc Euml " +
  "Igrave Iacute Icirc Iuml ETH Ntilde Ograve Oacute Ocirc Otilde Ouml times Oslash Ugrave " +
  "Uacute Ucirc Uuml Yacute THORN szlig agrave aacute acirc atilde auml aring aelig ccedil " +
  "egrave eacute ecirc euml igrave iacute icirc iuml eth ntilde ograve oacute ocirc otilde " +
  "ouml divide oslash ugrave uacute ucirc uuml yacute thorn yuml"
).split(" ");

/** Named character references decoded (case-sensitive, as in HTML). */
const NAMED = new Map<string, number>([
  ...LATIN1_NAMES.map((name, k): [string, number] => [name, 0xa0 + k]),
  ...(
    "quot:22 QUOT:22 amp:26 AMP:26 apos:27 lt:3c LT:3c gt:3e GT:3e COPY:a9 REG:ae " +
    "OElig:152 oelig:153 Scaron:160 scaron:161 Yuml:178 fnof:192 circ:2c6 tilde:2dc " +
    "ensp:2002 emsp:2003 thinsp:2009 zwnj:200c zwj:200d lrm:200e rlm:200f ndash:2013 " +
    "mdash:2014 lsquo:2018 rsquo:2019 sbquo:201a ldquo:201c rdquo:201d bdquo:201e " +
    "dagger:2020 Dagger:2021 bull:2022 hellip:2026 permil:2030 prime:2032 Prime:2033 " +
    "lsaquo:2039 rsaquo:203a euro:20ac trade:2122 larr:2190 uarr:2191 rarr:2192 " +
    "darr:2193 harr:2194 minus:2212 infin:221e asymp:2248 ne:2260 le:2264 ge:2265 " +
    "check:2713"
  ).split(" ").map((pair): [string, number] => {
    const [name = "", hex = ""] = pair.split(":");
    return [name, parseInt(hex, 16)];
  }),
]);

/** Named references also decoded without their ";" (when not followed by [A-Za-z0-9=]). */
const LEGACY = new Set(["amp", "lt", "gt", "quot", "nbsp", "copy", "reg"]);

/** What numeric references 0x80–0x9F mean (windows-1252); 0 where undefined. */
const WINDOWS_1252 = [
  0x20ac,
  0,
  0x201a,
  0x192,
  0x201e,
  0x2026,
  0x2020,
  0x2021,
  0x2c6,
  0x2030,
  0x160,
  0x2039,
  0x152,
  0,
  0x17d,
  0,
  0,
  0x2018,
  0x2019,
  0x201c,
  0x201d,
  0x2022,
  0x2013,
  0x2014,
  0x2dc,
  0x2122,
  0x161,
  0x203a,
  0x153,
  0,
  0x17e,
  0x178,
];

/** `s` with its character references decoded; unknown ones are left as written. */
function decodeEntities(s: string): string {
  let amp = s.indexOf("&");
  if (amp === -1) return s;
  const out: string[] = [];
  let last = 0;
  while (amp !== -1) {
    const ref = s.charCodeAt(amp + 1) === 35 /* # */
      ? numericReference(s, amp)
      : namedReference(s, amp);
    if (ref) {
      out.push(s.slice(last, amp), ref.text);
      last = ref.end;
    }
    amp = s.indexOf("&", ref ? ref.end : amp + 1);
  }
  out.push(s.slice(last));
  return out.join("");
}

interface Reference {
  text: string;
  end: number;
}

function isAlphanumeric(c: number): boolean {
  return isAsciiLetter(c) || (c >= 48 && c <= 57);
}

function namedReference(s: string, amp: number): Reference | null {
  let j = amp + 1;
  while (j < s.length && j - amp <= 32 && isAlphanumeric(s.charCodeAt(j))) j++;
  const name = s.slice(amp + 1, j);
  const code = NAMED.get(name);
  if (code === undefined) return null;
  if (s.charCodeAt(j) === 59 /* ; */) return { text: String.fromCodePoint(code), end: j + 1 };
  const after = s.charCodeAt(j);
  if (LEGACY.has(name) && !isAlphanumeric(after) && after !== 61 /* = */) {
    return { text: String.fromCodePoint(code), end: j };
  }
  return null;
}

function numericReference(s: string, amp: number): Reference | null {
  let j = amp + 2;
  const hex = (s.charCodeAt(j) | 0x20) === 120; /* x or X */
  if (hex) j++;
  const digitsStart = j;
  let code = 0;
  for (; j < s.length; j++) {
    const digit = parseInt(s[j] ?? "", hex ? 16 : 10);
    if (Number.isNaN(digit)) break;
    code = Math.min(code * (hex ? 16 : 10) + digit, 0x110000); // saturates past the last code point
  }
  if (j === digitsStart) return null;
  if (s.charCodeAt(j) === 59 /* ; */) j++;
  return { text: String.fromCodePoint(codePointOf(code)), end: j };
}

/** The code point a numeric reference stands for, as browsers read it. */
function codePointOf(code: number): number {
  if (code === 0 || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return 0xfffd;
  if (code >= 0x80 && code <= 0x9f) return WINDOWS_1252[code - 0x80] || 0xfffd;
  return code;
}

// ---------------------------------------------------------------- text

/** Control characters that are not whitespace (whitespace is collapsed instead). */
// deno-lint-ignore no-control-regex -- matching control characters is the point
const CONTROLS = /[\u0000-\u0008\u000e-\u001f\u007f-\u009f]/g;
/** A surrogate without its pair: not text, becomes U+FFFD. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/**
 * Whitespace that is not already a single space: replacing only these with
 * " " is the same as collapsing every run, at a fraction of the matches.
 */
const WHITESPACE_RUN = /\s{2,}|[^\S ]/g;

function stripControls(s: string): string {
  return s.replace(CONTROLS, "").replace(LONE_SURROGATE, "\ufffd");
}

/** One line: control characters removed, every whitespace run one space, trimmed. */
function cleanInline(s: string): string {
  return stripControls(s).replace(WHITESPACE_RUN, " ").trim();
}

/** Lines: control characters removed, whitespace runs one space, lines trimmed, no blank lines. */
function cleanBlock(s: string): string {
  return stripControls(s.replace(/\r\n?/g, "\n"))
    .split("\n")
    .map((line) => line.replace(WHITESPACE_RUN, " ").trim())
    .filter((line) => line !== "")
    .join("\n");
}

/**
 * `text` cut to at most `max` code units: at the last space or line break
 * when one is within the last fifth (at most 200 chars) before `max`,
 * otherwise exactly at `max` (never between the halves of a surrogate pair).
 */
function capText(text: string, max: number): { text: string; truncated: boolean } {
  if (text.length <= max) return { text, truncated: false };
  const near = Math.min(200, Math.floor(max / 5));
  const window = text.slice(max - near, max + 1);
  const space = Math.max(window.lastIndexOf(" "), window.lastIndexOf("\n"));
  let cut = max;
  if (space >= 0) cut = max - near + space;
  else if (/[\ud800-\udbff]/.test(text[max - 1] ?? "")) cut = max - 1;
  return { text: text.slice(0, cut).trimEnd(), truncated: true };
}
