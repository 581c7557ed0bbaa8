/**
 * A deal as the server reads it: one column list for every query that
 * reads a deal, its type, and the names the processor objects carry for it.
 *
 * ## Lock order
 *
 * Every transaction takes the locks of a deal's money in one order (the
 * webhook recording a stray payment and the refund of that payment once
 * took them in opposite orders and deadlocked):
 *
 * 1. the webhook event's ledger row (`payproc_events`, by event id): the
 *    first write of every webhook transaction (`payproc_webhook/events.ts`);
 *    a concurrent delivery of the same event waits there holding nothing;
 * 2. the deal row (`deals`, `for update`: {@linkcode findDeal} or
 *    {@linkcode findDealByCharge} with `lock`, `strayRow()` with `lock`
 *    (`stray_refunds.ts`), or `transition_deal()`'s own lock);
 * 3. the deal's money rows: its stray payments (`deal_stray_payments`) and
 *    its settlements (`deal_settlements`);
 * 4. what is written about it: deal events (`deal_events`, through
 *    `transition_deal()` and `record_deal_event()`, whose foreign key takes
 *    a `key share` lock on the deal row), notices and alerts.
 *
 * A transaction may skip a step, never go back to an earlier one. Above
 * all, whoever writes (or locks) a stray payment or settlement row and then
 * a deal event takes the deal row first: a deal event's `key share` on a
 * deal that another transaction holds `for update` while it waits for that
 * money row is a deadlock. A single statement that updates a money row and
 * commits (an attempt counted) holds one lock and needs none before it.
 *
 * @module
 */
import { isUuid } from "../lib/uuid.ts";
import type Stripe from "stripe";
import type { DealStatus } from "../../../../shared/deal_schemas.ts";
import type { OfferTerms } from "../../../../shared/offer_terms.ts";
import type { Sql } from "../platform/db.ts";

