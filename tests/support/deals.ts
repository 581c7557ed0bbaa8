/**
 * Test setup for the deal functions: billing's setup (database, processor
 * double, runtime) with the e-mail double behind the payment notices, and
 * helpers that bring a deal to each state the way the product does — the
 * buyer pays through create-deal-payment and a signed webhook, the seller
 * onboards at the processor, the handover starts through transition_deal.
 *
 * @module
 */
import type pg from "pg";
import createDealCheckout from "../../supabase/functions/create-deal-checkout/handler.ts";
import createDealPayment from "../../supabase/functions/create-deal-payment/handler.ts";
import { createListing } from "../db/core_fixtures.ts";
import { type BillingSetup, billingSetup, deliver } from "./billing.ts";
import { EmailDouble } from "./email_double.ts";
import { emailEnv } from "./notifications.ts";
import { invoke } from "./runtime.ts";
import { createUser, type TestUser } from "./sql.ts";

/** Everything a deals test file needs. */
export interface DealsSetup extends BillingSetup {
  /** The e-mail API double the payment notices go to. */
  email: EmailDouble;
  /** An admin, for the admin functions. */
  admin: TestUser;
}

/** Billing's setup plus the e-mail double and an admin. */
export async function dealsSetup(env: Record<string, string> = {}): Promise<DealsSetup> {
  const email = new EmailDouble();
  const setup = await billingSetup({ ...emailEnv(email), ...env });
  const admin = await createUser(setup.db.pool, { admin: true });
  return {
    ...setup,
    email,
    admin,
    async close() {
      await setup.close();
      await email.close();
    },
  };
}

/** A deal between a new buyer and a new seller. */
export interface TestDeal {
  id: string;
  buyer: TestUser;
  seller: TestUser;
  listingId: string;
}

/** A new deal pending payment (default 1250.00 USD). */
export async function createDeal(
  pool: pg.Pool,
  options: { amount?: string; currency?: string } = {},
): Promise<TestDeal> {
  const seller = await createUser(pool);
  const buyer = await createUser(pool);
  const listing = await createListing(pool, seller.id);
  const { rows } = await pool.query<{ id: string }>(
    `insert into public.deals (listing_id, buyer_id, seller_id, amount, currency)
     values ($1, $2, $3, $4, $5) returning id`,
    [listing.id, buyer.id, seller.id, options.amount ?? "1250.00", options.currency ?? "USD"],
  );
  return { id: rows[0]!.id, buyer, seller, listingId: listing.id };
}

/** Moves deal `dealId` through `states` by `transition_deal` (the service connection), in order. */
export async function moveDeal(pool: pg.Pool, dealId: string, ...states: string[]): Promise<void> {
  for (const to of states) {
    await pool.query("select public.transition_deal($1, $2, 'test')", [dealId, to]);
  }
}

/** The buyer starts paying `deal` with create-deal-payment; returns the payment intent's id. */
export async function startPayment(setup: DealsSetup, deal: TestDeal): Promise<string> {
  const res = await invoke<{ client_secret: string }>(createDealPayment, setup.runtime, {
    token: await setup.keys.userToken(deal.buyer),
    body: { dealId: deal.id },
  });
  if (res.status !== 200) throw new Error(`create-deal-payment: ${JSON.stringify(res.body)}`);
  return res.body.client_secret.split("_secret_")[0]!;
}

/** The buyer opens a hosted checkout for `deal` with create-deal-checkout; returns the session's id. */
export async function startCheckout(setup: DealsSetup, deal: TestDeal): Promise<string> {
  const res = await invoke<{ url: string }>(createDealCheckout, setup.runtime, {
    token: await setup.keys.userToken(deal.buyer),
    body: { dealId: deal.id },
  });
  if (res.status !== 200) throw new Error(`create-deal-checkout: ${JSON.stringify(res.body)}`);
  const { rows } = await setup.db.pool.query<{ id: string | null }>(
    "select payproc_checkout_session_id as id from public.deals where id = $1",
    [deal.id],
  );
  const id = rows[0]?.id;
  if (!id) throw new Error("create-deal-checkout stored no session");
  return id;
}

