/**
 * The Deals page: how many deals are in each state, the newest deals (of one
 * state, or all), and one deal's timeline — its state changes
 * (`deal_events`), payment, payouts and refunds (`deal_settlements`), stray
 * payments, documents and handover steps, merged in time order.
 *
 * @module
 */
import { DealStatus } from "../../shared/deal_schemas.ts";
import { holdbackOf, type OfferTerms } from "../../shared/offer_terms.ts";
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
  prettyJson,
  type SafeHtml,
  table,
  time,
} from "./layout.ts";

const PATH = `${CONSOLE_PATH}/deals`;
/** The most deals the list shows. */
export const DEALS_SHOWN = 100;

interface DealRow {
  id: string;
  title: string | null;
  buyer: string | null;
  seller: string | null;
  amount: string;
  currency: string;
  commission: string | null;
  status: string;
  payment_status: string | null;
  payproc_payment_intent_id: string | null;
  /** The times as {@linkcode utc} writes them. */
  created_at: string;
  funded_at: string | null;
  handover_completed_at: string | null;
  closed_at: string | null;
  /** When the buyer's due-diligence exclusivity ends (ended); null without one. */
  exclusive_until: string | null;
  /** The agreed letter-of-intent terms; null for a plain offer's deal. */
  terms: OfferTerms | null;
}

const DEAL_COLUMNS = `d.id, l.title, b.email as buyer, s.email as seller, d.amount::text as amount,
  d.currency, d.commission::text as commission, d.status, d.payment_status,
  d.payproc_payment_intent_id, ${utc("d.created_at")} as created_at,
  ${utc("d.funded_at")} as funded_at, ${utc("d.handover_completed_at")} as handover_completed_at,
  ${utc("d.closed_at")} as closed_at, ${utc("d.exclusive_until")} as exclusive_until, d.terms`;
const DEAL_JOINS = `from public.deals d
  left join public.listings l on l.id = d.listing_id
  left join auth.users b on b.id = d.buyer_id
  left join auth.users s on s.id = d.seller_id`;

/** A deal's letter-of-intent terms in one line. */
function termsSummary(deal: DealRow, terms: OfferTerms): string {
  return [
    `cash at close ${terms.cash_at_close} ${deal.currency}`,
    terms.holdback_days > 0
      ? `holdback ${holdbackOf(deal.amount, terms)} for ${terms.holdback_days} days`
      : "no holdback",
    `inspection ${terms.inspection_days} days`,
    `exclusivity ${terms.exclusivity_days} days`,
    terms.proposed_close_date ? `close ${terms.proposed_close_date}` : null,
    `${terms.conditions.length} condition${terms.conditions.length === 1 ? "" : "s"}`,
  ].filter(Boolean).join(" · ");
}

function statusTone(status: string): "ok" | "warn" | "bad" | null {
  if (status === "completed" || status === "funded") return "ok";
  if (status === "disputed" || status === "refunded") return "warn";
  if (status === "cancelled") return "bad";
  return null;
}

/** The page's routes. */
export function dealsRoutes(context: ConsoleContext): Route[] {
  return [
    {
      method: "GET",
      pattern: /^\/deals(\.json)?\/?$/,
      handle: async (request, match) => {
        const state = choiceParam(request.url, "state", DealStatus.options);
        const sql = context.db();
        const [counts, deals] = await Promise.all([
          sql.query<{ status: string; count: number }>(
            "select status, count(*)::int as count from public.deals group by status",
          ),
          sql.query<DealRow>(
            `select ${DEAL_COLUMNS} ${DEAL_JOINS}
             where $1::text is null or d.status = $1::text
             order by d.created_at desc, d.id limit ${DEALS_SHOWN}`,
            [state],
          ),
        ]);
        const byState = Object.fromEntries(
          DealStatus.options.map((s) => [s, counts.find((c) => c.status === s)?.count ?? 0]),
        );
        if (match[1]) return { json: { counts: byState, deals } };
        return { html: listPage(byState, deals, state) };
      },
    },
    {
      method: "GET",
      pattern: /^\/deals\/([^/]+?)(\.json)?$/,
      handle: async (_request, match) => {
        const id = uuidParam(match[1]!, "a deal id");
        const sql = context.db();
        const deal = await sql.maybeOne<DealRow>(
          `select ${DEAL_COLUMNS} ${DEAL_JOINS} where d.id = $1`,
          [id],
        );
        if (!deal) throw new HttpError(404, "not_found", `No deal "${id}"`);
        const entries = await timelineOf(sql, deal);
        if (match[2]) return { json: { deal, timeline: entries } };
        return { html: dealPage(deal, entries) };
      },
    },
  ];
}

