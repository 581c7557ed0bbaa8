/**
 * The documentation's links hold: every relative link in README.md and
 * docs/*.md names a file of the repository, and every `#anchor` names a
 * heading of its target page (as GitHub slugs headings). README.md is the
 * entry page and stays short; the reference lives in docs/.
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { dirname, join, normalize, relative } from "node:path";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** README.md and every page of docs/, as paths relative to the repository root. */
function pages(): string[] {
  const docs = [...Deno.readDirSync(join(ROOT, "docs"))]
    .filter((entry) => entry.isFile && entry.name.endsWith(".md"))
    .map((entry) => `docs/${entry.name}`)
    .sort();
  return ["README.md", ...docs];
}

/** `text` without fenced code blocks, where `#` starts no heading and `](…)` is no link. */
function withoutFences(text: string): string {
  return text.replace(/^```[^\n]*\n[\s\S]*?^```[^\n]*$/gm, "");
}

/** `text` without code of either kind, fenced or inline. */
function prose(text: string): string {
  return withoutFences(text).replace(/`[^`\n]*`/g, "");
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
export function slug(heading: string): string {
  return heading.trim().toLowerCase().replace(/[^\p{L}\p{N}_\- ]/gu, "").replaceAll(" ", "-");
}

/** The anchors of a page's headings (repeated headings get -1, -2, … as on GitHub). */
export function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of withoutFences(markdown).split("\n")) {
    const heading = /^#{1,6} (.+)$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const base = slug(heading);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

/** The relative links of a page: `[text](target)` outside code, not http(s) or mailto. */
export function relativeLinks(markdown: string): string[] {
  const links: string[] = [];
  for (const match of prose(markdown).matchAll(/\]\(([^)\s]+)\)/g)) {
    const target = match[1]!;
    if (!/^(https?:|mailto:)/.test(target)) links.push(target);
  }
  return links;
}

Deno.test("slug() and anchorsOf() follow GitHub's heading anchors", () => {
  assert.equal(slug("Deals, escrow and payouts"), "deals-escrow-and-payouts");
  assert.equal(slug("The job: `apa-auto-handover`"), "the-job-apa-auto-handover");
  assert.equal(
    slug("Functions: errors, credentials, rate limits"),
    "functions-errors-credentials-rate-limits",
  );
  assert.deepEqual(
    [...anchorsOf("# A\n## Errors\n```\n# not a heading\n```\n## Errors\n")],
    ["a", "errors", "errors-1"],
  );
  assert.deepEqual(relativeLinks("[a](b.md#c) `[x](y)` [w](https://e.x) [z](#top)"), [
    "b.md#c",
    "#top",
  ]);
});

Deno.test("every relative link in README.md and docs/ resolves, anchors included", async () => {
  const all = pages();
  assert.ok(all.length > 5, "docs/ has the reference pages");
  const broken: string[] = [];
  for (const page of all) {
    const text = await Deno.readTextFile(join(ROOT, page));
    for (const link of relativeLinks(text)) {
      const [path = "", anchor] = link.split("#", 2);
      const target = path === "" ? page : normalize(join(dirname(page), decodeURI(path)));
      if (relative(ROOT, join(ROOT, target)).startsWith("..")) {
        broken.push(`${page}: ${link} leaves the repository`);
        continue;
      }
      let targetText: string | undefined;
      try {
        const info = await Deno.stat(join(ROOT, target));
        if (info.isFile && target.endsWith(".md")) {
          targetText = await Deno.readTextFile(join(ROOT, target));
        }
      } catch {
        broken.push(`${page}: ${link} (no ${target})`);
        continue;
      }
      if (anchor !== undefined) {
        if (targetText === undefined) broken.push(`${page}: ${link} (an anchor into a non-page)`);
        else if (!anchorsOf(targetText).has(anchor)) {
          broken.push(`${page}: ${link} (no heading #${anchor} in ${target})`);
        }
      }
    }
  }
  assert.deepEqual(broken, []);
});

Deno.test("README.md is the entry page: at most 400 lines, and it links every docs/ page", async () => {
  const readme = await Deno.readTextFile(join(ROOT, "README.md"));
  assert.ok(readme.split("\n").length <= 400, `README.md has ${readme.split("\n").length} lines`);
  const linked = new Set(relativeLinks(readme).map((link) => link.split("#")[0]));
  for (const page of pages().slice(1)) assert.ok(linked.has(page), `README.md links ${page}`);
});
