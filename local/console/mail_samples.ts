/**
 * One sample of every e-mail the server writes, for looking at them without
 * making the events happen (`/_local/mail/samples` in the local mail viewer)
 * and for the browser test that reads each one as a recipient sees it
 * (`tests/local/mail_samples_browser.test.ts`).
 *
 * Each sample calls the real template with realistic data — names, amounts
 * in several currencies, a listing title with `&`, `<b>` and quotes,
 * multi-line reasons and messages, digests of several entries — and renders
 * it with {@linkcode renderEmail} on {@linkcode SAMPLE_SITE_URL}, as the
 * sending code does (`notifications/notify.ts`; the auth e-mails through
 * `authEmailMessage`, as the Send Email Hook and `send-auth-email` do).
 * Dates and ids are fixed, so a sample renders the same every time.
 *
 * {@linkcode MAIL_SAMPLES} is keyed by every `EMAIL_TYPES` key of
 * `shared/notifications.ts`: a new e-mail type does not type-check until it
 * has a sample here.
 *
 * @module
 */
import type { AuthEmailAction, EmailType } from "../../shared/notifications.ts";
import { Env } from "../../supabase/functions/_shared/platform/env.ts";
import {
  type EmailContent,
  type RenderedEmail,
  renderEmail,
} from "../../supabase/functions/_shared/email/render.ts";
import {
  sellerVerificationNotice,
  welcomeEmail,
} from "../../supabase/functions/_shared/email/templates/account.ts";
import {
  adminContactDigest,
  adminListingDigest,
} from "../../supabase/functions/_shared/email/templates/admin.ts";
import {
  authEmailMessage,
  authEmails,
} from "../../supabase/functions/_shared/email/templates/auth.ts";
import {
  adminDisputeAfterPayoutNotice,
  adminEscrowHoldNotice,
  adminPaymentReturnedNotice,
  adminPaymentReturnFailedNotice,
  adminPaymentReturnReversedNotice,
  adminPayoutAfterRefundNotice,
  paymentReturnedNotice,
  type StrayPaymentFacts,
} from "../../supabase/functions/_shared/email/templates/deal_alerts.ts";
import {
  type CompletedHandover,
  handoverCompleteSellerNotice,
  sellerReminderNotice,
} from "../../supabase/functions/_shared/email/templates/handover.ts";
import {
  listingApprovedEmail,
  listingResubmissionEmail,
} from "../../supabase/functions/_shared/email/templates/listings.ts";
import { newListingsDigest } from "../../supabase/functions/_shared/email/templates/listings_digest.ts";
import {
  adminMessageEmail,
  noticeEmail,
} from "../../supabase/functions/_shared/email/templates/messages.ts";
import {
  type PaymentDeal,
  paymentNotices,
} from "../../supabase/functions/_shared/email/templates/payments.ts";
import { priceAlertNotice } from "../../supabase/functions/_shared/email/templates/price_alerts.ts";
import {
  accessApprovedNotice,
  accessDeclinedNotice,
  accessExpiredNotice,
  accessRequestedNotice,
  type AccessRequestFacts,
  accessRevokedNotice,
} from "../../supabase/functions/_shared/email/templates/listing_access.ts";
import {
  conversationReportedNotice,
  conversationUnreadEmail,
} from "../../supabase/functions/_shared/email/templates/conversations.ts";
import {
  dealWithdrawnNotice,
  diligenceConfirmedNotice,
  exclusivityEndingNotice,
  exclusivityExtendedNotice,
  exclusivityLapsedNotice,
  type LoiDealFacts,
  offerAcceptedNotice,
  offerCounteredNotice,
  type OfferFacts,
} from "../../supabase/functions/_shared/email/templates/letters_of_intent.ts";
import {
  adminCaseEscalatedNotice,
  caseEscalatedNotice,
  type CaseFacts,
  caseOpenedNotice,
  caseResolvedNotice,
  caseSettlementProposedNotice,
  deliveryAcceptedNotice,
} from "../../supabase/functions/_shared/email/templates/deal_cases.ts";
import {
  adminPayoutWaitingNotice,
  adminRepayoutNotice,
  type EscrowDealFacts,
  holdbackReleasedNotice,
  inspectionStartedNotice,
  partialRefundNotice,
  payoutWaitingNotice,
} from "../../supabase/functions/_shared/email/templates/escrow_release.ts";
import {
  sponsoredEndingNotice,
  type SponsoredPlacement,
  sponsoredStartedNotice,
} from "../../supabase/functions/_shared/email/templates/sponsored.ts";

