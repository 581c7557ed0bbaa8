/**
 * Every e-mail as its recipient sees it: the HTML part of each sample
 * (`local/console/mail_samples.ts`, one per e-mail type, rendered by the real
 * templates) loaded in headless Chromium, screenshotted (`mail-<type>.png`)
 * and read back as the reader's text. Nothing the layout writes may show as
 * text — no escape sequence, no template leftover, no markup — and every
 * value that looks like markup (a listing title with `<b>` and `&`) must
 * read exactly as typed. Then the mail viewer's samples pages, served on
 * 127.0.0.1, in the same browser.
 */
import assert from "node:assert/strict";
import { createGateway } from "../../local/gateway.ts";
import {
  MAIL_SAMPLES,
  SAMPLE_LISTING_TITLE,
  SAMPLE_LITERALS,
  SAMPLE_SITE_URL,
} from "../../local/console/mail_samples.ts";
import { EMAIL_TYPES, type EmailType } from "../../shared/notifications.ts";
import { withBrowser } from "../support/browser.ts";
import { testCredentials } from "../support/credentials.ts";
import { createTestDatabase, sqlTest } from "../support/db.ts";
import { testRuntime } from "../support/runtime.ts";

const TYPES = Object.keys(EMAIL_TYPES) as EmailType[];

