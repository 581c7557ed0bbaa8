import assert from "node:assert/strict";
import {
  DEFAULT_MAX_TEXT_CHARS,
  extractPage,
} from "../../../../supabase/functions/_shared/analysis/extract.ts";

const html = (body: string) => extractPage(body, "text/html");
const textOf = (body: string) => html(body).text;

// ------------------------------------------------------------ title and description

Deno.test("extractPage() reads <title>, whitespace collapsed and entities decoded", () => {
  const page = html(`<html><head><title>
    Acme &amp; Co &mdash; tools </title></head><body><h1>Heading</h1></body></html>`);
  assert.equal(page.title, "Acme & Co — tools");
});

Deno.test("extractPage() falls back from title to og:title, twitter:title, then the first h1", () => {
  const metas = `<meta property="og:title" content="From OG">` +
    `<meta name="twitter:title" content="From Twitter">`;
  assert.equal(html(`<title>Own</title>${metas}<h1>H</h1>`).title, "Own");
  assert.equal(html(`<title>  </title>${metas}<h1>H</h1>`).title, "From OG");
  assert.equal(
    html(`<meta name="twitter:title" content="From Twitter"><h1>H</h1>`).title,
    "From Twitter",
  );
  assert.equal(html(`<h2>Second</h2><h1>First <em>h1</em></h1><h1>Other</h1>`).title, "First h1");
  assert.equal(html(`<p>no title at all</p>`).title, null);
});

Deno.test("extractPage() ignores an svg <title> and a title inside a template", () => {
  const page = html(
    `<svg><title>Icon</title></svg><template><title>T</title></template><h1>Real</h1>`,
  );
  assert.equal(page.title, "Real");
  assert.equal(html(`<svg/><title>Page</title>`).title, "Page");
});

Deno.test("extractPage() falls back from meta description to og:description and twitter:description", () => {
  assert.equal(
    html(`<meta name="description" content="Plain"><meta property="og:description" content="OG">`)
      .description,
    "Plain",
  );
  assert.equal(
    html(`<meta property="og:description" content="OG"><meta name=twitter:description content=TW>`)
      .description,
    "OG",
  );
  assert.equal(html(`<meta name=twitter:description content=TW>`).description, "TW");
  assert.equal(html(`<meta name="keywords" content="x">`).description, null);
});

Deno.test("extractPage() reads attribute values quoted with ' or \" or unquoted, in any case", () => {
  const page = html(
    `<META NAME='Description' CONTENT='It&#39;s "quoted" &amp;  spaced'>` +
      `<meta property=og:title content=Unquoted>`,
  );
  assert.equal(page.description, `It's "quoted" & spaced`);
  assert.equal(page.title, "Unquoted");
  assert.equal(
    html(`<meta content="first" name="description" content="second">`).description,
    "first",
  );
});

// ------------------------------------------------------------ headings

Deno.test("extractPage() lists h1–h3 in document order, collapsed and deduplicated", () => {
  const page = html(`<h3>Three</h3><h1>  One
    <b>bold</b></h1><h4>Four</h4><h2>Two</h2><h2>Two</h2><h5>Five</h5><h1>One bold</h1>`);
  assert.deepEqual(page.headings, ["Three", "One bold", "Two"]);
});

Deno.test("extractPage() keeps at most 40 headings of at most 200 chars each", () => {
  const many = Array.from({ length: 60 }, (_, k) => `<h2>Heading ${k}</h2>`).join("");
  const page = html(many);
  assert.equal(page.headings.length, 40);
  assert.equal(page.headings[39], "Heading 39");
  const long = html(`<h1>${"word ".repeat(100)}</h1>`).headings[0] ?? "";
  assert.ok(long.length <= 200 && long.length > 150, `length ${long.length}`);
  assert.match(long, /^(word )*word$/);
});

Deno.test("extractPage() leaves headings of dropped content out", () => {
  const page = html(
    `<nav><h2>Menu</h2></nav><h1>Kept</h1><div hidden><h2>Hidden</h2></div>` +
      `<footer><h3>Links</h3></footer><svg><h1>x</h1></svg>`,
  );
  assert.deepEqual(page.headings, ["Kept"]);
});

