/**
 * The console's page shell: one header with a link to every page, one style
 * sheet, and the small pieces every page uses (times, badges, tables, the
 * result of an action). Every value goes through `html`, which escapes it.
 *
 * @module
 */
import { html, join, type SafeHtml } from "../../supabase/functions/_shared/email/html.ts";

export { html, join, type SafeHtml };

/** Where the console is served. */
export const CONSOLE_PATH = "/_local";

/** Whether the console answers `pathname` (everything under `/_local`). */
export function isConsolePath(pathname: string): boolean {
  return pathname === CONSOLE_PATH || pathname.startsWith(`${CONSOLE_PATH}/`);
}

/** The console's pages, in the header's order. */
export const PAGES = [
  { path: `${CONSOLE_PATH}/functions`, title: "Functions" },
  { path: `${CONSOLE_PATH}/requests`, title: "Requests" },
  { path: `${CONSOLE_PATH}/webhooks`, title: "Webhooks" },
  { path: `${CONSOLE_PATH}/jobs`, title: "Jobs" },
  { path: `${CONSOLE_PATH}/deals`, title: "Deals" },
  { path: `${CONSOLE_PATH}/access`, title: "Access" },
  { path: `${CONSOLE_PATH}/conversations`, title: "Conversations" },
  { path: `${CONSOLE_PATH}/mail`, title: "Mail" },
] as const;

const STYLE = html`<style>
  body { font: 14px/1.45 system-ui, sans-serif; margin: 0; color: #1f2328; background: #f6f8fa; }
  header { background: #1f2328; color: #fff; padding: 10px 20px; display: flex; gap: 18px;
    align-items: baseline; flex-wrap: wrap; }
  header a { color: #9ecbff; text-decoration: none; }
  header a[aria-current="page"] { color: #fff; font-weight: 600; text-decoration: underline; }
  header .brand { font-size: 16px; font-weight: 600; color: #fff; margin-right: 8px; }
  main { padding: 16px 20px; max-width: 1400px; }
  h1 { font-size: 20px; margin: 0 0 12px; }
  h2 { font-size: 16px; margin: 20px 0 8px; }
  h3 { font-size: 14px; margin: 14px 0 6px; }
  table { border-collapse: collapse; width: 100%; background: #fff; margin: 0 0 12px; }
  th, td { text-align: left; padding: 5px 10px; border-bottom: 1px solid #d0d7de;
    vertical-align: top; }
  th { background: #eaeef2; font-weight: 600; }
  tr:hover td { background: #f3f8ff; }
  td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
  .time { white-space: nowrap; color: #57606a; }
  a { color: #0969da; }
  code, pre { font: 12.5px/1.4 ui-monospace, SFMono-Regular, Menlo, monospace; }
  pre { white-space: pre-wrap; overflow-wrap: anywhere; background: #fff; padding: 10px 14px;
    border: 1px solid #d0d7de; margin: 0 0 12px; }
  details { background: #fff; border: 1px solid #d0d7de; padding: 6px 12px; margin: 0 0 8px; }
  summary { cursor: pointer; }
  .badge { font-size: 12px; padding: 1px 7px; border-radius: 10px; background: #eaeef2;
    white-space: nowrap; }
  .ok { background: #dafbe1; color: #116329; }
  .warn { background: #fff8c5; color: #633c01; }
  .bad { background: #ffebe9; color: #82071e; }
  .muted { color: #57606a; }
  .notice { border: 1px solid #d0d7de; background: #fff; padding: 10px 14px; margin: 0 0 14px;
    border-left: 4px solid #0969da; }
  .notice.bad { border-left-color: #cf222e; background: #fff; color: inherit; }
  .notice.ok { border-left-color: #1a7f37; background: #fff; color: inherit; }
  form.inline { display: inline; margin: 0; }
  button { font: inherit; padding: 3px 10px; cursor: pointer; }
  input, select, textarea { font: inherit; }
  textarea { width: 100%; box-sizing: border-box; }
  .filters { display: flex; gap: 10px; margin: 0 0 12px; flex-wrap: wrap; align-items: baseline; }
  .cards { display: flex; gap: 10px; flex-wrap: wrap; margin: 0 0 14px; }
  .card { background: #fff; border: 1px solid #d0d7de; padding: 8px 14px; min-width: 110px; }
  .card b { display: block; font-size: 20px; }
  svg { background: #fff; border: 1px solid #d0d7de; }
  .status { font-size: 12px; padding: 1px 6px; border-radius: 10px; background: #eaeef2; }
  .status-captured { background: #dafbe1; color: #116329; }
  .status-sent { background: #ddf4ff; color: #0a3069; }
  .status-failed { background: #ffebe9; color: #82071e; }
  .status-pending { background: #fff8c5; color: #633c01; }
  .status-suppressed { background: #eaeef2; color: #57606a; }
  dl { display: grid; grid-template-columns: max-content 1fr; gap: 4px 16px; background: #fff;
    padding: 12px 16px; border: 1px solid #d0d7de; margin: 0 0 16px; }
  dt { font-weight: 600; color: #57606a; }
  dd { margin: 0; overflow-wrap: anywhere; }
  table.facts th { width: 13em; white-space: nowrap; }
  .facts pre, .timeline pre { margin: 0; padding: 6px 10px; }
  .timeline td:nth-child(4) { width: 40%; }
  iframe { width: 100%; height: 70vh; border: 1px solid #d0d7de; background: #fff;
    resize: vertical; }
</style>`;

