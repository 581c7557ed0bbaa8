/**
 * The Conversations page: the buyer↔seller conversations of listings
 * (`public.conversations`, the conversations migration's states), read-only —
 * how many are open, closed and reported, the most recently active ones (of
 * one state, or all) with their message and unread counts, and one
 * conversation's facts with a timeline merging its start, every message, where
 * each side's read mark stands, its closing, its reports and every notice the
 * queue holds about it or its reports (`public.notice_queue`: queued, then
 * sent, dropped or failed).
 *
 * @module
 */
import { HttpError } from "../../supabase/functions/_shared/platform/errors.ts";
import type { Sql } from "../../supabase/functions/_shared/platform/db.ts";
import type { ConsoleContext, Route } from "./types.ts";
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
import { noticeEntries, noticesAbout, type Parties, who } from "./access_page.ts";
import {
  choiceParam,
  factsTable,
  inTimeOrder,
  type TimelineEntry,
  timelineTable,
  utc,
  uuidParam,
} from "./records.ts";

const PATH = `${CONSOLE_PATH}/conversations`;
/** The most conversations the list shows. */
export const CONVERSATIONS_SHOWN = 100;
/**
 * The list's filters: `open` and `closed` (`closed_at`) part the
 * conversations; `reported` is those with a report, open or closed.
 */
export const CONVERSATION_STATES = ["open", "closed", "reported"] as const;

/** A conversation as the pages show it. */
interface ConversationRow extends Parties {
  id: string;
  listing_id: string;
  title: string | null;
  buyer: string | null;
  seller: string | null;
  created_at: string;
  last_message_at: string | null;
  /** The later of the last message and the start: what the list is ordered by. */
  last_activity: string;
  buyer_last_read_at: string | null;
  seller_last_read_at: string | null;
  closed_at: string | null;
  closed_by: string | null;
  closed_by_email: string | null;
  close_reason: string | null;
  messages: number;
  /** The seller's messages after the buyer's read mark. */
  unread_for_buyer: number;
  /** The buyer's messages after the seller's read mark. */
  unread_for_seller: number;
  reports: number;
  /** The newest access request of the conversation's listing and buyer, if any. */
  access_request_id: string | null;
}

const CONVERSATION_COLUMNS = `c.id, c.listing_id, l.title, c.buyer_id, b.email as buyer,
  c.seller_id, s.email as seller, ${utc("c.created_at")} as created_at,
  ${utc("c.last_message_at")} as last_message_at,
  ${utc("greatest(c.last_message_at, c.created_at)")} as last_activity,
  ${utc("c.buyer_last_read_at")} as buyer_last_read_at,
  ${utc("c.seller_last_read_at")} as seller_last_read_at, ${utc("c.closed_at")} as closed_at,
  c.closed_by, k.email as closed_by_email, c.close_reason, m.messages, m.unread_for_buyer,
  m.unread_for_seller, x.reports,
  (select r.id from public.listing_access_requests r
   where r.listing_id = c.listing_id and r.buyer_id = c.buyer_id
   order by r.created_at desc limit 1) as access_request_id`;
const CONVERSATION_JOINS = `from public.conversations c
  left join public.listings l on l.id = c.listing_id
  left join auth.users b on b.id = c.buyer_id
  left join auth.users s on s.id = c.seller_id
  left join auth.users k on k.id = c.closed_by
  cross join lateral (
    select count(*)::int as messages,
      (count(*) filter (where m.sender_id = c.seller_id
         and m.created_at > coalesce(c.buyer_last_read_at, '-infinity')))::int as unread_for_buyer,
      (count(*) filter (where m.sender_id = c.buyer_id
         and m.created_at > coalesce(c.seller_last_read_at, '-infinity')))::int as unread_for_seller
    from public.messages m where m.conversation_id = c.id
  ) m
  cross join lateral (
    select count(*)::int as reports
    from public.conversation_reports x where x.conversation_id = c.id
  ) x`;

function stateBadge(c: ConversationRow): SafeHtml {
  return c.closed_at === null ? badge("open", "ok") : badge("closed", "bad");
}

