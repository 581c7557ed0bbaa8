/**
 * The Access page: requests for access to confidential (nda) listings
 * (`public.listing_access_requests`, the listing access migration's state
 * machine), read-only — how many are in each status, the newest requests (of
 * one status, or all), and one request's facts (its NDA acceptance, where it
 * came from, the decision, the revocation) with a timeline merging the
 * request, its decision and revocation, every notice the queue holds about it
 * (`public.notice_queue`: queued, then sent, dropped or failed) and the
 * conversation its approval opened.
 *
 * Also the pieces the Conversations page shares: who a user is to a request
 * or conversation, and the notice-queue entries.
 *
 * @module
 */
import { ACCESS_REQUEST_STATUSES } from "../../shared/listing_access.ts";
import { HttpError } from "../../supabase/functions/_shared/platform/errors.ts";
import type { Sql } from "../../supabase/functions/_shared/platform/db.ts";
import type { ConsoleContext, Route } from "./types.ts";
import {
  choiceParam,
  factsTable,
  inTimeOrder,
  type TimelineEntry,
  timelineTable,
  utc,
  uuidParam,
} from "./records.ts";
import {
  badge,
  CONSOLE_PATH,
  filterCards,
  html,
  page,
  type SafeHtml,
  table,
  time,
} from "./layout.ts";

const PATH = `${CONSOLE_PATH}/access`;
/** The most access requests the list shows. */
export const ACCESS_REQUESTS_SHOWN = 100;

/** The two parties of a request or a conversation. */
export interface Parties {
  buyer_id: string;
  seller_id: string;
}

/**
 * Who `userId` is to `parties`, with their e-mail: `the buyer (b@…)`, `the
 * seller (…)`, or `an admin (…)` for anyone else (only admins act on or are
 * told about others' requests and conversations); `no one` for null.
 */
export function who(parties: Parties, userId: string | null, email: string | null): string {
  if (userId === null) return "no one";
  const role = userId === parties.buyer_id
    ? "the buyer"
    : userId === parties.seller_id
    ? "the seller"
    : "an admin";
  return `${role} (${email ?? userId})`;
}

/** A `notice_queue` row, as the timelines read it. */
export interface NoticeRow {
  id: string;
  kind: string;
  user_id: string;
  email: string | null;
  status: string;
  attempts: number;
  last_error: string | null;
  outcome: string | null;
  due_at: string;
  created_at: string;
  done_at: string | null;
}

/** Every `notice_queue` row about one of `subjects`, oldest first. */
export async function noticesAbout(sql: Sql, subjects: string[]): Promise<NoticeRow[]> {
  return await sql.query<NoticeRow>(
    `select q.id, q.kind, q.user_id, u.email, q.status, q.attempts, q.last_error, q.outcome,
       ${utc("q.due_at")} as due_at, ${utc("q.created_at")} as created_at,
       ${utc("q.done_at")} as done_at
     from public.notice_queue q
     left join auth.users u on u.id = q.user_id
     where q.subject_id = any($1::uuid[])
     order by q.created_at, q.id`,
    [subjects],
  );
}

/**
 * A notice's timeline entries: queued (when the change that owes it was
 * made; while pending, when it is due), and sent, dropped or failed with its
 * outcome.
 */
export function noticeEntries(parties: Parties, notices: NoticeRow[]): TimelineEntry[] {
  const entries: TimelineEntry[] = [];
  for (const n of notices) {
    const to = who(parties, n.user_id, n.email);
    const retries = n.attempts > 0 ? `${n.attempts} failed attempt(s)` : null;
    entries.push({
      at: n.created_at,
      source: "notice",
      what: `Notice ${n.kind} to ${to} queued`,
      detail: n.status === "pending"
        ? [`pending, due ${n.due_at.slice(0, 19).replace("T", " ")}`, retries, n.last_error]
          .filter(Boolean).join("\n")
        : null,
      link: null,
    });
    if (n.done_at) {
      entries.push({
        at: n.done_at,
        source: "notice",
        what: `Notice ${n.kind} to ${to} ${n.status}`,
        detail: [n.outcome, retries, n.last_error].filter(Boolean).join("\n") || null,
        link: null,
      });
    }
  }
  return entries;
}

/** The tone of a request status's badge. */
function statusTone(status: string): "ok" | "warn" | "bad" | null {
  if (status === "approved") return "ok";
  if (status === "pending") return "warn";
  if (status === "declined" || status === "revoked") return "bad";
  return null;
}

