/**
 * Letters of intent for tests, made the way the product makes them: the
 * seller's approved listing, the buyer's offer with `terms` inserted as the
 * buyer through RLS (the offers guard checks and normalizes them), and
 * `public.accept_offer()` as the seller (or the service role). With
 * `exclusivity_days > 0` the deal starts `in_diligence`;
 * {@linkcode confirmDiligence} moves it on to `pending_payment`.
 *
 * @module
 */
import type pg from "pg";
import type { OfferTerms } from "../../shared/offer_terms.ts";
import type { OfferTermsInput } from "../../shared/offer_terms_schemas.ts";
import { createListing } from "../db/core_fixtures.ts";
import type { TestDeal } from "./deals.ts";
import { createUser, queryAs, type TestUser } from "./sql.ts";

/** The terms of a letter of intent as a client sends them (`offers.terms`). */
export type LoiTerms = OfferTermsInput;

/** A letter of intent with a holdback and 14 days of exclusivity, on an offer of 1000.00. */
export const LOI_TERMS: LoiTerms = {
  cash_at_close: "900.00",
  holdback_days: 30,
  inspection_days: 10,
  exclusivity_days: 14,
  conditions: ["Seller hands over the domain", "Revenue verified"],
};

/** What {@linkcode createLoiDeal} made. */
export interface LoiDeal {
  listingId: string;
  offerId: string;
  dealId: string;
  seller: TestUser;
  buyer: TestUser;
}

/** Options of {@linkcode createLoiDeal}; new users when the parties are not given. */
export interface LoiDealOptions {
  seller?: TestUser;
  buyer?: TestUser;
  /** Default {@linkcode LOI_TERMS}; `null` makes a plain offer. */
  terms?: LoiTerms | null;
  /** The offer's amount (default "1000.00"), in the listing's currency (USD). */
  amount?: string;
  /** Who accepts: the listing's seller through RLS (default) or the service connection. */
  acceptedBy?: "seller" | "service";
}

/**
 * An approved listing of the seller, the buyer's offer on it with `terms`,
 * and that offer accepted: answers the listing, the offer and the deal
 * (in_diligence when the terms give exclusivity, else pending_payment).
 */
export async function createLoiDeal(
  pool: pg.Pool,
  options: LoiDealOptions = {},
): Promise<LoiDeal> {
  const seller = options.seller ?? await createUser(pool);
  const buyer = options.buyer ?? await createUser(pool);
  const listing = await createListing(pool, seller.id, "approved");
  const terms = options.terms === undefined ? LOI_TERMS : options.terms;
  const offerId = await makeLoiOffer(pool, buyer, listing.id, options.amount, terms);
  const accept = "select public.accept_offer($1) as deal_id";
  const rows = options.acceptedBy === "service"
    ? (await pool.query<{ deal_id: string }>(accept, [offerId])).rows
    : await queryAs<{ deal_id: string }>(pool, seller, accept, [offerId]);
  return { listingId: listing.id, offerId, dealId: rows[0]!.deal_id, seller, buyer };
}

/** The deal of a letter of intent as the deal helpers take it (`createDeal`'s shape). */
export function testDealOf(loi: LoiDeal): TestDeal {
  return { id: loi.dealId, buyer: loi.buyer, seller: loi.seller, listingId: loi.listingId };
}

/** The buyer ends due diligence (`confirm_diligence`): the deal moves to pending_payment. */
export async function confirmDiligence(pool: pg.Pool, deal: LoiDeal): Promise<void> {
  await queryAs(pool, deal.buyer, "select public.confirm_diligence($1)", [deal.dealId]);
}

/**
 * `buyer`'s offer of `amount` USD on listing `listingId` with `terms`
 * (default {@linkcode LOI_TERMS}; null: a plain offer), inserted through RLS
 * and committed; answers its id.
 */
export async function makeLoiOffer(
  pool: pg.Pool,
  buyer: TestUser,
  listingId: string,
  amount = "1000.00",
  terms: object | null = LOI_TERMS,
  message: string | null = null,
): Promise<string> {
  const [offer] = await queryAs<{ id: string }>(
    pool,
    buyer,
    `insert into public.offers (listing_id, amount, currency, terms, message)
     values ($1, $2, 'USD', $3::jsonb, $4) returning id`,
    [listingId, amount, terms === null ? null : JSON.stringify(terms), message],
  );
  return offer!.id;
}

/**
 * `who` answers version `offerId` with a counter-offer of `amount` and
 * `terms` (null: a plain offer) through `counter_offer`, and commits;
 * answers the new version's id.
 */
export async function counterOffer(
  pool: pg.Pool,
  who: TestUser,
  offerId: string,
  amount: string,
  terms: object | null = LOI_TERMS,
  message: string | null = null,
): Promise<string> {
  const [row] = await queryAs<{ id: string }>(
    pool,
    who,
    "select public.counter_offer($1, $2::numeric, $3::jsonb, $4) as id",
    [offerId, amount, terms === null ? null : JSON.stringify(terms), message],
  );
  return row!.id;
}

/** An offer version as stored. */
export interface OfferVersion {
  id: string;
  buyer_id: string;
  amount: string;
  message: string | null;
  status: string;
  terms: OfferTerms | null;
  parent_offer_id: string | null;
  proposed_by: "buyer" | "seller";
  decline_reason: string | null;
  deal_id: string | null;
  decided_at: Date | null;
  created_at: Date;
}

/** Offer `id` as stored. */
export async function offerOf(pool: pg.Pool, id: string): Promise<OfferVersion> {
  const { rows } = await pool.query<OfferVersion>(
    `select id, buyer_id, amount::text as amount, message, status, terms, parent_offer_id,
            proposed_by, decline_reason, deal_id, decided_at, created_at
     from public.offers where id = $1`,
    [id],
  );
  return rows[0]!;
}

/** A deal's state, terms and window as stored. */
export interface LoiDealRow {
  id: string;
  status: string;
  amount: string;
  offer_id: string | null;
  terms: OfferTerms | null;
  exclusive_until: Date | null;
  closed_at: Date | null;
}

/** Deal `id` as stored. */
export async function dealOf(pool: pg.Pool, id: string): Promise<LoiDealRow> {
  const { rows } = await pool.query<LoiDealRow>(
    `select id, status, amount::text as amount, offer_id, terms, exclusive_until, closed_at
     from public.deals where id = $1`,
    [id],
  );
  return rows[0]!;
}

/** A row of `deal_events`, as the tests compare it. */
export interface DealEventRow {
  from_status: string | null;
  to_status: string;
  cause: string;
  actor_id: string | null;
  detail: Record<string, unknown>;
}

/** Deal `id`'s events, oldest first. */
export async function dealEvents(pool: pg.Pool, id: string): Promise<DealEventRow[]> {
  const { rows } = await pool.query<DealEventRow>(
    `select from_status, to_status, cause, actor_id, detail from public.deal_events
     where deal_id = $1 order by id`,
    [id],
  );
  return rows;
}

/**
 * Moves deal `id`'s exclusivity end `minutes` into the past, the way time
 * does: past the trigger that only lets it move later (the test pool is a
 * superuser).
 */
export async function ageDiligence(pool: pg.Pool, id: string, minutes = 1): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query("begin");
    await client.query("set local session_replication_role = replica");
    await client.query(
      "update public.deals set exclusive_until = now() - make_interval(mins => $2) where id = $1",
      [id, minutes],
    );
    await client.query("commit");
  } finally {
    client.release();
  }
}
