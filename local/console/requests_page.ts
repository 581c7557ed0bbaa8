/**
 * The Requests page: the newest requests the gateway served (from the log
 * tap, `log_tap.ts`), newest first, filterable by status class or code; a
 * request's page shows its log lines in the order written.
 *
 * @module
 */
import { HttpError } from "../../supabase/functions/_shared/platform/errors.ts";
import type { ConsoleContext, Route } from "./types.ts";
import { REQUEST_LIMIT, type RequestRecord } from "./log_tap.ts";
import {
  badge,
  CONSOLE_PATH,
  duration,
  html,
  page,
  prettyJson,
  statusTone,
  table,
  time,
} from "./layout.ts";

const PATH = `${CONSOLE_PATH}/requests`;

/** `?status=` as a filter: a class (`2`, `4`, `5`, or `4xx`) or one code (`404`). */
function statusFilter(value: string | null): number | null {
  if (value === null || value === "") return null;
  const match = /^([1-5])(?:xx)?$|^([1-5]\d\d)$/i.exec(value);
  if (!match) {
    throw new HttpError(
      400,
      "invalid_input",
      `status must be a class (2xx, 4xx, 5xx) or a code (404), not "${value}"`,
    );
  }
  return Number(match[1] ?? match[2]);
}

/** The page's routes. */
export function requestsRoutes({ tap }: ConsoleContext): Route[] {
  return [
    {
      method: "GET",
      pattern: /^\/requests(\.json)?\/?$/,
      handle: (request, match) => {
        const filter = statusFilter(request.url.searchParams.get("status"));
        const records = tap.requests({ status: filter });
        return Promise.resolve(
          match[1] ? { json: { requests: records } } : { html: listPage(records, filter) },
        );
      },
    },
    {
      method: "GET",
      pattern: /^\/requests\/([^/]{1,100}?)(\.json)?$/,
      handle: (_request, match) => {
        const id = decodeURIComponent(match[1]!);
        const found = tap.request(id);
        if (!found) {
          throw new HttpError(
            404,
            "not_found",
            `No request "${id}" among the newest ${REQUEST_LIMIT} the console kept`,
          );
        }
        if (match[2]) {
          return Promise.resolve({
            json: { ...found, lines: found.lines.map((l) => JSON.parse(l.line)) },
          });
        }
        return Promise.resolve({ html: requestPage(id, found.record, found.lines) });
      },
    },
  ];
}

const FILTERS: Array<[string, string]> = [
  ["", "All"],
  ["2xx", "2xx"],
  ["4xx", "4xx"],
  ["5xx", "5xx"],
];

function listPage(records: RequestRecord[], filter: number | null): string {
  const current = filter === null ? "" : filter <= 5 ? `${filter}xx` : String(filter);
  const links = FILTERS.map(([value, label]) =>
    value === current
      ? html`<b>${label}</b>`
      : html`<a href="${PATH}${value ? `?status=${value}` : ""}">${label}</a>`
  );
  const rows = records.map((r) => [
    time(r.at),
    html`<code>${r.function}</code>`,
    badge(String(r.status), statusTone(r.status)),
    html`${duration(r.durationMs)}`,
    html`${r.caller}`,
    html`${r.code ?? ""}`,
    html`<a href="${PATH}/${encodeURIComponent(r.requestId)}"><code>${r.requestId}</code></a>`,
  ]);
  return page(
    "Requests",
    PATH,
    html`<form class="filters" method="get" action="${PATH}">Status: ${links}
<label>or code <input name="status" size="5" value="${current}"></label><button>Filter</button>
<a href="${PATH}.json${current ? `?status=${current}` : ""}">JSON</a></form>
${
      table(
        ["Time", "Function", "Status", "Duration", "Caller", "Code", "Request id"],
        rows,
        filter === null
          ? "No requests yet: call a function (the Functions page has a form). The list is read from the log, so it stays empty with LOG_LEVEL above info."
          : "No request with that status among the newest kept.",
      )
    }
<p class="muted">The newest ${REQUEST_LIMIT} requests since the stack started, newest first.</p>`,
  );
}

function requestPage(
  id: string,
  record: RequestRecord | null,
  lines: Array<{ level: string; line: string }>,
): string {
  const summary = record
    ? html`<p>${time(record.at)} · <code>${record.function}</code> · ${record.method} ·
${badge(String(record.status), statusTone(record.status))} · ${duration(record.durationMs)} ·
caller ${record.caller}${
      record.code
        ? html`
          · code <code>${record.code}</code>
        `
        : ""
    }</p>`
    : html`<p class="muted">Still running, or it ended without a request line.</p>`;
  const shown = lines.map((l) => {
    let text = l.line;
    try {
      text = prettyJson(JSON.parse(l.line));
    } catch {
      // Kept as written.
    }
    return html`
      <h3>${badge(l.level, l.level === "error" ? "bad" : l.level === "warn" ? "warn" : null)}</h3>
      <pre>${text}</pre>
    `;
  });
  return page(
    `Request ${id}`,
    PATH,
    html`${summary}<p><a href="${PATH}">All requests</a> ·
<a href="${PATH}/${encodeURIComponent(id)}.json">JSON</a></p>
<h2>Log lines (${lines.length})</h2>
${shown}`,
  );
}
