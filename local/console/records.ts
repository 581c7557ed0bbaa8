/**
 * The pieces of the console's list and record pages (deals, access
 * requests, conversations, the webhook ledger): the list filter and the id
 * checks (400 `invalid_input`), timestamps read at the database's precision
 * (microseconds, so a timeline sorts as the database ordered it), a
 * timeline's entries and table, and the facts table.
 *
 * @module
 */
import { HttpError } from "../../supabase/functions/_shared/platform/errors.ts";
import { badge, html, type SafeHtml, table } from "./layout.ts";

/** A uuid, as the item pages take one. */
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * A list page's filter: query parameter `name` of `url`, null when absent or
 * empty; 400 `invalid_input` when it is not one of `choices`.
 */
export function choiceParam<T extends string>(
  url: URL,
  name: string,
  choices: readonly T[],
): T | null {
  const value = url.searchParams.get(name) || null;
  if (value === null) return null;
  const known = choices.find((c) => c === value);
  if (known === undefined) {
    throw new HttpError(
      400,
      "invalid_input",
      `${name} must be one of ${choices.join(", ")}, not "${value}"`,
    );
  }
  return known;
}

/** `id` when it is a uuid; else 400 `invalid_input`, saying it is not `what` ("a deal id"). */
export function uuidParam(id: string, what: string): string {
  if (!UUID.test(id)) throw new HttpError(400, "invalid_input", `"${id}" is not ${what}`);
  return id;
}

/**
 * SQL for timestamp `column` as UTC ISO 8601 text with its microseconds
 * (`2026-11-28T05:38:19.031174Z`; null stays null): the text sorts in time
 * order, to the database's precision, where a `Date` would keep milliseconds.
 */
export function utc(column: string): string {
  return `to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;
}

/** One entry of a record's timeline. */
export interface TimelineEntry {
  /** When, as {@linkcode utc} writes it. */
  at: string;
  /** What kind of record it comes from (`request`, `decision`, `notice`, `message`, …). */
  source: string;
  what: string;
  detail: string | null;
  /** A console page the entry links to (the conversation, the access request). */
  link?: string | null;
}

/** Sorts `entries` oldest first; entries at the same instant keep the order they were added in. */
export function inTimeOrder(entries: TimelineEntry[]): TimelineEntry[] {
  return entries.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
}

/** A page's facts: one row per name and value. */
export function factsTable(facts: Array<[string, SafeHtml | string]>): SafeHtml {
  return html`
    <table class="facts">
      <tbody>${facts.map(([k, v]) =>
        html`
          <tr>
            <th>${k}</th>
            <td>${v}</td>
          </tr>
        `
      )}</tbody>
    </table>
  `;
}

/** `2026-11-28 05:58:41.031` of a {@linkcode utc} time, in a `<time>`: a timeline's sub-second order shows. */
function preciseTime(at: string): SafeHtml {
  return html`<time class="time" datetime="${at}">${at.slice(0, 23).replace("T", " ")}</time>`;
}

/**
 * A timeline as a table: when (to the millisecond), source, what (a link when
 * it has one), detail in a `<pre>`.
 */
export function timelineTable(entries: TimelineEntry[], empty: string): SafeHtml {
  const rows = entries.map((e) => [
    preciseTime(e.at),
    badge(e.source),
    e.link ? html`<a href="${e.link}">${e.what}</a>` : html`${e.what}`,
    e.detail ? html`<pre>${e.detail}</pre>` : html``,
  ]);
  return html`<div class="timeline">${
    table(["When (UTC)", "Source", "What", "Detail"], rows, empty)
  }</div>`;
}