function reportsBadge(c: ConversationRow): SafeHtml {
  return c.reports > 0 ? badge(`${c.reports} reported`, "warn") : html`0`;
}

/** The page's routes. */
export function conversationsRoutes(context: ConsoleContext): Route[] {
  return [
    {
      method: "GET",
      pattern: /^\/conversations(\.json)?\/?$/,
      handle: async (request, match) => {
        const state = choiceParam(request.url, "state", CONVERSATION_STATES);
        const sql = context.db();
        const [counts, conversations] = await Promise.all([
          sql.one<{ open: number; closed: number; reported: number }>(
            `select count(*) filter (where closed_at is null)::int as open,
               count(*) filter (where closed_at is not null)::int as closed,
               (select count(distinct conversation_id) from public.conversation_reports)::int
                 as reported
             from public.conversations`,
          ),
          sql.query<ConversationRow>(
            `select ${CONVERSATION_COLUMNS} ${CONVERSATION_JOINS}
             where $1::text is null
               or ($1::text = 'open' and c.closed_at is null)
               or ($1::text = 'closed' and c.closed_at is not null)
               or ($1::text = 'reported' and x.reports > 0)
             order by greatest(c.last_message_at, c.created_at) desc, c.id
             limit ${CONVERSATIONS_SHOWN}`,
            [state],
          ),
        ]);
        const byState = { open: counts.open, closed: counts.closed, reported: counts.reported };
        if (match[1]) return { json: { counts: byState, conversations } };
        return { html: listPage(byState, conversations, state) };
      },
    },
    {
      method: "GET",
      pattern: /^\/conversations\/([^/]+?)(\.json)?$/,
      handle: async (_request, match) => {
        const id = uuidParam(match[1]!, "a conversation id");
        const sql = context.db();
        const conversation = await sql.maybeOne<ConversationRow>(
          `select ${CONVERSATION_COLUMNS} ${CONVERSATION_JOINS} where c.id = $1`,
          [id],
        );
        if (!conversation) throw new HttpError(404, "not_found", `No conversation "${id}"`);
        const entries = await timelineOf(sql, conversation);
        if (match[2]) return { json: { conversation, timeline: entries } };
        return { html: conversationPage(conversation, entries) };
      },
    },
  ];
}

/** Every dated fact about conversation `c`, oldest first (ties keep the order below). */
async function timelineOf(sql: Sql, c: ConversationRow): Promise<TimelineEntry[]> {
  const [messages, reports] = await Promise.all([
    sql.query<{ sender_id: string; email: string | null; body: string; created_at: string }>(
      `select m.sender_id, u.email, m.body, ${utc("m.created_at")} as created_at
       from public.messages m left join auth.users u on u.id = m.sender_id
       where m.conversation_id = $1 order by m.created_at, m.id`,
      [c.id],
    ),
    sql.query<{
      id: string;
      reporter_id: string;
      email: string | null;
      reason: string;
      created_at: string;
    }>(
      `select r.id, r.reporter_id, u.email, r.reason, ${utc("r.created_at")} as created_at
       from public.conversation_reports r left join auth.users u on u.id = r.reporter_id
       where r.conversation_id = $1 order by r.created_at, r.id`,
      [c.id],
    ),
  ]);
  const notices = await noticesAbout(sql, [c.id, ...reports.map((r) => r.id)]);
  const entries: TimelineEntry[] = [
    {
      at: c.created_at,
      source: "started",
      what: `Conversation started by ${who(c, c.buyer_id, c.buyer)} with ${
        who(c, c.seller_id, c.seller)
      }`,
      detail: null,
      link: null,
    },
  ];
  for (const m of messages) {
    entries.push({
      at: m.created_at,
      source: "message",
      what: `Message from ${who(c, m.sender_id, m.email)}`,
      detail: m.body,
      link: null,
    });
  }
  // After the messages: a sender's mark is stamped with their message, and follows it.
  const marks: Array<[string | null, string, number, string]> = [
    [c.buyer_last_read_at, "buyer", c.unread_for_buyer, "seller"],
    [c.seller_last_read_at, "seller", c.unread_for_seller, "buyer"],
  ];
  for (const [at, side, unread, other] of marks) {
    if (at === null) continue;
    entries.push({
      at,
      source: "read mark",
      what: `The ${side}'s read mark: read up to here`,
      detail: `${unread} of the ${other}'s messages after it unread`,
      link: null,
    });
  }
  if (c.closed_at) {
    entries.push({
      at: c.closed_at,
      source: "closed",
      what: `Closed by ${c.closed_by === null ? "no one" : who(c, c.closed_by, c.closed_by_email)}`,
      detail: c.close_reason,
      link: null,
    });
  }
  for (const r of reports) {
    entries.push({
      at: r.created_at,
      source: "report",
      what: `Reported by ${who(c, r.reporter_id, r.email)}`,
      detail: r.reason,
      link: null,
    });
  }
  entries.push(...noticeEntries(c, notices));
  return inTimeOrder(entries);
}