/** A `public.deals` row (amounts as exact decimal strings). */
export interface DealRow {
  id: string;
  listing_id: string;
  buyer_id: string;
  seller_id: string;
  amount: string;
  currency: string;
  status: DealStatus;
  /** Frozen when funded; null before. */
  commission: string | null;
  funded_at: Date | null;
  closed_at: Date | null;
  payproc_payment_intent_id: string | null;
  payproc_checkout_session_id: string | null;
  payproc_charge_id: string | null;
  payment_status: string | null;
  payment_synced_at: Date | null;
  /** When every handover step was confirmed (ready for payout); null before. */
  handover_completed_at: Date | null;
  /** How the handover completed; null before. */
  handover_completion: "buyer_confirmed" | "inspection_lapsed" | null;
  /** The agreed letter-of-intent terms, frozen at acceptance; null for a plain offer's deal. */
  terms: OfferTerms | null;
  /** When the buyer's due-diligence exclusivity ends; null for a deal that never was in diligence. */
  exclusive_until: Date | null;
  /** When the buyer's inspection window ends (handover completion + inspection_days, or the acceptance); null before. */
  inspection_ends_at: Date | null;
  /** When the buyer accepted the delivery early (`accept_delivery`); null otherwise. */
  delivery_accepted_at: Date | null;
  /** When the holdback is paid (set at the release, for a deal with one); null otherwise. */
  holdback_release_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

/** The columns of {@linkcode DealRow}, for a `from public.deals d` (or a function returning deals aliased `d`). */
export const DEAL_COLUMNS = `d.id, d.listing_id, d.buyer_id, d.seller_id, d.amount::text as amount,
  d.currency, d.status, d.commission::text as commission, d.funded_at, d.closed_at,
  d.payproc_payment_intent_id, d.payproc_checkout_session_id, d.payproc_charge_id,
  d.payment_status, d.payment_synced_at, d.handover_completed_at, d.handover_completion,
  d.terms, d.exclusive_until, d.inspection_ends_at, d.delivery_accepted_at,
  d.holdback_release_at, d.created_at, d.updated_at`;

/** The deal, or null; `lock` takes its row lock (inside a transaction; see the lock order in the module doc). */
export function findDeal(
  sql: Sql,
  dealId: string,
  options: { lock?: boolean } = {},
): Promise<DealRow | null> {
  return dealWhere(sql, "id", dealId, options.lock);
}

/** The deal behind a processor charge, or null. */
export function findDealByCharge(
  sql: Sql,
  chargeId: string,
  options: { lock?: boolean } = {},
): Promise<DealRow | null> {
  return dealWhere(sql, "payproc_charge_id", chargeId, options.lock);
}

function dealWhere(
  sql: Sql,
  column: "id" | "payproc_charge_id",
  value: string,
  lock = false,
): Promise<DealRow | null> {
  return sql.maybeOne<DealRow>(
    `select ${DEAL_COLUMNS} from public.deals d where d.${column} = $1${lock ? " for update" : ""}`,
    [value],
  );
}

/** The processor's `transfer_group` of a deal: ties its charge, transfer and reversal together. */
export function transferGroupOf(dealId: string): string {
  return `deal:${dealId}`;
}

/** The deal id a `transfer_group` names ({@linkcode transferGroupOf}), if it names one. */
export function dealIdOfGroup(group: string | null | undefined): string | null {
  const id = group?.startsWith("deal:") ? group.slice("deal:".length) : null;
  return isUuid(id) ? id : null;
}

/** The charge of a payment intent, once it has one. */
export function chargeIdOf(intent: Stripe.PaymentIntent): string | null {
  const charge = intent.latest_charge;
  return typeof charge === "string" ? charge : charge?.id ?? null;
}

/** The payment intent a checkout session created, once it has one. */
export function paymentIntentIdOf(session: Stripe.Checkout.Session): string | null {
  const intent = session.payment_intent;
  return typeof intent === "string" ? intent : intent?.id ?? null;
}

/** The deal id a processor object names in its metadata, if it looks like one. */
export function dealIdOf(metadata: Record<string, string> | null | undefined): string | null {
  const id = metadata?.deal_id;
  return isUuid(id) ? id : null;
}

/** What a transition is about. */
export interface TransitionOptions {
  /** The processor object behind it (payment intent, transfer, refund, dispute). */
  payprocObject?: string | null;
  /** The user who caused it. */
  actor?: string | null;
  /** Why, as the mover says it (the audit row's `detail`, a JSON object). */
  detail?: Record<string, unknown>;
}

/**
 * Moves the deal to `to` through `public.transition_deal` (the only writer of
 * its status; an illegal move is 409 `conflict`) and answers the new row.
 */
export async function transitionDeal(
  sql: Sql,
  dealId: string,
  to: DealStatus,
  cause: string,
  options: TransitionOptions = {},
): Promise<DealRow> {
  return await sql.one<DealRow>(
    `select ${DEAL_COLUMNS} from public.transition_deal($1, $2, $3, $4, $5, $6::jsonb) d`,
    [
      dealId,
      to,
      cause,
      options.payprocObject ?? null,
      options.actor ?? null,
      JSON.stringify(options.detail ?? {}),
    ],
  );
}

/** What an event that changes no state is about. */
export interface DealEventOptions {
  /** What the processor said about it (stored as the event's `detail`). */
  detail?: Record<string, unknown>;
  /** The user who caused it. */
  actor?: string | null;
}

/**
 * Records on deal `dealId` an event that changes no state (cause `cause`,
 * processor object `payprocObject`) through `public.record_deal_event`:
 * once per deal, cause and object. False when it was recorded before.
 */
export async function recordDealEvent(
  sql: Sql,
  dealId: string,
  cause: string,
  payprocObject: string,
  options: DealEventOptions = {},
): Promise<boolean> {
  const row = await sql.one<{ recorded: boolean }>(
    "select public.record_deal_event($1, $2, $3, $4::jsonb, $5) as recorded",
    [dealId, cause, payprocObject, JSON.stringify(options.detail ?? {}), options.actor ?? null],
  );
  return row.recorded;
}
