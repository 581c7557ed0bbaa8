import assert from "node:assert/strict";
import {
  absoluteLink,
  type EmailContent,
  renderEmail,
} from "../../../../supabase/functions/_shared/email/render.ts";
import { htmlToText } from "../../../../supabase/functions/_shared/email/html.ts";

const SITE = "http://localhost:5173";

/** The lines a reader sees of an HTML part (indentation and blank lines dropped). */
function readable(markup: string): string[] {
  return htmlToText(markup).split("\n").map((line) => line.trim()).filter(Boolean);
}

/** Every part the layout has, with values that need escaping. */
const FULL: EmailContent = {
  subject: "Your listing needs changes",
  heading: 'Your listing "Tom & Jerry <b>SaaS</b>" needs changes',
  paragraphs: ["We reviewed it.\nThe reviewer wrote:", "Second paragraph."],
  quote: "The screenshots are missing.\nPlease add the revenue <table> & resubmit.",
  code: "123456",
  items: [
    { title: "Fish & Chips <i>Ltd</i>", url: "/listings/1", detail: "saas · $1,500.00" },
    { title: "Payment pi_123" },
  ],
  action: { label: "Edit and resubmit", url: "/listings/1/edit" },
  footer: "Reply to this e-mail if something is unclear.",
};

Deno.test("renderEmail() HTML reads as the content, with no stray backslash or markup", () => {
  const rendered = renderEmail(FULL, SITE);
  // What a reader sees of the HTML part: the layout's markup leaves nothing
  // behind (a `\n` written as `\\n` in a template shows as a literal "\n").
  assert.deepEqual(
    readable(rendered.html),
    [
      'Your listing "Tom & Jerry <b>SaaS</b>" needs changes',
      "We reviewed it.",
      "The reviewer wrote:",
      "Second paragraph.",
      "The screenshots are missing.",
      "Please add the revenue <table> & resubmit.",
      "123456",
      "- Fish & Chips <i>Ltd</i> (http://localhost:5173/listings/1)",
      "saas · $1,500.00",
      "- Payment pi_123",
      "Edit and resubmit (http://localhost:5173/listings/1/edit)",
      "If the button does not work, open this address: http://localhost:5173/listings/1/edit",
      "Reply to this e-mail if something is unclear.",
    ],
  );
  assert.ok(!rendered.html.includes("\\"), "the layout writes no backslash");
  assert.ok(!rendered.text.includes("\\"), "nor does the text part");
});

Deno.test("renderEmail() keeps a backslash a value has, escaped once", () => {
  const rendered = renderEmail({
    subject: "Path",
    heading: "Path",
    paragraphs: ["C:\\new\\table"],
    quote: "a\\nb",
    action: { label: "Open", url: "/x" },
  }, SITE);
  assert.equal(rendered.html.split("\\").length - 1, 3, "the values' three backslashes, no more");
  assert.ok(
    rendered.html.includes('<p style="line-height:1.5;margin:0 0 12px">C:\\new\\table</p>'),
  );
  assert.ok(rendered.text.includes("> a\\nb\n"));
});

Deno.test("renderEmail() text part: quote, code, items, action and footer in order", () => {
  const rendered = renderEmail(FULL, SITE);
  assert.equal(rendered.subject, FULL.subject);
  assert.equal(
    rendered.text,
    [
      'Your listing "Tom & Jerry <b>SaaS</b>" needs changes',
      "",
      "We reviewed it.\nThe reviewer wrote:",
      "",
      "Second paragraph.",
      "",
      "> The screenshots are missing.",
      "> Please add the revenue <table> & resubmit.",
      "",
      "123456",
      "",
      "- Fish & Chips <i>Ltd</i> (http://localhost:5173/listings/1)",
      "  saas · $1,500.00",
      "- Payment pi_123",
      "",
      "Edit and resubmit: http://localhost:5173/listings/1/edit",
      "",
      "Reply to this e-mail if something is unclear.",
      "",
    ].join("\n"),
  );
});

Deno.test("renderEmail() escapes every value and keeps unsafe links out of href", () => {
  const rendered = renderEmail({
    subject: "<script>alert(1)</script>",
    heading: "A & B",
    paragraphs: ["\"quoted\" 'single' `tick`"],
    action: { label: "Go", url: "javascript:alert(1)" },
    items: [{ title: "x", url: "data:text/html,hi" }],
  }, SITE);
  assert.doesNotMatch(rendered.html, /<script/);
  assert.ok(rendered.html.includes("<title>&lt;script&gt;alert(1)&lt;/script&gt;</title>"));
  assert.ok(rendered.html.includes("A &amp; B"));
  assert.ok(rendered.html.includes("&quot;quoted&quot; &#39;single&#39; &#96;tick&#96;"));
  assert.ok(rendered.html.includes('<a href="#" style='), "a javascript: action links nowhere");
  assert.ok(rendered.html.includes('<a href="#">x</a>'), "a data: item links nowhere");
});

Deno.test("absoluteLink() puts frontend paths on the site and keeps the rest", () => {
  assert.equal(absoluteLink("/deals/1", SITE), "http://localhost:5173/deals/1");
  assert.equal(absoluteLink("//evil.example/x", SITE), "//evil.example/x");
  assert.equal(absoluteLink("https://a.example/b", SITE), "https://a.example/b");
  assert.equal(absoluteLink("/deals/1", undefined), "/deals/1");
});
