/**
 * One request example per function, for `docs/openapi.json` (`deno task
 * openapi`, see `docs/functions.md#openapi`). They live in one typed place
 * so that a function added without an example, or an example that no longer
 * matches its function's request, fails `deno task check`; a test also
 * parses every example with its function's zod schema (refinements, such as
 * "exactly one of userId and email", are beyond types).
 *
 * @module
 */
import type { z } from "zod";
import type { FunctionEntryOf, FunctionName, FunctionRequest } from "../../shared/functions.ts";
import type { AuthHookPayload } from "../../supabase/functions/_shared/email/auth_hook_payload.ts";

/**
 * A payment processor event as it arrives at `payproc-webhook` (the parts
 * the webhook reads; the processor sends more and documents the rest).
 */
export interface PayprocEventExample {
  id: string;
  object: "event";
  type: string;
  api_version: string;
  created: number;
  livemode: boolean;
  account?: string;
  data: { object: Record<string, unknown> };
}

/** What each webhook receives: a signed body of the sender's own format. */
export interface WebhookBodies {
  "auth-email-webhook": z.input<typeof AuthHookPayload>;
  "payproc-webhook": PayprocEventExample;
}

/**
 * The example body of function `N`: its request (before defaults); a
 * webhook's signed payload; `{}` for a function that takes no body (it
 * accepts nothing or any JSON object, and ignores it).
 */
export type OpenApiExample<N extends FunctionName> = FunctionEntryOf<N> extends { input: z.ZodType }
  ? Exclude<FunctionRequest<N>, undefined>
  : FunctionEntryOf<N>["access"] extends "webhook"
    ? N extends keyof WebhookBodies ? WebhookBodies[N] : never
  : Record<string, never>;

const DEAL = "7c9e6679-7425-40de-944b-e07fc1f90ae7";
const LISTING = "9b2f3c4d-5e6f-4a1b-8c2d-3e4f5a6b7c8d";
const USER = "3f2b8c1e-9a4d-4c7e-8b21-5d6f0a9e7c13";
const OTHER_USER = "b5d1a0e2-6c3f-4e8a-9d7b-1f2e3a4b5c6d";
const SITE = "https://market.example.com";

/** Every function's request example, by name. */
export const OPENAPI_EXAMPLES: { [N in FunctionName]: OpenApiExample<N> } = {
  "auto-fix-subscription-dates": { dryRun: true },
  "check-subscription": {},
  "daily-subscription-sync": {},
  "fix-subscription-dates": { email: "seller@example.com", dryRun: true },
  "fix-user-subscription": { userId: USER },
  "get-price-id": { plan: "starter_monthly" },
  "payproc-sync": {},
  "payproc-webhook": {
    id: "evt_1QxYz2AbCdEfGhIj",
    object: "event",
    type: "checkout.session.completed",
    api_version: "2025-03-31.basil",
    created: 1767225600,
    livemode: false,
    data: {
      object: {
        id: "cs_test_a1B2c3D4e5F6",
        object: "checkout.session",
        mode: "subscription",
        customer: "cus_R2d2C3po",
        subscription: "sub_1QxYz2AbCdEfGhIj",
        client_reference_id: USER,
        payment_status: "paid",
        status: "complete",
      },
    },
  },
  "set-starter-subscriptions": {
    createdAfter: "2026-01-01T00:00:00Z",
    days: 30,
    dryRun: true,
  },
  "sync-invoices": {},
  "create-checkout": {
    priceId: "price_1QxStarterMonthly",
    successUrl: `${SITE}/billing?checkout=success`,
    cancelUrl: `${SITE}/pricing`,
  },
  "customer-portal": {},
  "cancel-deal": { dealId: DEAL, reason: "The buyer and I agreed to call it off" },
  "create-deal-checkout": {
    dealId: DEAL,
    successUrl: `${SITE}/deals/${DEAL}?paid=1`,
    cancelUrl: `${SITE}/deals/${DEAL}`,
  },
  "create-deal-payment": { dealId: DEAL },
  "deal-deadlines": {},
  "payment-status": { dealId: DEAL },
  "refund-deal-payment": { dealId: DEAL, reason: "Assets were never transferred" },
  "release-deal-payout": { dealId: DEAL },
  "resolve-deal-case": {
    caseId: "6f1c2d3e-4b5a-4c7d-8e9f-0a1b2c3d4e5f",
    outcome: "partial_refund",
    refundAmount: "250.00",
  },
  "auth-email-webhook": {
    user: { id: USER, email: "new.user@example.com", user_metadata: {} },
    email_data: {
      token: "123456",
      token_hash: "pkce_8f14e45fceea167a5a36dedd4bea2543",
      redirect_to: `${SITE}/welcome`,
      email_action_type: "signup",
      site_url: SITE,
      token_new: "",
      token_hash_new: "",
    },
  },
  "send-admin-contact-notification": {},
  "send-admin-listing-notification": {},
  "send-admin-message": {
    userIds: [USER, OTHER_USER],
    subject: "Scheduled maintenance on Sunday",
    message: "The marketplace is read-only on Sunday from 02:00 to 03:00 UTC.",
  },
  "send-auth-email": {
    email: "new.user@example.com",
    actionType: "magiclink",
    tokenHash: "pkce_8f14e45fceea167a5a36dedd4bea2543",
    redirectTo: `${SITE}/dashboard`,
  },
  "send-email": {
    to: "seller@example.com",
    subject: "Your listing is live",
    html: "<p>Your listing <strong>Acme Analytics</strong> is now visible to buyers.</p>",
    emailType: "listing_approved",
  },
  "send-listing-approval-notification": { listingId: LISTING },
  "send-listing-notifications": {},
  "send-new-user-notification": { userId: USER },
  "send-notification": {
    userId: USER,
    type: "handover",
    title: "Handover reminder",
    body: "Please confirm that you received the domain transfer.",
    link: `/deals/${DEAL}`,
    email: true,
  },
  "send-payment-email": { dealId: DEAL, kind: "payment_received" },
  "send-resubmission-notification": {
    listingId: LISTING,
    reason: "Please add the last 12 months of revenue to the financials.",
  },
  "send-sponsored-notifications": {},
  "send-queued-notices": {},
  "cleanup-duplicates": { dryRun: true, kinds: ["listings"] },
  "process-sponsored-activations": {},
  "run-daily-tasks": { force: false, slot: "2026-01-15" },
  "run-price-alerts": {},
  "update-views-count": {},
  "connect-dashboard-link": {},
  "connect-onboarding-link": {},
  "refresh-kyc-status": {},
  "apa-auto-handover": {},
  "deal-create-upload-url": {
    dealId: DEAL,
    fileName: "signed-apa.pdf",
    contentType: "application/pdf",
    size: 184_320,
    kind: "signed_apa",
  },
  "generate-apa-pdf": { dealId: DEAL },
  "analyze-project": { url: "https://acme-analytics.example.com" },
  "security-headers": {},
  "test-env": {},
  "test-payproc": {},
  "test-sponsored-activation": { at: "2026-01-15T09:00:00Z" },
};
