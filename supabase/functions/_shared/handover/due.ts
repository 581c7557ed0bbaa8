/**
 * What `apa-auto-handover` finds to do, as of the job's clock `now`: one
 * query per phase, each also usable for one deal (`dealId`), so a phase
 * re-checks its deal under the deal's lock before it changes anything.
 *
 * @module
 */
import type { Sql } from "../platform/db.ts";

/** Deals looked at per phase and run (the rest wait for the next run). */
export const HANDOVER_BATCH = 500;

/** How long a party may be late before the first reminder (and between reminders). */
export const REMINDER_AFTER_MS = 24 * 60 * 60 * 1000;

/** `dealId` as a filter parameter: null means every deal. */
type DealFilter = string | null;

/**
 * Funded deals whose agreement exists: their handover starts. The agreement
 * is one generated once the deal was funded — a draft printed during due
 * diligence, or before the payment, says the price is not yet received.
 */
export async function dealsToStart(sql: Sql, dealId: DealFilter = null): Promise<string[]> {
  const rows = await sql.query<{ id: string }>(
    `select d.id from public.deals d
     where d.status = 'funded' and ($1::uuid is null or d.id = $1::uuid)
       and exists (
         select 1 from public.deal_documents dd
         where dd.deal_id = d.id and dd.kind = 'apa' and dd.status = 'uploaded'
           and dd.created_at >= d.funded_at
       )
     order by d.id
     limit $2`,
    [dealId, HANDOVER_BATCH],
  );
  return rows.map((row) => row.id);
}

/**
 * Deals in handover whose every step is delivered or confirmed, with some
 * delivered ones the buyer neither confirmed nor disputed within the
 * inspection period of the last delivery — the deal's agreed
 * `inspection_days` (`deals.terms`), else `inspectionDays` — are confirmed now.
 */
export async function dealsWithLapsedInspection(
  sql: Sql,
  now: Date,
  inspectionDays: number,
  dealId: DealFilter = null,
): Promise<string[]> {
  const rows = await sql.query<{ id: string }>(
    `select d.id from public.deals d
     join public.deal_handover_steps s on s.deal_id = d.id
     where d.status = 'in_handover' and d.handover_completed_at is null
       and ($3::uuid is null or d.id = $3::uuid)
     group by d.id
     having bool_and(s.status in ('delivered', 'confirmed'))
        and bool_or(s.status = 'delivered')
        and max(s.delivered_at) <= $1::timestamptz
          - make_interval(days => coalesce((d.terms ->> 'inspection_days')::integer, $2))
     order by d.id
     limit $4`,
    [now, inspectionDays, dealId, HANDOVER_BATCH],
  );
  return rows.map((row) => row.id);
}

/** Deals in handover, not yet complete, whose every step is confirmed. */
export async function dealsFullyConfirmed(sql: Sql, dealId: DealFilter = null): Promise<string[]> {
  const rows = await sql.query<{ id: string }>(
    `select d.id from public.deals d
     join public.deal_handover_steps s on s.deal_id = d.id
     where d.status = 'in_handover' and d.handover_completed_at is null
       and ($1::uuid is null or d.id = $1::uuid)
     group by d.id
     having bool_and(s.status = 'confirmed')
     order by d.id
     limit $2`,
    [dealId, HANDOVER_BATCH],
  );
  return rows.map((row) => row.id);
}

/** A party who is late in a deal's handover. */
export interface LateParty {
  dealId: string;
  role: "seller" | "buyer";
  userId: string;
  listingTitle: string;
  /** Since when the party is late's clock runs (see {@linkcode lateParties}). */
  since: Date;
  /** Seller: titles of the steps to deliver. Buyer: titles of the steps to confirm. */
  steps: string[];
  /** Buyer: the last delivery (the inspection window runs from it). */
  lastDeliveredAt: Date | null;
}

/**
 * Parties late by at least {@linkcode REMINDER_AFTER_MS} in deals in
 * handover: the seller while steps are pending (since the handover started)
 * or disputed (since the earliest open dispute); else the buyer while
 * delivered steps wait (since the last delivery).
 */
export async function lateParties(sql: Sql, now: Date): Promise<LateParty[]> {
  const rows = await sql.query<{
    deal_id: string;
    role: "seller" | "buyer";
    user_id: string;
    listing_title: string;
    since: Date;
    steps: string[];
    last_delivered_at: Date | null;
  }>(
    `with open_deals as (
       select d.id, d.buyer_id, d.seller_id, l.title,
              (select max(e.created_at) from public.deal_events e
               where e.deal_id = d.id and e.to_status = 'in_handover') as started_at
       from public.deals d
       join public.listings l on l.id = d.listing_id
       where d.status = 'in_handover' and d.handover_completed_at is null
     ), checklist as (
       select o.id, o.buyer_id, o.seller_id, o.title,
              min(case s.status when 'pending' then o.started_at
                                when 'disputed' then s.disputed_at end) as seller_since,
              array_agg(s.title order by s.position)
                filter (where s.status in ('pending', 'disputed')) as seller_steps,
              array_agg(s.title order by s.position)
                filter (where s.status = 'delivered') as buyer_steps,
              max(s.delivered_at) as last_delivered_at
       from open_deals o
       join public.deal_handover_steps s on s.deal_id = o.id
       group by o.id, o.buyer_id, o.seller_id, o.title, o.started_at
     )
     select c.id as deal_id,
            case when c.seller_steps is not null then 'seller' else 'buyer' end as role,
            case when c.seller_steps is not null then c.seller_id else c.buyer_id end as user_id,
            c.title as listing_title,
            case when c.seller_steps is not null then c.seller_since else c.last_delivered_at end
              as since,
            coalesce(c.seller_steps, c.buyer_steps) as steps,
            c.last_delivered_at
     from checklist c
     where (c.seller_steps is not null and c.seller_since <= $1::timestamptz - $2 * interval '1 millisecond')
        or (c.seller_steps is null and c.buyer_steps is not null
            and c.last_delivered_at <= $1::timestamptz - $2 * interval '1 millisecond')
     order by c.id
     limit $3`,
    [now, REMINDER_AFTER_MS, HANDOVER_BATCH],
  );
  return rows.map((row) => ({
    dealId: row.deal_id,
    role: row.role,
    userId: row.user_id,
    listingTitle: row.listing_title,
    since: row.since,
    steps: row.steps,
    lastDeliveredAt: row.last_delivered_at,
  }));
}