Deno.test("extractPage() closes a heading at any heading end tag, like HTML", () => {
  const page = html(`<h1>Title</h2><p>Body text</p><h2>Next</h2>`);
  assert.deepEqual(page.headings, ["Title", "Next"]);
  assert.equal(page.text, "Title\nBody text\nNext");
});

// ------------------------------------------------------------ where the text comes from

Deno.test("extractPage() takes the text of <main> when there is one", () => {
  const page = html(
    `<body><header>Logo</header><article>Teaser</article><main><p>Main one</p>` +
      `<article>Inside</article></main><main>Second main</main><p>Outside</p></body>`,
  );
  assert.equal(page.text, "Main one\nInside");
});

Deno.test("extractPage() takes the first <article> without a main", () => {
  const page = html(`<p>Intro</p><article><p>First</p></article><article>Second</article>`);
  assert.equal(page.text, "First");
});

Deno.test("extractPage() takes an element with role=main as the main", () => {
  assert.equal(textOf(`<p>Chrome</p><div role="main">Content</div>`), "Content");
});

Deno.test("extractPage() falls back to the body when main is empty, else to everything", () => {
  assert.equal(textOf(`<body><main id="app"></main><p>Server text</p></body>`), "Server text");
  assert.equal(textOf(`Just a fragment <b>here</b>`), "Just a fragment here");
});

Deno.test("extractPage() drops nav, footer and aside wherever they are", () => {
  const page = html(
    `<body><nav>Home | About</nav><p>Body</p><aside>Ads</aside><footer>© 2024</footer></body>`,
  );
  assert.equal(page.text, "Body");
  assert.equal(
    textOf(`<main><p>Story</p><aside>Related</aside><footer>By me</footer></main>`),
    "Story",
  );
});

// ------------------------------------------------------------ dropped content

Deno.test("extractPage() drops scripts even when they contain markup or odd end tags", () => {
  const page = html(
    `<div>before<script>document.write("</div><p>injected</p>"); if (a<b) {}</script >` +
      `middle<SCRIPT type="text/javascript">x = "<!-- <script>";</SCRIPT>after` +
      `<script>var t = "</scripts>";</script/ foo>end</div>`,
  );
  assert.equal(page.text, "beforemiddleafterend");
});

Deno.test("extractPage() drops style, noscript, template, svg, math, iframe, object, canvas", () => {
  const page = html(
    `<p>a</p><style>p > b { content: "</p>text" }</style>` +
      `<noscript><p>Enable JS</p></noscript><template><p>tpl</p></template>` +
      `<svg viewBox="0 0 1 1"><text>svg</text><path d="M0"/></svg>` +
      `<math><mi>x</mi></math><iframe>frame</iframe><object>obj</object>` +
      `<canvas>Your browser</canvas><textarea>typed</textarea>` +
      `<select><option>Country</option></select><p>b</p>`,
  );
  assert.equal(page.text, "a\nb");
});

Deno.test("extractPage() drops comments, CDATA, doctype and processing instructions", () => {
  assert.equal(
    textOf(
      `<!DOCTYPE html><?xml version="1.0"?>a<!-- <p>c</p> -->b<!---->c<!-->d` +
        `<![CDATA[ x > y ]]>e`,
    ),
    "abcde",
  );
});

Deno.test("extractPage() drops hidden and aria-hidden elements", () => {
  assert.equal(
    textOf(
      `<p>shown</p><div hidden><p>gone</p></div><span aria-hidden="TRUE">★</span>` +
        `<span aria-hidden="false">kept</span><p hidden>x<p>after`,
    ),
    "shown\nkept\nafter",
  );
});

// ------------------------------------------------------------ text layout

Deno.test("extractPage() puts block elements on their own lines and runs inline text on", () => {
  const page = html(
    `<div>One <b>bold</b><i>italic</i></div><section><p>Two<br>Three</p></section>` +
      `<ul><li>Four</li><li>Five</li></ul><table><tr><th>A</th><th>B</th></tr>` +
      `<tr><td>1</td><td>2</td></tr></table><h4>Six</h4>`,
  );
  assert.equal(page.text, "One bolditalic\nTwo\nThree\nFour\nFive\nA B\n1 2\nSix");
});

Deno.test("extractPage() collapses whitespace runs and blank lines", () => {
  assert.equal(
    textOf(`<p>  lots\n\n   of \t space&nbsp;&nbsp;here </p>\n\n\n<div>\n</div><p>next</p>`),
    "lots of space here\nnext",
  );
  assert.equal(textOf(`<pre>line 1\n   line 2\r\n\n</pre>`), "line 1\nline 2");
});