/** What must never be read in an e-mail: each with why. */
const ARTIFACTS: readonly [RegExp, string][] = [
  [/\\/, "a backslash (an escape sequence such as \\n, \\t, \\\\ or \\u written as text)"],
  [/\$\{|\{\{|\}\}/, "a template placeholder"],
  [/\bundefined\b|\bnull\b|\bNaN\b|\[object Object\]/, "a missing or unformatted value"],
];

/** Markup or entities that show as text: the layout's tags, or a value escaped twice. */
const MARKUP: readonly [RegExp, string][] = [
  [/<p[\s>]|<br|<\/|<a\s|<h1|<li|<ul|<div|<span|<blockquote/i, "a tag shown as text"],
  [/&(lt|gt|amp|quot|nbsp);|&#\d+;/, "an HTML entity shown as text (escaped twice)"],
];

/** `text` without the sample values that are meant to read like markup. */
function withoutLiterals(text: string): string {
  return SAMPLE_LITERALS.reduce((rest, literal) => rest.replaceAll(literal, "«value»"), text);
}

/** Fails naming the sample, the problem and where in `text` it is. */
function assertClean(
  type: string,
  part: string,
  text: string,
  rules: readonly [RegExp, string][],
): void {
  for (const [pattern, what] of rules) {
    const found = pattern.exec(text);
    if (found) {
      const around = text.slice(Math.max(0, found.index - 60), found.index + 60);
      assert.fail(`${type}, ${part}: ${what}: ${JSON.stringify(found[0])} in …${around}…`);
    }
  }
}

/** A link in the rendered e-mail: what it reads and where it goes. */
interface RenderedLink {
  text: string;
  href: string | null;
}

/** What the browser made of an e-mail's HTML. */
interface RenderedPage {
  title: string;
  links: RenderedLink[];
  /** Elements that exist only if a value was parsed as markup. */
  injected: number;
  /** How far the page is wider than the window (a long link that does not wrap). */
  overflow: number;
}

/** Reads the document in the page (a serialised function: no DOM types here). */
const READ_PAGE = `(() => ({
  title: document.title,
  links: [...document.querySelectorAll("a")].map((a) => ({
    text: a.innerText,
    href: a.getAttribute("href"),
  })),
  injected: document.querySelectorAll("b, i, script, table, tools, source").length,
  overflow: document.documentElement.scrollWidth - document.documentElement.clientWidth,
}))()`;

Deno.test("every e-mail type renders in a browser with no escape, leftover or stray markup", async () => {
  const samples = TYPES.map((type) => MAIL_SAMPLES[type]);
  assert.equal(samples.length, 57, "one sample per e-mail type");
  let withTitle = 0;
  await withBrowser(async (browser) => {
    const page = await browser.newPage();
    for (const sample of samples) {
      const { type } = sample;
      const email = sample.render();
      await page.setContent(email.html);
      await page.screenshot(`mail-${type}`);
      const text = await page.innerText("body");
      const read = await page.evaluate<RenderedPage>(READ_PAGE);

      // What the reader sees of the HTML part.
      assertClean(type, "HTML as read", text, ARTIFACTS);
      assertClean(type, "HTML as read", withoutLiterals(text), MARKUP);
      assert.equal(read.injected, 0, `${type}: a value was parsed as markup`);
      assert.ok(read.overflow <= 0, `${type}: ${read.overflow}px wider than the window`);
      assert.equal(read.title, email.subject, `${type}: the subject is the document's title`);
      const heading = email.text.split("\n")[0]!;
      assert.ok(text.startsWith(heading), `${type}: the heading comes first: ${heading}`);

      // The plain part: no artifacts and no entities either.
      assertClean(type, "text part", email.text, ARTIFACTS);
      assertClean(type, "text part", withoutLiterals(email.text), MARKUP);
      assertClean(type, "subject", email.subject, ARTIFACTS);

      // Values that look like markup read as typed, in both parts alike.
      for (const literal of SAMPLE_LITERALS) {
        assert.equal(
          text.includes(literal),
          email.text.includes(literal),
          `${type}: ${JSON.stringify(literal)} reads the same in the HTML and the text part`,
        );
      }
      if (text.includes(SAMPLE_LISTING_TITLE)) withTitle++;

      // A quote reads line by line as in the text part.
      for (const line of email.text.split("\n").filter((l) => l.startsWith("> "))) {
        assert.ok(text.includes(line.slice(2)), `${type}: quoted line ${line}`);
      }

      // The action button: its label and address, as the text part gives them.
      const actions = [...email.text.matchAll(/^([^\n]+): (https?:\/\/\S+)$/gm)];
      if (type !== "admin_message" && type !== "auth_reauthentication") {
        assert.equal(actions.length, 1, `${type}: one action in the text part`);
      }
      for (const [, label, url] of actions) {
        assert.ok(
          read.links.some((link) => link.text.trim() === label && link.href === url),
          `${type}: a button "${label}" to ${url}; links: ${JSON.stringify(read.links)}`,
        );
      }
      for (const link of read.links) {
        assert.ok(
          link.href?.startsWith(SAMPLE_SITE_URL) || link.href?.startsWith("http://127.0.0.1:"),
          `${type}: link ${link.href} goes to the site or the local Auth`,
        );
      }
      assert.deepEqual(page.consoleErrors(), [], `${type}: no console error`);
    }
  });
  assert.ok(withTitle >= 15, `the escaping-heavy title is read in ${withTitle} samples`);
});

sqlTest("the mail viewer's sample pages show every e-mail type in a browser", async () => {
  const db = await createTestDatabase();
  const keys = await testCredentials();
  const runtime = await testRuntime(db, { LOCAL_DEV: "true" });
  const gateway = createGateway({
    functions: new Map(),
    runtime,
    verifyJwt: new Map(),
    jwks: keys.jwks,
    mail: true,
  });
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, gateway);
  const site = `http://127.0.0.1:${server.addr.port}`;
  try {
    await withBrowser(async (browser) => {
      const page = await browser.newPage();
      assert.equal(await page.goto(`${site}/_local/mail`), 200);
      await page.click('.filters a[href="/_local/mail/samples"]');
      assert.equal(page.url(), `${site}/_local/mail/samples`);
      const list = await page.innerText("main");
      for (const type of TYPES) {
        assert.ok(list.includes(type), type);
        assert.ok(list.includes(MAIL_SAMPLES[type].render().subject), `${type}: subject as text`);
      }
      assertClean("samples list", "page", list, ARTIFACTS);
      await page.screenshot("mail-samples-list");

      for (const type of TYPES) {
        assert.equal(await page.goto(`${site}/_local/mail/samples/${type}`), 200, type);
        assert.ok(await page.exists("iframe[sandbox][srcdoc]"), `${type}: the HTML is framed`);
        const shown = await page.innerText("main");
        assert.ok(shown.includes(MAIL_SAMPLES[type].render().text.trim()), `${type}: text part`);
        if (type === "listing_resubmission") await page.screenshot("mail-samples-page");
      }
      // The viewer's CSP allows what the e-mails need (inline styles); nothing was refused.
      assert.deepEqual(page.consoleErrors(), []);
    });
  } finally {
    await server.shutdown();
    await runtime.close();
    await db.close();
  }
});