/** An access request as the pages show it. */
interface AccessRow extends Parties {
  id: string;
  listing_id: string;
  title: string | null;
  buyer: string | null;
  seller: string | null;
  status: string;
  message: string | null;
  nda_version: string;
  nda_sha256: string;
  nda_accepted_at: string;
  client_address: string | null;
  expires_at: string;
  /** Pending but past `expires_at`: it counts as expired until the daily run marks it. */
  lapsed: boolean;
  decided_at: string | null;
  decided_by: string | null;
  decided_by_email: string | null;
  decision_reason: string | null;
  revoked_at: string | null;
  revoked_by: string | null;
  revoked_by_email: string | null;
  revoke_reason: string | null;
  created_at: string;
  updated_at: string;
  /** The conversation of the request's listing and buyer, if there is one. */
  conversation_id: string | null;
}

const REQUEST_COLUMNS = `r.id, r.listing_id, l.title, r.buyer_id, b.email as buyer, r.seller_id,
  s.email as seller, r.status, r.message, r.nda_version, r.nda_sha256,
  ${utc("r.nda_accepted_at")} as nda_accepted_at, a.client_address,
  ${utc("r.expires_at")} as expires_at, (r.status = 'pending' and r.expires_at <= now()) as lapsed,
  ${utc("r.decided_at")} as decided_at, r.decided_by, d.email as decided_by_email,
  r.decision_reason, ${utc("r.revoked_at")} as revoked_at, r.revoked_by,
  v.email as revoked_by_email, r.revoke_reason, ${utc("r.created_at")} as created_at,
  ${utc("r.updated_at")} as updated_at, c.id as conversation_id`;
const REQUEST_JOINS = `from public.listing_access_requests r
  left join public.listings l on l.id = r.listing_id
  left join auth.users b on b.id = r.buyer_id
  left join auth.users s on s.id = r.seller_id
  left join auth.users d on d.id = r.decided_by
  left join auth.users v on v.id = r.revoked_by
  left join public.nda_acceptance_addresses a on a.request_id = r.id
  left join public.conversations c on c.listing_id = r.listing_id and c.buyer_id = r.buyer_id`;

/** The page's routes. */
export function accessRoutes(context: ConsoleContext): Route[] {
  return [
    {
      method: "GET",
      pattern: /^\/access(\.json)?\/?$/,
      handle: async (request, match) => {
        const status = choiceParam(request.url, "status", ACCESS_REQUEST_STATUSES);
        const sql = context.db();
        const [counts, requests] = await Promise.all([
          sql.query<{ status: string; count: number }>(
            `select status, count(*)::int as count from public.listing_access_requests
             group by status`,
          ),
          sql.query<AccessRow>(
            `select ${REQUEST_COLUMNS} ${REQUEST_JOINS}
             where $1::text is null or r.status = $1::text
             order by r.created_at desc, r.id limit ${ACCESS_REQUESTS_SHOWN}`,
            [status],
          ),
        ]);
        const byStatus = Object.fromEntries(
          ACCESS_REQUEST_STATUSES.map((s) => [s, counts.find((c) => c.status === s)?.count ?? 0]),
        );
        if (match[1]) return { json: { counts: byStatus, requests } };
        return { html: listPage(byStatus, requests, status) };
      },
    },
    {
      method: "GET",
      pattern: /^\/access\/([^/]+?)(\.json)?$/,
      handle: async (_request, match) => {
        const id = uuidParam(match[1]!, "an access request id");
        const sql = context.db();
        const row = await sql.maybeOne<AccessRow>(
          `select ${REQUEST_COLUMNS} ${REQUEST_JOINS} where r.id = $1`,
          [id],
        );
        if (!row) throw new HttpError(404, "not_found", `No access request "${id}"`);
        const entries = await timelineOf(sql, row);
        if (match[2]) return { json: { request: row, timeline: entries } };
        return { html: requestPage(row, entries) };
      },
    },
  ];
}

/** What the move out of pending was: a revoked request had been approved. */
function decisionOf(row: AccessRow): string {
  return row.status === "revoked" ? "approved" : row.status;
}

/** The decision in words: `Approved by the seller (…)`, `Expired (no answer in time)`. */
function decisionText(row: AccessRow): string {
  const decision = decisionOf(row);
  const label = decision.charAt(0).toUpperCase() + decision.slice(1);
  if (decision === "expired" && row.decided_by === null) {
    return `${label}: no answer before ${row.expires_at.slice(0, 16).replace("T", " ")} UTC`;
  }
  return row.decided_by === null
    ? `${label} by the service connection`
    : `${label} by ${who(row, row.decided_by, row.decided_by_email)}`;
}