/** Every dated fact about `deal`, oldest first (ties keep the order below). */
export async function timelineOf(sql: Sql, deal: DealRow): Promise<TimelineEntry[]> {
  const [events, settlements, strays, documents, steps] = await Promise.all([
    sql.query<{
      created_at: string;
      from_status: string | null;
      to_status: string;
      cause: string;
      payproc_object_id: string | null;
      detail: unknown;
    }>(
      `select ${utc("created_at")} as created_at, from_status, to_status, cause,
         payproc_object_id, detail
       from public.deal_events where deal_id = $1 order by deal_events.created_at, id`,
      [deal.id],
    ),
    sql.query<{
      kind: string;
      status: string;
      amount: string;
      currency: string;
      attempt: number;
      payproc_id: string | null;
      reason: string | null;
      last_error: string | null;
      created_at: string;
      settled_at: string | null;
    }>(
      `select kind, status, amount::text as amount, currency, attempt, payproc_id, reason, last_error,
         ${utc("created_at")} as created_at, ${utc("settled_at")} as settled_at
       from public.deal_settlements where deal_id = $1 order by deal_settlements.created_at`,
      [deal.id],
    ),
    sql.query<{
      payproc_payment_intent_id: string;
      amount: string;
      currency: string;
      reason: string;
      status: string;
      created_at: string;
      refunded_at: string | null;
    }>(
      `select payproc_payment_intent_id, amount::text as amount, currency, reason, status,
         ${utc("created_at")} as created_at, ${utc("refunded_at")} as refunded_at
       from public.deal_stray_payments where deal_id = $1 order by deal_stray_payments.created_at`,
      [deal.id],
    ),
    sql.query<{
      kind: string;
      file_name: string;
      status: string;
      version: number | null;
      created_at: string;
      uploaded_at: string | null;
    }>(
      `select kind, file_name, status, version, ${utc("created_at")} as created_at,
         ${utc("uploaded_at")} as uploaded_at
       from public.deal_documents where deal_id = $1 order by deal_documents.created_at`,
      [deal.id],
    ),
    sql.query<{
      position: number;
      title: string;
      kind: string;
      status: string;
      created_at: string;
      delivered_at: string | null;
      delivery_note: string | null;
      disputed_at: string | null;
      dispute_reason: string | null;
      confirmed_at: string | null;
    }>(
      `select position, title, kind, status, delivery_note, dispute_reason,
         ${utc("created_at")} as created_at, ${utc("delivered_at")} as delivered_at,
         ${utc("disputed_at")} as disputed_at, ${utc("confirmed_at")} as confirmed_at
       from public.deal_handover_steps where deal_id = $1 order by position`,
      [deal.id],
    ),
  ]);
  const entries: TimelineEntry[] = [
    {
      at: deal.created_at,
      source: "deal",
      what: `Deal created: ${deal.amount} ${deal.currency}`,
      detail: null,
    },
  ];
  if (deal.funded_at) {
    entries.push({
      at: deal.funded_at,
      source: "payment",
      what: `Payment received into escrow (${deal.payment_status ?? "paid"})`,
      detail: deal.payproc_payment_intent_id,
    });
  }
  for (const e of events) {
    const detail = e.detail && typeof e.detail === "object" && Object.keys(e.detail).length > 0
      ? prettyJson(e.detail)
      : null;
    entries.push({
      at: e.created_at,
      source: "event",
      what: `${e.from_status ?? "—"} → ${e.to_status} (${e.cause})`,
      detail: [e.payproc_object_id, detail].filter(Boolean).join("\n") || null,
    });
  }
  for (const s of settlements) {
    entries.push({
      at: s.created_at,
      source: "settlement",
      what: `${s.kind} of ${s.amount} ${s.currency} requested (attempt ${s.attempt})`,
      detail: s.reason,
    });
    if (s.settled_at) {
      entries.push({
        at: s.settled_at,
        source: "settlement",
        what: `${s.kind} ${s.status}`,
        detail: [s.payproc_id, s.last_error].filter(Boolean).join("\n") || null,
      });
    } else if (s.status !== "pending" || s.last_error) {
      entries.push({
        at: s.created_at,
        source: "settlement",
        what: `${s.kind} ${s.status}`,
        detail: s.last_error,
      });
    }
  }
  for (const p of strays) {
    entries.push({
      at: p.created_at,
      source: "stray payment",
      what: `Stray payment of ${p.amount} ${p.currency} (${p.reason}): ${p.status}`,
      detail: p.payproc_payment_intent_id,
    });
    if (p.refunded_at) {
      entries.push({
        at: p.refunded_at,
        source: "stray payment",
        what: "Stray payment returned",
        detail: p.payproc_payment_intent_id,
      });
    }
  }
  for (const d of documents) {
    entries.push({
      at: d.created_at,
      source: "document",
      what: `Document ${d.kind} "${d.file_name}" ${
        d.status === "pending" ? "requested" : "created"
      }`,
      detail: d.version === null ? null : `version ${d.version}`,
    });
    if (d.uploaded_at) {
      entries.push({
        at: d.uploaded_at,
        source: "document",
        what: `Document ${d.kind} "${d.file_name}" uploaded (${d.status})`,
        detail: null,
      });
    }
  }
  for (const s of steps) {
    const step = `Handover step ${s.position} "${s.title}" (${s.kind})`;
    entries.push({ at: s.created_at, source: "handover", what: `${step} added`, detail: null });
    if (s.delivered_at) {
      entries.push({
        at: s.delivered_at,
        source: "handover",
        what: `${step} delivered`,
        detail: s.delivery_note,
      });
    }
    if (s.disputed_at) {
      entries.push({
        at: s.disputed_at,
        source: "handover",
        what: `${step} disputed`,
        detail: s.dispute_reason,
      });
    }
    if (s.confirmed_at) {
      entries.push({
        at: s.confirmed_at,
        source: "handover",
        what: `${step} confirmed`,
        detail: null,
      });
    }
  }
  return inTimeOrder(entries);
}

