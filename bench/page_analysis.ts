/**
 * Benchmark: what reading a page costs `analyze-project` before the model is
 * asked, on a typical page (≈ 100 KiB of HTML) and on the largest it reads
 * (1 MiB):
 *
 * - fetch: `fetchPage` (our HTTP/1.1 client on a pinned connection, with
 *   every check) from a server on 127.0.0.1 (`allowLoopback`), against
 *   Deno's own `fetch()` of the same URL reading the same bytes;
 * - extract: `extractPage` (title, description, headings, main text) against
 *   a naive baseline that strips tags with one regex (what the extractor
 *   replaces, without its rules).
 *
 * Prints the median of each over the rounds, and the ratios.
 *
 * Targets, on each page (see `support/targets.ts`; a missed one exits 1):
 * `fetchPage` within 3x Deno's `fetch()` on the largest page, 4x on the
 * typical one (see `FETCH_RATIO`); `extractPage` within 10x the regex
 * strip (its rules cost 6.6x that one regex on the largest page when this
 * target was set; both are linear in the page's size). Its milliseconds per
 * MiB print as information.
 *
 * @module
 */
import { extractPage } from "../supabase/functions/_shared/analysis/extract.ts";
import { fetchPage } from "../supabase/functions/_shared/platform/web/page_fetch.ts";
import { RatioTargets } from "./support/targets.ts";

const ROUNDS = 40;
/**
 * `fetchPage`, at most (÷ Deno's `fetch()` of the same bytes), by page.
 * `fetchPage` opens its own connection for every page, pinned to the
 * address it checked, where `fetch()` reuses a kept-alive one: on the
 * typical page that setup is most of the difference (measured 2.75–3.07x;
 * 1.45–1.95x on the largest).
 */
const FETCH_RATIO: Record<string, number> = { "/typical": 4, "/largest": 3 };
/** `extractPage`, at most (÷ the regex strip of the same page). */
const EXTRACT_RATIO = 10;

/** A shop-like page of about `bytes`: head, navigation, repeated product sections, a script. */
function page(bytes: number): string {
  const head = `<!doctype html><html><head><title>Acme Shop</title>
<meta name="description" content="Hand-made goods, shipped worldwide.">
<style>body{font:16px sans-serif}.card{display:flex}</style>
<script>window.dataLayer=[];function track(e){dataLayer.push(e)}</script></head><body>
<nav><a href="/">Home</a> <a href="/shop">Shop</a> <a href="/about">About</a></nav><main>`;
  const section = (n: number) =>
    `<section class="card"><h2>Product ${n}</h2><p>A sturdy, hand-made item &amp; a favourite
of our ${n * 3} customers &mdash; ships in 2 days.</p><ul><li>Oak</li><li>Linen</li></ul>
<img src="/img/${n}.jpg" alt="Product ${n}"><script>track({id:${n}})</script></section>\n`;
  const parts = [head];
  let size = head.length;
  for (let n = 1; size < bytes; n++) {
    const next = section(n);
    parts.push(next);
    size += next.length;
  }
  parts.push("</main><footer>© Acme</footer></body></html>");
  return parts.join("");
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

async function timed(work: () => Promise<unknown> | unknown): Promise<number> {
  const started = performance.now();
  await work();
  return performance.now() - started;
}

const pages = new Map([["/typical", page(100 * 1024)], ["/largest", page(1024 * 1024 - 2048)]]);
const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (request) => {
  const body = pages.get(new URL(request.url).pathname);
  return body === undefined
    ? new Response("not found", { status: 404 })
    : new Response(body, { headers: { "content-type": "text/html; charset=utf-8" } });
});
const base = `http://127.0.0.1:${server.addr.port}`;

const targets = new RatioTargets();
/** Per page: fetchPage ÷ fetch(), and extractPage ÷ the regex strip. */
const ratios: Array<[string, number, number]> = [];
try {
  for (const [path, html] of pages) {
    const url = `${base}${path}`;
    const ours: number[] = [];
    const theirs: number[] = [];
    const extract: number[] = [];
    const naive: number[] = [];
    let textChars = 0;
    for (let round = 0; round < ROUNDS; round++) {
      ours.push(await timed(() => fetchPage(url, { allowLoopback: true })));
      theirs.push(await timed(async () => (await fetch(url)).text()));
      extract.push(
        await timed(() => {
          textChars = extractPage(html, "text/html").text.length;
        }),
      );
      naive.push(
        await timed(() => html.replace(/<[^>]*>/g, " ").replace(/\s+/g, " ").slice(0, 12_000)),
      );
    }
    const [fetchOurs, fetchDeno, extractOurs, extractNaive] = [ours, theirs, extract, naive].map(
      median,
    );
    console.log(
      `${path} (${Math.round(html.length / 1024)} KiB, ${textChars} chars of text kept):\n` +
        `  fetch    fetchPage ${fetchOurs!.toFixed(2)} ms vs fetch() ${fetchDeno!.toFixed(2)} ms` +
        `  ratio ${(fetchOurs! / fetchDeno!).toFixed(2)}\n` +
        `  extract  extractPage ${extractOurs!.toFixed(2)} ms vs regex strip ` +
        `${extractNaive!.toFixed(2)} ms  ratio ${(extractOurs! / extractNaive!).toFixed(2)}`,
    );
    console.log(
      `  extract  ${(extractOurs! / (html.length / (1024 * 1024))).toFixed(1)} ms per MiB of page`,
    );
    ratios.push([path, fetchOurs! / fetchDeno!, extractOurs! / extractNaive!]);
  }
} finally {
  await server.shutdown();
}
console.log("");
for (const [path, fetchRatio, extractRatio] of ratios) {
  targets.atMost(`${path}: fetchPage ÷ fetch()`, fetchRatio, FETCH_RATIO[path]!);
  targets.atMost(`${path}: extractPage ÷ regex strip`, extractRatio, EXTRACT_RATIO);
}
targets.summarize();