/** Every dated fact about access request `row`, oldest first. */
async function timelineOf(sql: Sql, row: AccessRow): Promise<TimelineEntry[]> {
  const [notices, conversation] = await Promise.all([
    noticesAbout(sql, [row.id]),
    row.conversation_id === null ? Promise.resolve(null) : sql.maybeOne<{ created_at: string }>(
      `select ${utc("created_at")} as created_at from public.conversations where id = $1`,
      [row.conversation_id],
    ),
  ]);
  const entries: TimelineEntry[] = [
    {
      at: row.created_at,
      source: "request",
      what: `Requested by ${
        who(row, row.buyer_id, row.buyer)
      }, accepting NDA version ${row.nda_version}`,
      detail: row.message,
      link: null,
    },
  ];
  if (row.decided_at) {
    entries.push({
      at: row.decided_at,
      source: "decision",
      what: decisionText(row),
      detail: row.decision_reason,
      link: null,
    });
  }
  if (row.revoked_at) {
    entries.push({
      at: row.revoked_at,
      source: "revocation",
      what: row.revoked_by === null
        ? "Access revoked by the service connection"
        : `Access revoked by ${who(row, row.revoked_by, row.revoked_by_email)}`,
      detail: row.revoke_reason,
      link: null,
    });
  }
  if (conversation && row.conversation_id) {
    entries.push({
      at: conversation.created_at,
      source: "conversation",
      what: "Conversation of this listing and buyer started",
      detail: null,
      link: `${CONSOLE_PATH}/conversations/${row.conversation_id}`,
    });
  }
  entries.push(...noticeEntries(row, notices));
  return inTimeOrder(entries);
}

function statusBadge(row: AccessRow): SafeHtml {
  return row.lapsed
    ? html`${badge(row.status, statusTone(row.status))} ${badge("lapsed", "bad")}`
    : badge(row.status, statusTone(row.status));
}

function listPage(
  counts: Record<string, number>,
  requests: AccessRow[],
  status: string | null,
): string {
  const rows = requests.map((r) => [
    time(r.created_at),
    html`<a href="${PATH}/${r.id}"><code>${r.id.slice(0, 8)}</code></a>`,
    html`${r.title ?? ""}`,
    html`${r.buyer ?? ""}`,
    html`${r.seller ?? ""}`,
    statusBadge(r),
    html`${r.nda_version}`,
    r.status === "pending" ? time(r.expires_at) : html`<span class="muted">—</span>`,
  ]);
  return page(
    "Access requests",
    PATH,
    html`${
      filterCards({
        path: PATH,
        param: "status",
        counts,
        selected: status,
        everything: "all statuses",
      })
    }
${
      table(
        ["Requested", "Request", "Listing", "Buyer", "Seller", "Status", "NDA", "Expires"],
        rows,
        status ? `No access request is ${status}.` : "No access requests yet.",
      )
    }
<p class="muted">The newest ${ACCESS_REQUESTS_SHOWN} requests to see a confidential listing.
Expires: when a pending request lapses without an answer.</p>`,
  );
}

function requestPage(row: AccessRow, entries: TimelineEntry[]): string {
  const dash = html`<span class="muted">—</span>`;
  const facts: Array<[string, SafeHtml | string]> = [
    ["Status", statusBadge(row)],
    ["Listing", html`${row.title ?? "—"} <code class="muted">${row.listing_id}</code>`],
    ["Buyer", row.buyer ?? row.buyer_id],
    ["Seller", row.seller ?? row.seller_id],
    ["Message", row.message ? html`<pre>${row.message}</pre>` : dash],
    ["NDA version", row.nda_version],
    ["NDA sha256", html`<code>${row.nda_sha256}</code>`],
    ["NDA accepted at", time(row.nda_accepted_at)],
    ["Client address", row.client_address ? html`<code>${row.client_address}</code>` : dash],
    ["Expires", time(row.expires_at)],
    ["Decision", row.decided_at ? html`${decisionText(row)} · ${time(row.decided_at)}` : dash],
    ["Decision reason", row.decision_reason ?? dash],
    [
      "Revoked",
      row.revoked_at
        ? html`by ${
          row.revoked_by === null
            ? "the service connection"
            : who(row, row.revoked_by, row.revoked_by_email)
        } · ${time(row.revoked_at)}`
        : dash,
    ],
    ["Revoke reason", row.revoke_reason ?? dash],
    [
      "Conversation",
      row.conversation_id
        ? html`<a href="${CONSOLE_PATH}/conversations/${row.conversation_id}"><code>${row.conversation_id}</code></a>`
        : dash,
    ],
    ["Requested", time(row.created_at)],
    ["Updated", time(row.updated_at)],
  ];
  return page(
    `Access request ${row.id}`,
    PATH,
    html`
      ${factsTable(facts)}
      <p><a href="${PATH}">All access requests</a> · <a href="${PATH}/${row.id}.json">JSON</a></p>
      <h2>Timeline</h2>
      ${timelineTable(entries, "Nothing happened to this request yet.")}
    `,
  );
}