Deno.test("extractPage() strips control characters except newline from every output", () => {
  const page = html(
    `<title>T\u0007itle</title><meta name=description content="D\u0000esc">` +
      `<h1>H\u001bead</h1><p>te\u0001xt\u0085 &#1;&#x7f;ok\tdone</p><p>line</p>`,
  );
  assert.equal(page.title, "Title");
  assert.equal(page.description, "Desc");
  assert.deepEqual(page.headings, ["Head"]);
  assert.equal(page.text, "Head\ntext ok done\nline");
});

// ------------------------------------------------------------ entities

Deno.test("extractPage() decodes the common named entities", () => {
  const named = "amp lt gt quot apos nbsp copy reg trade hellip mdash ndash lsquo rsquo ldquo " +
    "rdquo euro pound yen middot bull laquo raquo eacute Uuml";
  const text = textOf(`<p>${named.split(" ").map((n) => `&${n};`).join("|")}</p>`);
  assert.equal(text, `&|<|>|"|'| |©|®|™|…|—|–|‘|’|“|”|€|£|¥|·|•|«|»|é|Ü`);
});

Deno.test("extractPage() decodes numeric references, invalid code points as U+FFFD", () => {
  assert.equal(textOf(`&#65;&#x42;&#X43;&#128512;&#x1F600`), "ABC😀😀");
  assert.equal(textOf(`[&#0;][&#xD800;][&#x110000;][&#99999999999999;]`), "[�][�][�][�]");
  assert.equal(textOf(`&#147;win&#148; &#x80;5 &#x81;`), "“win” €5 �");
});

Deno.test("extractPage() leaves unknown and incomplete references as written", () => {
  assert.equal(textOf(`&bogus; &#; &#x; & done &`), "&bogus; &#; &#x; & done &");
  assert.equal(textOf(`&amp &lt3 ?a=1&copy=2 &eacute`), "& &lt3 ?a=1&copy=2 &eacute");
});

// ------------------------------------------------------------ malformed markup

Deno.test("extractPage() tolerates unclosed tags and stray end tags", () => {
  assert.equal(
    textOf(`<div><p>one<p>two<ul><li>three<li>four</ul></span></p></div></div><b>five`),
    "one\ntwo\nthree\nfour\nfive",
  );
  assert.equal(textOf(`<dl><dt>term<dd>definition</dl>`), "term\ndefinition");
});

Deno.test("extractPage() reads a stray < as text", () => {
  assert.equal(textOf(`<p>1 < 2 and 3<4, a <= b, <3 love</p>`), "1 < 2 and 3<4, a <= b, <3 love");
  assert.equal(textOf(`x </ y </> z`), "x z");
});

Deno.test("extractPage() reads upper- and mixed-case tags", () => {
  const page = html(`<TITLE>Up</TITLE><BODY><MAIN><P>One</P><Div>Two</DIV></MAIN></BODY>`);
  assert.equal(page.title, "Up");
  assert.equal(page.text, "One\nTwo");
});

Deno.test("extractPage() drops the rest after a comment, script or quote that never closes", () => {
  assert.equal(textOf(`<p>kept</p><!-- open <p>gone</p>`), "kept");
  assert.equal(textOf(`<p>kept</p><script>var x = 1; <p>gone</p>`), "kept");
  assert.equal(textOf(`<p>kept</p><a href="oops>gone</a><p>gone`), "kept");
  assert.equal(textOf(`<p>kept</p><![CDATA[ gone`), "kept");
  assert.equal(textOf(`<p>kept</p><!DOCTYPE gone`), "kept");
});

Deno.test("extractPage() reads a tag cut off by the end of the document as nothing", () => {
  assert.equal(textOf(`text<div class="a"`), "text");
  assert.equal(textOf(`text<`), "text<");
});

// ------------------------------------------------------------ text/plain

Deno.test("extractPage() takes text/plain as is, whitespace normalized", () => {
  const page = extractPage(
    "  Title line  \r\n\r\n\tSecond\u0000 <b>line</b> &amp;\n\n\n  third  ",
    "text/plain",
  );
  assert.deepEqual(page, {
    title: null,
    description: null,
    headings: [],
    text: "Title line\nSecond <b>line</b> &amp;\nthird",
    truncated: false,
  });
});