function listPage(counts: Record<string, number>, deals: DealRow[], state: string | null): string {
  const rows = deals.map((d) => [
    time(d.created_at),
    html`<a href="${PATH}/${d.id}"><code>${d.id.slice(0, 8)}</code></a>`,
    html`${d.title ?? ""}`,
    html`${d.buyer ?? ""}`,
    html`${d.seller ?? ""}`,
    html`${d.amount} ${d.currency}`,
    badge(d.status, statusTone(d.status)),
    html`${d.payment_status ?? ""}`,
  ]);
  return page(
    "Deals",
    PATH,
    html`${
      filterCards({ path: PATH, param: "state", counts, selected: state, everything: "all states" })
    }
${
      table(
        ["Created", "Deal", "Listing", "Buyer", "Seller", "Amount", "State", "Payment"],
        rows,
        state ? `No deal is ${state}.` : "No deals yet.",
      )
    }
<p class="muted">The newest ${DEALS_SHOWN} deals.</p>`,
  );
}

function dealPage(deal: DealRow, entries: TimelineEntry[]): string {
  const facts: Array<[string, SafeHtml | string]> = [
    ["State", badge(deal.status, statusTone(deal.status))],
    ["Listing", deal.title ?? "—"],
    ["Buyer", deal.buyer ?? "—"],
    ["Seller", deal.seller ?? "—"],
    ["Amount", `${deal.amount} ${deal.currency}`],
    ["Commission", deal.commission === null ? "—" : `${deal.commission} ${deal.currency}`],
    ["Payment", deal.payment_status ?? "—"],
    ["Payment intent", deal.payproc_payment_intent_id ?? "—"],
    ["Exclusive until", deal.exclusive_until ?? "—"],
    ["Agreed terms", deal.terms === null ? "—" : termsSummary(deal, deal.terms)],
  ];
  return page(
    `Deal ${deal.id}`,
    PATH,
    html`
      ${factsTable(facts)}
      <p><a href="${PATH}">All deals</a> · <a href="${PATH}/${deal.id}.json">JSON</a></p>
      <h2>Timeline</h2>
      ${timelineTable(entries, "Nothing happened to this deal yet.")}
    `,
  );
}