/**
 * The buyer pays `deal` as the frontend would: create-deal-payment, the
 * processor confirms the intent, and its `payment_intent.succeeded` webhook
 * arrives. Returns the intent id.
 */
export async function payDeal(setup: DealsSetup, deal: TestDeal): Promise<string> {
  const intentId = await startPayment(setup, deal);
  const intent = setup.double.setPaymentIntentStatus(intentId, "succeeded");
  const delivered = await deliver(setup, setup.double.event("payment_intent.succeeded", intent));
  if (delivered.status !== 200) throw new Error(`webhook: ${JSON.stringify(delivered.body)}`);
  return intentId;
}

/** Gives the seller a fully onboarded payout account at the processor and in `connect_accounts`. */
export async function onboardSeller(setup: DealsSetup, seller: TestUser): Promise<string> {
  const account = setup.double.addAccount({ metadata: { user_id: seller.id } });
  setup.double.completeOnboarding(account.id);
  await setup.db.pool.query(
    `insert into public.connect_accounts (user_id, payproc_account_id) values ($1, $2)
     on conflict (user_id) do nothing`,
    [seller.id, account.id],
  );
  return account.id;
}

/** Moves a funded deal into the handover (what apa-auto-handover does once the agreement exists). */
export async function startHandover(pool: pg.Pool, dealId: string): Promise<void> {
  await pool.query("select public.transition_deal($1, 'in_handover', 'handover_started')", [
    dealId,
  ]);
}

/**
 * Completes a deal's handover as the service connection would record it:
 * every step delivered and confirmed by the buyer, the deal stamped ready for
 * payout and its 7-day inspection window started (what the participants and
 * apa-auto-handover do step by step).
 */
export async function completeHandover(pool: pg.Pool, dealId: string): Promise<void> {
  await pool.query(
    `update public.deal_handover_steps s set status = 'delivered', delivered_at = now(),
       delivered_by = d.seller_id
     from public.deals d where d.id = s.deal_id and s.deal_id = $1 and s.status = 'pending'`,
    [dealId],
  );
  await pool.query(
    `update public.deal_handover_steps s set status = 'confirmed', confirmed_at = now(),
       confirmed_by = d.buyer_id, confirmation = 'buyer'
     from public.deals d where d.id = s.deal_id and s.deal_id = $1 and s.status = 'delivered'`,
    [dealId],
  );
  await pool.query(
    `update public.deals set handover_completed_at = now(), handover_completion = 'buyer_confirmed',
       inspection_ends_at = now() + interval '7 days'
     where id = $1`,
    [dealId],
  );
}

/**
 * A deal paid into escrow and its seller onboarded; with `handover` (the
 * default) also handed over: in handover with every step confirmed, ready
 * for payout. `handover: "started"` stops after starting it.
 */
export async function payableDeal(
  setup: DealsSetup,
  options: { amount?: string; currency?: string; handover?: boolean | "started" } = {},
): Promise<TestDeal & { intentId: string; accountId: string }> {
  const deal = await createDeal(setup.db.pool, options);
  const intentId = await payDeal(setup, deal);
  const accountId = await onboardSeller(setup, deal.seller);
  const handover = options.handover ?? true;
  if (handover) await startHandover(setup.db.pool, deal.id);
  if (handover === true) await completeHandover(setup.db.pool, deal.id);
  return { ...deal, intentId, accountId };
}

/** The deal's status and frozen commission. */
export async function dealState(
  pool: pg.Pool,
  dealId: string,
): Promise<{ status: string; commission: string | null; payproc_charge_id: string | null }> {
  const { rows } = await pool.query(
    `select status, commission::text as commission, payproc_charge_id
     from public.deals where id = $1`,
    [dealId],
  );
  return rows[0];
}

/** The deal's transitions, oldest first, as `from→to:cause`. */
export async function dealEvents(pool: pg.Pool, dealId: string): Promise<string[]> {
  const { rows } = await pool.query<{ line: string }>(
    `select coalesce(from_status, '') || '→' || to_status || ':' || cause as line
     from public.deal_events where deal_id = $1 order by id`,
    [dealId],
  );
  return rows.map((row) => row.line);
}