function listPage(
  counts: Record<string, number>,
  conversations: ConversationRow[],
  state: string | null,
): string {
  const num = (n: number) => html`<span class="${n > 0 ? "" : "muted"}">${n}</span>`;
  const rows = conversations.map((c) => [
    time(c.last_activity),
    html`<a href="${PATH}/${c.id}"><code>${c.id.slice(0, 8)}</code></a>`,
    html`${c.title ?? ""}`,
    html`${c.buyer ?? ""}`,
    html`${c.seller ?? ""}`,
    num(c.messages),
    html`${num(c.unread_for_buyer)} / ${num(c.unread_for_seller)}`,
    stateBadge(c),
    reportsBadge(c),
  ]);
  return page(
    "Conversations",
    PATH,
    html`${
      filterCards({
        path: PATH,
        param: "state",
        counts,
        selected: state,
        everything: "all conversations",
      })
    }
${
      table(
        [
          "Last activity",
          "Conversation",
          "Listing",
          "Buyer",
          "Seller",
          "Messages",
          "Unread buyer / seller",
          "State",
          "Reports",
        ],
        rows,
        state ? `No conversation is ${state}.` : "No conversations yet.",
      )
    }
<p class="muted">The ${CONVERSATIONS_SHOWN} most recently active conversations (last message, or
start). Unread: the other side's messages after the buyer's and the seller's read marks.</p>`,
  );
}

function conversationPage(c: ConversationRow, entries: TimelineEntry[]): string {
  const dash = html`<span class="muted">—</span>`;
  const facts: Array<[string, SafeHtml | string]> = [
    [
      "State",
      c.reports > 0 ? html`${stateBadge(c)} ${reportsBadge(c)}` : stateBadge(c),
    ],
    ["Listing", html`${c.title ?? "—"} <code class="muted">${c.listing_id}</code>`],
    ["Buyer", c.buyer ?? c.buyer_id],
    ["Seller", c.seller ?? c.seller_id],
    ["Started", time(c.created_at)],
    ["Messages", html`${c.messages} · last ${time(c.last_message_at)}`],
    ["Buyer's read mark", html`${time(c.buyer_last_read_at)} · ${c.unread_for_buyer} unread`],
    ["Seller's read mark", html`${time(c.seller_last_read_at)} · ${c.unread_for_seller} unread`],
    ["Closed at", time(c.closed_at)],
    [
      "Closed by",
      c.closed_by === null ? dash : who(c, c.closed_by, c.closed_by_email),
    ],
    ["Close reason", c.close_reason ?? dash],
    [
      "Access request",
      c.access_request_id
        ? html`<a href="${CONSOLE_PATH}/access/${c.access_request_id}"><code>${c.access_request_id}</code></a>`
        : dash,
    ],
  ];
  return page(
    `Conversation ${c.id}`,
    PATH,
    html`
      ${factsTable(facts)}
      <p><a href="${PATH}">All conversations</a> · <a href="${PATH}/${c.id}.json">JSON</a></p>
      <h2>Timeline</h2>
      ${timelineTable(entries, "Nothing happened in this conversation yet.")}
    `,
  );
}