/** One sample e-mail. */
export interface MailSample {
  type: EmailType;
  /** One line: when it is sent. */
  description: string;
  /** The message as the sender gets it: subject, HTML part, text part. */
  render(): RenderedEmail;
}

/** The frontend the samples' links point at (`SITE_URL` of the local stack's frontend). */
export const SAMPLE_SITE_URL = "http://localhost:5173";

/** The Supabase URL the auth samples' verify links point at (the local gateway). */
export const SAMPLE_SUPABASE_URL = "http://127.0.0.1:54321";

/**
 * The listing title most samples name: every character HTML escapes, so a
 * sample shows whether a value reaches the reader as text.
 */
export const SAMPLE_LISTING_TITLE = `Fish & Chips <b>Finder</b> — "recipes" SaaS`;

/** Values the samples carry that must read literally (as text, not markup) wherever they appear. */
export const SAMPLE_LITERALS: readonly string[] = [
  SAMPLE_LISTING_TITLE,
  "<script>alert('hi')</script>",
  "R&D <Tools>",
  "<b>PHP</b>",
  "Ana O'Neil & Co",
];

const NOW = new Date("2026-03-14T09:30:00Z");
const hoursFrom = (at: Date, hours: number) => new Date(at.getTime() + hours * 3_600_000);