Deno.test("extractPage() caps text/plain at maxTextChars", () => {
  const page = extractPage("word ".repeat(100), "text/plain", { maxTextChars: 52 });
  assert.equal(page.text, "word ".repeat(10).trimEnd());
  assert.equal(page.truncated, true);
});

// ------------------------------------------------------------ the cap

Deno.test("extractPage() cuts the text at a word boundary near maxTextChars", () => {
  const body = `<p>${"abcd ".repeat(40)}</p>`;
  const page = extractPage(body, "text/html", { maxTextChars: 42 });
  assert.equal(page.text, "abcd ".repeat(8).trimEnd());
  assert.equal(page.truncated, true);
  const exact = extractPage(`<p>abcd efgh</p>`, "text/html", { maxTextChars: 4 });
  assert.deepEqual([exact.text, exact.truncated], ["abcd", true]);
});

Deno.test("extractPage() cuts mid-word when no boundary is near, never inside a surrogate pair", () => {
  const page = extractPage(`<p>${"x".repeat(100)} tail</p>`, "text/html", { maxTextChars: 50 });
  assert.equal(page.text, "x".repeat(50));
  assert.equal(page.truncated, true);
  const emoji = extractPage("😀".repeat(10), "text/plain", { maxTextChars: 5 });
  assert.equal(emoji.text, "😀😀");
});

Deno.test("extractPage() keeps text that fits and caps at 12,000 by default", () => {
  const fits = extractPage(`<p>${"a".repeat(100)}</p>`, "text/html", { maxTextChars: 100 });
  assert.deepEqual([fits.text.length, fits.truncated], [100, false]);
  const page = html(`<p>${"lorem ipsum ".repeat(5_000)}</p>`);
  assert.equal(DEFAULT_MAX_TEXT_CHARS, 12_000);
  assert.ok(page.text.length <= 12_000 && page.text.length > 11_800);
  assert.equal(page.truncated, true);
  assert.match(page.text, /ipsum$|lorem$/);
});

Deno.test("extractPage() refuses a maxTextChars that is not a positive integer", () => {
  for (const maxTextChars of [0, -1, 1.5, Number.NaN, Infinity]) {
    assert.throws(
      () => extractPage("x", "text/plain", { maxTextChars }),
      (error: unknown) =>
        error instanceof RangeError &&
        /maxTextChars must be a positive integer/.test(error.message),
    );
  }
});

// ------------------------------------------------------------ 1 MiB documents

const MIB = 1024 * 1024;
const fill = (unit: string) => unit.repeat(Math.ceil(MIB / unit.length));

Deno.test("extractPage() reads 1 MiB of deeply nested, never-closed markup", () => {
  const body = fill(`<div class="c"><span>x</span><section><b>y`) + fill("</h2></i>") +
    "<p>end</p>";
  const page = extractPage(body, "text/html");
  assert.equal(page.truncated, true);
  assert.ok(page.text.length <= DEFAULT_MAX_TEXT_CHARS);
  assert.ok(page.text.startsWith("x\ny\nx\ny\n"), page.text.slice(0, 20));
});

Deno.test("extractPage() reads 1 MiB of markup that invites backtracking", () => {
  const documents = [
    fill(`<p a=1 b='2' c="3">w &amp; <!-- c --><![CDATA[d]]></i>`),
    fill("<div>") + fill("</h2>") + "<main>end</main>",
    fill("<"),
    fill("&#&amp&x;&"),
    fill("<a b=c d e='f'"),
    fill("<h1><p>"),
    fill("<!x>").concat("tail"),
    "<script>" + fill("</scrip <!-- </div>") + "</script>after",
  ];
  const texts = documents.map((body) => extractPage(body, "text/html").text);
  assert.ok(texts[0]?.startsWith("w &\nw &\n"));
  assert.equal(texts[1], "end");
  assert.equal(texts[2], "<".repeat(DEFAULT_MAX_TEXT_CHARS));
  assert.ok(texts[3]?.startsWith("&#&&x;&&#&&x;&"));
  assert.equal(texts[4], "");
  assert.equal(texts[5], "");
  assert.equal(texts[6], "tail");
  assert.equal(texts[7], "after");
});