/** A whole console page: the header (with `current` marked) and `body`. */
export function page(title: string, current: string | null, body: SafeHtml): string {
  const links = PAGES.map((p) =>
    p.path === current
      ? html`<a href="${p.path}" aria-current="page">${p.title}</a>`
      : html`<a href="${p.path}">${p.title}</a>`
  );
  return html`
    <!doctype html>
    <html lang="en">
      <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>${title} — Local console</title>
    ${STYLE}
      </head>
      <body>
        <header><a class="brand" href="${CONSOLE_PATH}/">Local console</a>${join(
          links,
          html`
          `,
        )}
    <a href="${CONSOLE_PATH}/openapi.json">OpenAPI</a></header>
        <main>
    <h1>${title}</h1>
    ${body}
        </main>
      </body>
    </html>
  `.toString();
}

/** `2026-11-23 10:00:01`, in a `<time>` (UTC); a dash for none. */
export function time(value: Date | string | null | undefined): SafeHtml {
  if (value === null || value === undefined) return html`<span class="muted">—</span>`;
  const iso = typeof value === "string" ? value : value.toISOString();
  return html`<time class="time" datetime="${iso}">${iso.slice(0, 19).replace("T", " ")}</time>`;
}

/** A coloured badge: `ok`, `warn` or `bad` by what the value means. */
export function badge(value: string, tone: "ok" | "warn" | "bad" | null = null): SafeHtml {
  return tone
    ? html`<span class="badge ${tone}">${value}</span>`
    : html`<span class="badge">${value}</span>`;
}

/** The tone of an HTTP status. */
export function statusTone(status: number): "ok" | "warn" | "bad" {
  return status < 400 ? "ok" : status < 500 ? "warn" : "bad";
}

/** A table with `headers` and `rows` (each row's cells already built); `empty` when none. */
export function table(headers: readonly string[], rows: SafeHtml[][], empty: string): SafeHtml {
  if (rows.length === 0) return html`<p class="muted">${empty}</p>`;
  return html`
    <table>
      <thead>
        <tr>${headers.map((h) => html`<th>${h}</th>`)}</tr>
      </thead>
      <tbody>
    ${join(rows.map((cells) => html`<tr>${cells.map((c) => html`<td>${c}</td>`)}</tr>`))}
      </tbody>
    </table>
  `;
}

/** The outcome of an action (replay, run now) shown at the top of a page. */
export function notice(tone: "ok" | "bad" | null, body: SafeHtml | string): SafeHtml {
  return html`<div class="notice ${tone ?? ""}" role="status">${body}</div>`;
}

/** Milliseconds as `812 ms` / `4.2 s`; a dash for none. */
export function duration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return "—";
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}

/** Pretty JSON of a value for a `<pre>`. */
export function prettyJson(value: unknown): string {
  return JSON.stringify(value, null, 2) ?? "undefined";
}

/**
 * The head of a list page filtered by one query parameter (`?state=`,
 * `?status=`): a card per value with its count (the selected one underlined),
 * then a line saying what is shown, with a link back to everything and to the
 * same list as JSON.
 */
export function filterCards(options: {
  /** The list's path (`/_local/deals`). */
  path: string;
  /** The query parameter (`state`, `status`). */
  param: string;
  /** Each value with its count, in the order the cards show. */
  counts: Record<string, number>;
  /** The value filtered on, or null for everything. */
  selected: string | null;
  /** What "everything" is called: "all states", "all statuses", … */
  everything: string;
}): SafeHtml {
  const { path, param, counts, selected, everything } = options;
  const cards = Object.entries(counts).map(([value, n]) =>
    html`<a class="card" href="${path}?${param}=${value}">${
      value === selected ? html`<b>${n}</b><u>${value}</u>` : html`<b>${n}</b>${value}`
    }</a>`
  );
  const query = selected ? `?${param}=${selected}` : "";
  const Everything = everything.charAt(0).toUpperCase() + everything.slice(1);
  return html`<div class="cards">${cards}</div>
<p class="filters">${
    selected ? html`Showing <b>${selected}</b> · <a href="${path}">${everything}</a>` : Everything
  } ·
<a href="${path}.json${query}">JSON</a></p>`;
}