const LISTING_ID = "7d1f4a52-3c1e-4b8e-9a60-2f5b8c9d0e11";
const DEAL_ID = "b2c3d4e5-f6a7-4b8c-9d0e-1f2a3b4c5d6e";
const id = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, "0")}`;

const DEAL: PaymentDeal = {
  id: DEAL_ID,
  listingTitle: SAMPLE_LISTING_TITLE,
  amount: "12500.00",
  commission: "625.00",
  currency: "EUR",
};

const STRAY: StrayPaymentFacts = {
  dealId: DEAL_ID,
  listingTitle: SAMPLE_LISTING_TITLE,
  amount: "4800.00",
  currency: "USD",
  reason: "deal_already_paid",
  paymentIntentId: "pi_3PqR8sLkT2x9YbZ1",
};

const PLACEMENT: SponsoredPlacement = {
  listingId: LISTING_ID,
  title: SAMPLE_LISTING_TITLE,
  startsAt: NOW,
  endsAt: hoursFrom(NOW, 7 * 24),
};

const COMPLETED: CompletedHandover = {
  id: DEAL_ID,
  listingTitle: SAMPLE_LISTING_TITLE,
  sellerNet: "11875.00",
  currency: "EUR",
  completion: "inspection_lapsed",
  inspectionEndsAt: hoursFrom(NOW, 7 * 24),
};

const ACCESS_REQUEST: AccessRequestFacts = {
  requestId: id(41),
  listingId: LISTING_ID,
  title: SAMPLE_LISTING_TITLE,
  ndaVersion: "1",
  message:
    'Hi! I run two recipe sites and would like to see the traffic sources.\nI can share proof of funds: R&D <Tools> budget, "cash".',
  expiresAt: hoursFrom(NOW, 14 * 24),
  reason: null,
};

const CONVERSATION_ID = id(42);

const COUNTER_OFFER: OfferFacts = {
  offerId: id(43),
  listingId: LISTING_ID,
  title: SAMPLE_LISTING_TITLE,
  by: "seller",
  amount: "12500.00",
  currency: "EUR",
  terms: {
    cash_at_close: "10000.00",
    holdback_days: 30,
    inspection_days: 7,
    exclusivity_days: 14,
    proposed_close_date: "2026-04-30",
    conditions: [
      "The Stripe & Mailchimp accounts transfer with the domain",
      'The seller stays on for 30 days of <b>PHP</b> support ("handover")',
    ],
  },
  message: "Happy to go to €12,500 with a holdback.\nR&D <Tools> stay with the business.",
  expiresAt: hoursFrom(NOW, 7 * 24),
};

const DILIGENCE_DEAL: LoiDealFacts = {
  dealId: DEAL_ID,
  listingId: LISTING_ID,
  title: SAMPLE_LISTING_TITLE,
  amount: "12500.00",
  currency: "EUR",
  status: "in_diligence",
  exclusiveUntil: hoursFrom(NOW, 14 * 24),
};

const ESCROW_DEAL: EscrowDealFacts = {
  dealId: DEAL_ID,
  listingTitle: SAMPLE_LISTING_TITLE,
  currency: "EUR",
};

const DEAL_CASE: CaseFacts = {
  caseId: id(44),
  dealId: DEAL_ID,
  title: SAMPLE_LISTING_TITLE,
  amount: "12500.00",
  currency: "EUR",
  openedBy: "buyer",
  reason: "not_as_described",
  details:
    'The MRR shown was €2,100; the Stripe & <b>PHP</b> dashboard says €1,400.\nThe "recipes" database has 300 entries, not 3,000.',
  negotiateUntil: hoursFrom(NOW, 7 * 24),
};

/** `content` rendered as `notifications/notify.ts` renders every notice's e-mail. */
const rendered = (content: () => EmailContent) => () => renderEmail(content(), SAMPLE_SITE_URL);

/** The one payment e-mail `paymentNotices` writes first for `kind` (buyer or seller). */
function payment(kind: Parameters<typeof paymentNotices>[0]): EmailContent {
  const [first] = paymentNotices(kind, DEAL);
  if (!first) throw new Error(`paymentNotices wrote no notice for ${kind}`);
  return first.email;
}

/**
 * The first e-mail of auth `action` rendered by `authEmailMessage`, as the
 * Send Email Hook delivers it (a name, a code, a hash, a redirect).
 */
function auth(action: AuthEmailAction) {
  return (): RenderedEmail => {
    const env = new Env({ SUPABASE_URL: SAMPLE_SUPABASE_URL });
    const [email] = authEmails({
      action,
      email: "ana@example.test",
      name: "Ana O'Neil & Co",
      token: "482913",
      tokenHash: "pkce_5f2b8e0c7a1d4e6f9b3c",
      redirectTo: `${SAMPLE_SITE_URL}/auth/callback?next=/dashboard&tab=deals`,
      ...(action === "email_change"
        ? {
          newEmail: "ana.oneil@example.test",
          tokenNew: "730561",
          tokenHashNew: "pkce_9a8b7c6d5e4f3a2b1c0d",
        }
        : {}),
    }, env);
    if (email?.emailType !== `auth_${action}`) {
      throw new Error(`authEmails wrote no auth_${action} e-mail for ${action}`);
    }
    const { subject, html, text } = authEmailMessage(email, SAMPLE_SITE_URL);
    return { subject, html, text };
  };
}

/** One sample per e-mail type, in the order of `EMAIL_TYPES`. */
export const MAIL_SAMPLES: { readonly [T in EmailType]: MailSample } = {
  welcome: {
    type: "welcome",
    description: "A new user's account is created (the welcome job).",
    render: rendered(() => welcomeEmail("Ana O'Neil & Co")),
  },
  seller_verification: {
    type: "seller_verification",
    description: "The processor switches a seller's payouts off (or on) after verification.",
    render: rendered(() =>
      sellerVerificationNotice(false, {
        currentlyDue: 2,
        pastDue: 1,
        disabledReason: "requirements.past_due",
      }).email
    ),
  },
  notification: {
    type: "notification",
    description: "A service sends a notice with `email: true` through send-notification.",
    render: rendered(() =>
      noticeEmail(
        "Scheduled maintenance on Sunday",
        "The marketplace is read-only on Sunday from 02:00 to 03:00 UTC.\n" +
          "Deals & payments in progress are not affected.\n\n" +
          "Questions? Write to <support@example.test>.",
        "/status",
      )
    ),
  },
  listing_approved: {
    type: "listing_approved",
    description: "An admin approves a seller's listing (send-listing-approval-notification).",
    render: rendered(() => listingApprovedEmail({ id: LISTING_ID, title: SAMPLE_LISTING_TITLE })),
  },
  listing_resubmission: {
    type: "listing_resubmission",
    description: "An admin rejects a listing with a reason (send-resubmission-notification).",
    render: rendered(() =>
      listingResubmissionEmail(
        { id: LISTING_ID, title: SAMPLE_LISTING_TITLE },
        "The revenue screenshots are missing.\n" +
          "Please add the last 3 months (MRR > $2,000 & churn < 5%) and resubmit.\n" +
          'The "tech stack" field says <b>PHP</b>; the code is Ruby.',
      )
    ),
  },
  new_listings_digest: {
    type: "new_listings_digest",
    description: "The daily digest of listings approved since the user's last one (opt-in).",
    render: rendered(() =>
      newListingsDigest([
        {
          id: LISTING_ID,
          title: SAMPLE_LISTING_TITLE,
          category: "saas",
          askingPrice: "12500.00",
          currency: "EUR",
        },
        {
          id: id(2),
          title: "R&D <Tools> newsletter",
          category: "newsletter",
          askingPrice: null,
          currency: "USD",
        },
        {
          id: id(3),
          title: "Plant shop (Shopify, 4 years)",
          category: "ecommerce",
          askingPrice: "89000.00",
          currency: "GBP",
        },
      ], 7).email
    ),
  },
  payment_received: {
    type: "payment_received",
    description: "A buyer's deal payment clears into escrow (to the buyer; the seller too).",
    render: rendered(() => payment("payment_received")),
  },
  payout_released: {
    type: "payout_released",
    description: "An admin releases a deal's payout to the seller (the buyer is told too).",
    render: rendered(() => payment("payout_released")),
  },
  refund_issued: {
    type: "refund_issued",
    description: "A deal's payment is refunded to the buyer (the seller is told too).",
    render: rendered(() => payment("refund_issued")),
  },
  partial_refund_issued: {
    type: "partial_refund_issued",
    description:
      "To the buyer (here) and the seller: part of the payment was refunded, as a dispute case decided.",
    render: rendered(() =>
      partialRefundNotice({
        ...ESCROW_DEAL,
        amount: "2500.00",
        refundId: "re_3PqR8sLkT2x9YbZ3",
        side: "buyer",
      }).email
    ),
  },
  payout_waiting: {
    type: "payout_waiting",
    description:
      "To the seller: the payout is due, but their payout account must be finished first.",
    render: rendered(() =>
      payoutWaitingNotice({
        ...ESCROW_DEAL,
        amount: "9375.00",
        reason: "payouts_disabled",
        disabledReason: "requirements.past_due",
      }).email
    ),
  },
  holdback_released: {
    type: "holdback_released",
    description:
      "To the seller (here) and the buyer: the holdback was paid to the seller; the deal is complete.",
    render: rendered(() =>
      holdbackReleasedNotice({
        ...ESCROW_DEAL,
        amount: "2500.00",
        transferId: "tr_3PqR8sLkT2x9YbZ4",
        side: "seller",
      }).email
    ),
  },
  payment_failed: {
    type: "payment_failed",
    description: "A buyer's deal payment fails.",
    render: rendered(() => payment("payment_failed")),
  },
  payment_returned: {
    type: "payment_returned",
    description: "A payment the deal could not take is refunded automatically (to the buyer).",
    render: rendered(() => paymentReturnedNotice(STRAY).email),
  },
  admin_message: {
    type: "admin_message",
    description: "An admin writes to chosen users (send-admin-message).",
    render: rendered(() =>
      adminMessageEmail(
        "New fees from April 1st",
        "Hello,\n\nFrom April 1st our commission on deals over €10,000 drops to 4%.\n" +
          "Deals opened before then keep their fee.\n\n" +
          "Questions? Reply to this e-mail — we read every one.\n— The marketplace team",
      )
    ),
  },
  admin_listing_digest: {
    type: "admin_listing_digest",
    description: "The admins' digest of listings submitted for review since the last one.",
    render: rendered(() =>
      adminListingDigest([
        {
          id: LISTING_ID,
          title: SAMPLE_LISTING_TITLE,
          category: "saas",
          askingPrice: "12500.00",
          currency: "EUR",
          submittedAt: hoursFrom(NOW, -20),
        },
        {
          id: id(2),
          title: "R&D <Tools> newsletter",
          category: "newsletter",
          askingPrice: "3200.00",
          currency: "USD",
          submittedAt: hoursFrom(NOW, -5),
        },
      ], 2).email
    ),
  },
  admin_contact_digest: {
    type: "admin_contact_digest",
    description: "The admins' digest of contact-form messages since the last one.",
    render: rendered(() =>
      adminContactDigest(
        [
          {
            name: "Ana O'Neil & Co",
            email: "ana@example.test",
            subject: "Question about escrow",
            message: "Hi!\nHow long is the money held in escrow after I pay?\n\nThanks & regards",
            createdAt: hoursFrom(NOW, -30),
          },
          {
            name: "Bob",
            email: "bob@example.test",
            subject: null,
            message: "<script>alert('hi')</script> is what your form did to my message",
            createdAt: hoursFrom(NOW, -2),
          },
        ],
        3,
        [{ ceiling: 50, reachedAt: hoursFrom(NOW, -12), windowEndsAt: hoursFrom(NOW, -11) }],
        { waiting: 7, arrived: 4 },
      ).email
    ),
  },
  price_alert: {
    type: "price_alert",
    description: "Listings match a user's price alerts or saved searches (run-price-alerts).",
    render: rendered(() =>
      priceAlertNotice([
        {
          listingId: LISTING_ID,
          title: SAMPLE_LISTING_TITLE,
          price: "11900.00",
          currency: "EUR",
          alert: { kind: "listing", targetPrice: "12000.00" },
        },
        {
          listingId: id(2),
          title: "R&D <Tools> newsletter",
          price: "3000.00",
          currency: "USD",
          alert: { kind: "search", category: "newsletter", maxPrice: "5000.00" },
        },
        {
          listingId: id(4),
          title: "Recipe app (iOS & Android)",
          price: "450000",
          currency: "JPY",
          alert: { kind: "search", category: "mobile", maxPrice: "500000" },
        },
      ]).email
    ),
  },
  sponsored_started: {
    type: "sponsored_started",
    description: "A seller's sponsored placement starts (send-sponsored-notifications).",
    render: rendered(() => sponsoredStartedNotice(PLACEMENT).email),
  },
  sponsored_ending: {
    type: "sponsored_ending",
    description: "A seller's sponsored placement ends within a day.",
    render: rendered(() => sponsoredEndingNotice(PLACEMENT).email),
  },
  handover_reminder: {
    type: "handover_reminder",
    description: "Daily, to the party late in a deal's handover (here the seller).",
    render: rendered(() =>
      sellerReminderNotice({
        id: DEAL_ID,
        listingTitle: SAMPLE_LISTING_TITLE,
        openSteps: [
          "Transfer the domain fishandchips.example",
          "Hand over the Stripe & Mailchimp accounts",
          "Send the <source code> archive",
        ],
      }).email
    ),
  },
  handover_complete: {
    type: "handover_complete",
    description: "Every handover step is confirmed (to the seller; admins get ready-for-payout).",
    render: rendered(() => handoverCompleteSellerNotice(COMPLETED).email),
  },
  offer_countered: {
    type: "offer_countered",
    description: "To the other side: the seller (or the buyer) countered an offer with new terms.",
    render: rendered(() => offerCounteredNotice(COUNTER_OFFER).email),
  },
  offer_accepted: {
    type: "offer_accepted",
    description:
      "To the author of the accepted version: the deal is in due diligence (or awaits payment).",
    render: rendered(() =>
      offerAcceptedNotice({ ...COUNTER_OFFER, by: "buyer", message: null }, DILIGENCE_DEAL).email
    ),
  },
  deal_diligence_confirmed: {
    type: "deal_diligence_confirmed",
    description: "To the seller: the buyer confirmed due diligence and proceeds to payment.",
    render: rendered(() =>
      diligenceConfirmedNotice({ ...DILIGENCE_DEAL, status: "pending_payment" }).email
    ),
  },
  deal_withdrawn: {
    type: "deal_withdrawn",
    description: "To the other side: the buyer (or the seller) withdrew during due diligence.",
    render: rendered(() =>
      dealWithdrawnNotice(
        { ...DILIGENCE_DEAL, status: "cancelled" },
        {
          by: "buyer",
          reason: "The churn is higher than the listing said:\n8% <script>alert('hi')</script>.",
        },
        "seller",
      ).email
    ),
  },
  deal_exclusivity_extended: {
    type: "deal_exclusivity_extended",
    description: "To the buyer: the seller extended their exclusivity for due diligence.",
    render: rendered(() =>
      exclusivityExtendedNotice({ ...DILIGENCE_DEAL, exclusiveUntil: hoursFrom(NOW, 21 * 24) })
        .email
    ),
  },
  deal_exclusivity_ending: {
    type: "deal_exclusivity_ending",
    description:
      "To the buyer (here) and the seller: the exclusivity ends in 48 hours (send-queued-notices).",
    render: rendered(() =>
      exclusivityEndingNotice({ ...DILIGENCE_DEAL, exclusiveUntil: hoursFrom(NOW, 48) }, "buyer")
        .email
    ),
  },
  deal_exclusivity_lapsed: {
    type: "deal_exclusivity_lapsed",
    description:
      "To the buyer and the seller (here): the exclusivity ended without confirmation; the deal is cancelled.",
    render: rendered(() =>
      exclusivityLapsedNotice(
        { ...DILIGENCE_DEAL, status: "cancelled", exclusiveUntil: hoursFrom(NOW, -1) },
        "seller",
      ).email
    ),
  },
  inspection_started: {
    type: "inspection_started",
    description:
      "To the buyer: the handover is complete and the inspection period runs; accept the delivery or open a case.",
    render: rendered(() =>
      inspectionStartedNotice({
        ...ESCROW_DEAL,
        inspectionEndsAt: hoursFrom(NOW, 7 * 24),
        payoutAmount: "9375.00",
        holdbackAmount: "2500.00",
        holdbackDays: 30,
      }).email
    ),
  },
  deal_delivery_accepted: {
    type: "deal_delivery_accepted",
    description: "To the seller: the buyer accepted the delivery; the payout is released shortly.",
    render: rendered(() =>
      deliveryAcceptedNotice({
        dealId: DEAL_ID,
        title: SAMPLE_LISTING_TITLE,
        amount: "12500.00",
        currency: "EUR",
        payoutAmount: "9375.00",
        holdbackAmount: "2500.00",
        holdbackDays: 30,
      }).email
    ),
  },
  deal_case_opened: {
    type: "deal_case_opened",
    description:
      "To the seller (here) and the buyer: a dispute case was opened; 7 days to settle before an admin decides.",
    render: rendered(() => caseOpenedNotice(DEAL_CASE, "seller").email),
  },
  deal_case_settlement_proposed: {
    type: "deal_case_settlement_proposed",
    description:
      "To the other side of an open case: the seller (or the buyer) proposes a settlement.",
    render: rendered(() =>
      caseSettlementProposedNotice(
        DEAL_CASE,
        "seller",
        { outcome: "partial_refund", refundAmount: "1500.00" },
        "12500.00",
        { outcome: "refund", refundAmount: null },
      ).email
    ),
  },
  deal_case_escalated: {
    type: "deal_case_escalated",
    description:
      "To the buyer (here) and the seller: the case goes to an admin (asked for, or 7 days passed).",
    render: rendered(() => caseEscalatedNotice(DEAL_CASE, "deadline", "buyer").email),
  },
  deal_case_resolved: {
    type: "deal_case_resolved",
    description:
      "To the seller (here) and the buyer: the case was settled or decided, and what happens to the money.",
    render: rendered(() =>
      caseResolvedNotice(DEAL_CASE, {
        outcome: "partial_refund",
        refundAmount: "2500.00",
        resolution: "admin",
        phase: "escrow",
        payoutAmount: "9500.00",
        holdbackAmount: null,
        heldBack: "2500.00",
        holdbackDays: 30,
        inspectionEndsAt: hoursFrom(NOW, -24),
        holdbackReleaseAt: null,
        now: NOW,
      }, "seller").email
    ),
  },
  admin_payment_returned: {
    type: "admin_payment_returned",
    description: "To admins: a payment the deal could not take was refunded automatically.",
    render: rendered(() =>
      adminPaymentReturnedNotice({ ...STRAY, refundId: "re_3PqR8sLkT2x9YbZ1" }).email
    ),
  },
  admin_payment_return_failed: {
    type: "admin_payment_return_failed",
    description: "To admins: the processor refused to refund a payment the deal could not take.",
    render: rendered(() =>
      adminPaymentReturnFailedNotice({
        ...STRAY,
        reason: "amount_mismatch",
        error: "charge_already_refunded: Charge ch_3PqR8s has already been refunded.\n" +
          "Request req_Xy7 <POST /v1/refunds> returned 400.",
      }).email
    ),
  },
  admin_payment_return_reversed: {
    type: "admin_payment_return_reversed",
    description:
      "To admins: the refund of a payment the deal could not take failed after it was made; the daily run refunds it again.",
    render: rendered(() =>
      adminPaymentReturnReversedNotice({
        ...STRAY,
        refundId: "re_3PqR8sLkT2x9YbZ2",
        refundAmount: STRAY.amount,
        refundStatus: "failed",
        failureReason: "expired_or_canceled_card",
        buyerWasTold: true,
      }).email
    ),
  },
  admin_dispute_after_payout: {
    type: "admin_dispute_after_payout",
    description: "To admins: a buyer's bank disputes a deal after the money left escrow.",
    render: rendered(() =>
      adminDisputeAfterPayoutNotice({
        dealId: DEAL_ID,
        listingTitle: SAMPLE_LISTING_TITLE,
        disputeId: "dp_1PqR8sLkT2x9YbZ1",
        amount: "12500.00",
        currency: "EUR",
        reason: "product_not_received",
        status: "needs_response",
        dueBy: hoursFrom(NOW, 7 * 24),
        after: "payout",
        payoutReversed: false,
      }).email
    ),
  },
  admin_payout_after_refund: {
    type: "admin_payout_after_refund",
    description: "To admins: a payout reached the seller of a deal that was refunded to the buyer.",
    render: rendered(() =>
      adminPayoutAfterRefundNotice({
        dealId: DEAL_ID,
        listingTitle: SAMPLE_LISTING_TITLE,
        transferId: "tr_1PqR8sLkT2x9YbZ1",
        amount: "11250.00",
        currency: "EUR",
        kind: "payout",
      }).email
    ),
  },
  admin_escrow_hold: {
    type: "admin_escrow_hold",
    description: "To admins: a deal's money has sat in escrow close to the processor's limit.",
    render: rendered(() =>
      adminEscrowHoldNotice({
        dealId: DEAL_ID,
        listingTitle: SAMPLE_LISTING_TITLE,
        amount: "12500.00",
        currency: "EUR",
        status: "in_handover",
        fundedAt: hoursFrom(NOW, -76 * 24),
        daysHeld: 76,
        daysLeft: 14,
        holdDays: 90,
      }).email
    ),
  },
  admin_payout_waiting: {
    type: "admin_payout_waiting",
    description: "To admins: a seller's payout has waited 3 days for their payout account.",
    render: rendered(() =>
      adminPayoutWaitingNotice({
        ...ESCROW_DEAL,
        amount: "9375.00",
        reason: "no_account",
        since: hoursFrom(NOW, -72),
      }).email
    ),
  },
  admin_repayout: {
    type: "admin_repayout",
    description:
      "To admins: a chargeback the platform won after reversing the payout; the seller is paid again.",
    render: rendered(() =>
      adminRepayoutNotice({
        ...ESCROW_DEAL,
        amount: "11875.00",
        disputeId: "dp_1PqR8sLkT2x9YbZ2",
      }).email
    ),
  },
  admin_deal_case_escalated: {
    type: "admin_deal_case_escalated",
    description:
      "To admins: a dispute case was escalated and needs a decision (resolve-deal-case).",
    render: rendered(() =>
      adminCaseEscalatedNotice({
        ...DEAL_CASE,
        escalatedBy: "seller",
        openedAt: hoursFrom(NOW, -48),
        held: "12500.00",
        buyerProposal: { outcome: "refund", refundAmount: null },
        sellerProposal: { outcome: "partial_refund", refundAmount: "1500.00" },
      }).email
    ),
  },
  admin_conversation_report: {
    type: "admin_conversation_report",
    description: "To admins: a participant reported a conversation (send-queued-notices).",
    render: rendered(() =>
      conversationReportedNotice({
        conversationId: CONVERSATION_ID,
        title: SAMPLE_LISTING_TITLE,
        reporter: "buyer",
        reason:
          'The seller asked me to pay outside the platform:\n"send it to my <b>PHP</b> wallet".',
        reportedAt: NOW,
      }).email
    ),
  },
  listing_access_requested: {
    type: "listing_access_requested",
    description:
      "To a seller: a buyer accepted the NDA and asks for access to a confidential listing.",
    render: rendered(() => accessRequestedNotice(ACCESS_REQUEST).email),
  },
  listing_access_approved: {
    type: "listing_access_approved",
    description: "To the buyer: the seller approved their access (with a note).",
    render: rendered(() =>
      accessApprovedNotice({ ...ACCESS_REQUEST, reason: "Welcome, Ana O'Neil & Co!" }).email
    ),
  },
  listing_access_declined: {
    type: "listing_access_declined",
    description: "To the buyer: the seller declined their access request.",
    render: rendered(() =>
      accessDeclinedNotice({
        ...ACCESS_REQUEST,
        reason: "We only talk to buyers with\nproof of funds <script>alert('hi')</script>.",
      }).email
    ),
  },
  listing_access_revoked: {
    type: "listing_access_revoked",
    description: "To the buyer: the seller revoked their access (or blocked the conversation).",
    render: rendered(() =>
      accessRevokedNotice({ ...ACCESS_REQUEST, reason: "The seller blocked the conversation" })
        .email
    ),
  },
  listing_access_expired: {
    type: "listing_access_expired",
    description: "To the buyer: their request lapsed after 14 days without an answer (daily run).",
    render: rendered(() => accessExpiredNotice(ACCESS_REQUEST).email),
  },
  conversation_unread: {
    type: "conversation_unread",
    description:
      "To a participant: messages unread 15 minutes after they were sent (at most hourly).",
    render: rendered(() =>
      conversationUnreadEmail({
        conversationId: CONVERSATION_ID,
        title: SAMPLE_LISTING_TITLE,
        from: "seller",
        messages: [
          { body: "Thanks for signing the NDA.", sentAt: NOW },
          {
            body:
              "Traffic is 60% organic, 30% <b>PHP</b> forum referrals.\nHappy to share analytics.",
            sentAt: hoursFrom(NOW, 0.1),
          },
        ],
        total: 2,
      })
    ),
  },
  auth_signup: {
    type: "auth_signup",
    description: "A user signs up with e-mail (Supabase Auth's Send Email Hook).",
    render: auth("signup"),
  },
  auth_invite: {
    type: "auth_invite",
    description: "An admin invites a user by e-mail (Send Email Hook).",
    render: auth("invite"),
  },
  auth_magiclink: {
    type: "auth_magiclink",
    description: "A user asks for a sign-in link (Send Email Hook or send-auth-email).",
    render: auth("magiclink"),
  },
  auth_recovery: {
    type: "auth_recovery",
    description: "A user asks to reset their password (Send Email Hook).",
    render: auth("recovery"),
  },
  auth_email_change: {
    type: "auth_email_change",
    description: "A user changes their address: this one goes to the current address.",
    render: auth("email_change"),
  },
  auth_reauthentication: {
    type: "auth_reauthentication",
    description: "A user confirms a sensitive change with a one-time code (Send Email Hook).",
    render: auth("reauthentication"),
  },
};

/** The sample of `type`, or undefined for a name that is no e-mail type. */
export function mailSample(type: string): MailSample | undefined {
  return Object.hasOwn(MAIL_SAMPLES, type) ? MAIL_SAMPLES[type as EmailType] : undefined;
}
