/**
 * The catalog of every server function (interface §1 and §5): its name, who
 * may call it, the group it belongs to, and the zod schemas of its request
 * and answer. It is the one source of these facts: the server's function
 * factory takes a function's access rule and input schema from here (a
 * handler only names itself), tests check every function's answers against
 * its `output`, and the frontend's typed `invoke` reads both schemas. Each
 * entry has its folder under `supabase/functions/` (a test checks it). It
 * holds the interface's 46 functions and one the team added, `cancel-deal`
 * (a cancel that stops the payment at the processor first; the reason is
 * written beside the access table in `tests/shared/functions.test.ts`).
 *
 * @module
 */
import type { z } from "zod";
import type { Access } from "./access.ts";
import { AnalyzeProjectInput, AnalyzeProjectOutput } from "./analysis_schemas.ts";
import {
  AutoFixSubscriptionDatesInput,
  FixSubscriptionDatesInput,
  FixSubscriptionDatesOutput,
  FixUserSubscriptionInput,
  FixUserSubscriptionOutput,
  PayprocWebhookOutput,
  SetStarterSubscriptionsInput,
  SetStarterSubscriptionsOutput,
} from "./billing_schemas.ts";
import {
  CancelDealInput,
  CancelDealOutput,
  CreateDealCheckoutInput,
  CreateDealCheckoutOutput,
  DealSettlementOutput,
  PaymentStatusOutput,
  RefundDealPaymentInput,
  ReleaseDealPayoutInput,
} from "./deal_schemas.ts";
import {
  CreateUploadUrlInput,
  CreateUploadUrlOutput,
  GenerateApaOutput,
} from "./document_schemas.ts";
import { JobAnswer } from "./job_schemas.ts";
import {
  CleanupDuplicatesInput,
  CleanupDuplicatesOutput,
  RunDailyTasksInput,
  RunDailyTasksOutput,
  TestSponsoredActivationInput,
  TestSponsoredActivationOutput,
} from "./scheduled_schemas.ts";
import {
  AdminDigestOutput,
  AuthEmailWebhookOutput,
  ListingIdInput,
  NoticesOutput,
  SendAdminMessageInput,
  SendAdminMessageOutput,
  SendAuthEmailInput,
  SendAuthEmailOutput,
  SendEmailInput,
  SendEmailOutput,
  SendNewUserNotificationInput,
  SendNewUserNotificationOutput,
  SendNotificationInput,
  SendNotificationOutput,
  SendPaymentEmailInput,
  SendResubmissionNotificationInput,
} from "./notification_schemas.ts";
import {
  CheckSubscriptionOutput,
  ConnectLinkOutput,
  CreateCheckoutInput,
  CreateCheckoutOutput,
  CreateDealPaymentInput,
  CreateDealPaymentOutput,
  CustomerPortalOutput,
  DealIdInput,
  GetPriceIdInput,
  GetPriceIdOutput,
  RefreshKycStatusOutput,
  SecurityHeadersOutput,
  TestEnvOutput,
  TestPayprocOutput,
} from "./schemas.ts";

/** Function groups of the interface. */
export type FunctionGroup =
  | "billing"
  | "checkout"
  | "deals"
  | "notifications"
  | "schedulers"
  | "onboarding"
  | "documents"
  | "ai"
  | "utilities";

/** A catalog entry. */
export interface FunctionEntry {
  /** Who may call it (see `access.ts`). */
  access: Access;
  /**
   * An admin function the schedule starts as well: the scheduler's
   * credentials (the service-role key or `SCHEDULER_TOKEN`) are accepted
   * besides an admin's token; the anon key never is.
   */
  scheduler?: true;
  /** Its group in the interface. */
  group: FunctionGroup;
  /** One line on what it does. */
  summary: string;
  /** Schema of the JSON body; absent: the function takes no body (`{}` or nothing). */
  input?: z.ZodType;
  /** Schema of the JSON answer. */
  output: z.ZodType;
}

/** Every function, by name. */
export const FUNCTIONS = {
  "payproc-webhook": {
    access: "webhook",
    group: "billing",
    summary: "Payment processor webhook entry point",
    output: PayprocWebhookOutput,
  },
  "payproc-sync": {
    access: "scheduled",
    group: "billing",
    summary: "Syncs subscriptions with the payment processor",
    output: JobAnswer,
  },
  "sync-invoices": {
    access: "scheduled",
    group: "billing",
    summary: "Synchronizes invoices",
    output: JobAnswer,
  },
  "daily-subscription-sync": {
    access: "scheduled",
    group: "billing",
    summary: "Periodic subscription sync",
    output: JobAnswer,
  },
  "check-subscription": {
    access: "user",
    group: "billing",
    summary: "Verifies and syncs the caller's subscription",
    output: CheckSubscriptionOutput,
  },
  "fix-subscription-dates": {
    access: "admin",
    group: "billing",
    summary: "Corrects one user's subscription dates",
    input: FixSubscriptionDatesInput,
    output: FixSubscriptionDatesOutput,
  },
  "auto-fix-subscription-dates": {
    access: "scheduled",
    group: "billing",
    summary: "Corrects subscription dates of all rows",
    input: AutoFixSubscriptionDatesInput,
    output: JobAnswer,
  },
  "fix-user-subscription": {
    access: "admin",
    group: "billing",
    summary: "Repairs a user's link to their subscription",
    input: FixUserSubscriptionInput,
    output: FixUserSubscriptionOutput,
  },
  "set-starter-subscriptions": {
    access: "admin",
    group: "billing",
    summary: "Grants the Starter plan to a cohort",
    input: SetStarterSubscriptionsInput,
    output: SetStarterSubscriptionsOutput,
  },
  "get-price-id": {
    access: "public",
    group: "billing",
    summary: "Maps a plan-interval key to a price id",
    input: GetPriceIdInput,
    output: GetPriceIdOutput,
  },
  "create-checkout": {
    access: "user",
    group: "checkout",
    summary: "Creates a subscription checkout",
    input: CreateCheckoutInput,
    output: CreateCheckoutOutput,
  },
  "customer-portal": {
    access: "user",
    group: "checkout",
    summary: "Creates a billing portal session",
    output: CustomerPortalOutput,
  },
  "create-deal-checkout": {
    access: "deal-participant",
    group: "deals",
    summary: "Creates a hosted checkout (payment mode) for a deal's escrow payment",
    input: CreateDealCheckoutInput,
    output: CreateDealCheckoutOutput,
  },
  "create-deal-payment": {
    access: "deal-participant",
    group: "deals",
    summary: "Creates the escrow payment of a deal",
    input: CreateDealPaymentInput,
    output: CreateDealPaymentOutput,
  },
  "cancel-deal": {
    access: "deal-participant-or-admin",
    group: "deals",
    summary:
      "Cancels a deal before it is paid, stopping its payment at the processor first (its buyer, its seller or an admin)",
    input: CancelDealInput,
    output: CancelDealOutput,
  },
  "refund-deal-payment": {
    access: "admin",
    group: "deals",
    summary: "Refunds a deal's payment (reversing a released payout when asked)",
    input: RefundDealPaymentInput,
    output: DealSettlementOutput,
  },
  "release-deal-payout": {
    access: "admin",
    group: "deals",
    summary: "Releases a deal's payout (amount minus commission) to the seller",
    input: ReleaseDealPayoutInput,
    output: DealSettlementOutput,
  },
  "payment-status": {
    access: "deal-participant-or-admin",
    group: "deals",
    summary:
      "Returns a deal's payment status, reconciled with the processor (its buyer, its seller or an admin)",
    input: DealIdInput,
    output: PaymentStatusOutput,
  },
  "send-email": {
    access: "system",
    group: "notifications",
    summary: "Sends a transactional e-mail through the logged sender",
    input: SendEmailInput,
    output: SendEmailOutput,
  },
  "send-notification": {
    access: "system",
    group: "notifications",
    summary: "Writes an in-app notice and, when asked and allowed, e-mails it",
    input: SendNotificationInput,
    output: SendNotificationOutput,
  },
  "send-admin-listing-notification": {
    access: "admin",
    scheduler: true,
    group: "notifications",
    summary: "Digest of listings awaiting review, to admins",
    output: AdminDigestOutput,
  },
  "send-admin-message": {
    access: "admin",
    group: "notifications",
    summary: "E-mails and notifies chosen users from an admin",
    input: SendAdminMessageInput,
    output: SendAdminMessageOutput,
  },
  "send-auth-email": {
    access: "system",
    group: "notifications",
    summary: "Sends an auth e-mail (signup, invite, ...) on demand",
    input: SendAuthEmailInput,
    output: SendAuthEmailOutput,
  },
  "send-payment-email": {
    access: "system",
    group: "notifications",
    summary: "Sends the payment e-mails of a deal",
    input: SendPaymentEmailInput,
    output: NoticesOutput,
  },
  "send-admin-contact-notification": {
    access: "admin",
    scheduler: true,
    group: "notifications",
    summary: "Digest of new contact messages, to admins",
    output: AdminDigestOutput,
  },
  "send-listing-approval-notification": {
    access: "admin",
    group: "notifications",
    summary: "Tells a seller their listing is live",
    input: ListingIdInput,
    output: NoticesOutput,
  },
  "send-listing-notifications": {
    access: "scheduled",
    group: "notifications",
    summary: "Daily digest of new listings to users who opted in",
    output: JobAnswer,
  },
  "send-new-user-notification": {
    access: "scheduled",
    group: "notifications",
    summary:
      "Welcomes new users and tells the admins: every minute the queue of sign-ups, or one user by id",
    input: SendNewUserNotificationInput,
    output: SendNewUserNotificationOutput,
  },
  "send-sponsored-notifications": {
    access: "scheduled",
    group: "notifications",
    summary: "Tells sellers once when a sponsored placement starts and when it ends within 24 h",
    output: JobAnswer,
  },
  "send-resubmission-notification": {
    access: "admin",
    group: "notifications",
    summary: "Asks a seller to resubmit a listing, with the reason",
    input: SendResubmissionNotificationInput,
    output: NoticesOutput,
  },
  "auth-email-webhook": {
    access: "webhook",
    group: "notifications",
    summary: "Supabase Auth Send Email Hook",
    output: AuthEmailWebhookOutput,
  },
  "run-daily-tasks": {
    access: "scheduled",
    group: "schedulers",
    summary: "Runs the daily sub-jobs",
    input: RunDailyTasksInput,
    output: RunDailyTasksOutput,
  },
  "run-price-alerts": {
    access: "scheduled",
    group: "schedulers",
    summary: "Scans price alerts",
    output: JobAnswer,
  },
  "update-views-count": {
    access: "scheduled",
    group: "schedulers",
    summary: "Increments listing view counters",
    output: JobAnswer,
  },
  "cleanup-duplicates": {
    access: "admin",
    group: "schedulers",
    summary:
      "Finds duplicate listings and price alerts; archives or deactivates all but the oldest",
    input: CleanupDuplicatesInput,
    output: CleanupDuplicatesOutput,
  },
  "process-sponsored-activations": {
    access: "admin",
    scheduler: true,
    group: "schedulers",
    summary: "Activates scheduled sponsored listings (hourly, and by admins)",
    output: JobAnswer,
  },
  "connect-onboarding-link": {
    // Any signed-in user: starting onboarding is how one becomes a seller.
    access: "user",
    group: "onboarding",
    summary: "Payout account onboarding link",
    output: ConnectLinkOutput,
  },
  "connect-dashboard-link": {
    access: "seller",
    group: "onboarding",
    summary: "Payout account dashboard link",
    output: ConnectLinkOutput,
  },
  "refresh-kyc-status": {
    access: "seller",
    group: "onboarding",
    summary: "Refreshes the payout account's KYC status",
    output: RefreshKycStatusOutput,
  },
  "deal-create-upload-url": {
    access: "deal-participant",
    group: "documents",
    summary: "Signed upload URL for a deal document",
    input: CreateUploadUrlInput,
    output: CreateUploadUrlOutput,
  },
  "generate-apa-pdf": {
    access: "deal-participant",
    group: "documents",
    summary: "Generates the asset purchase agreement PDF",
    input: DealIdInput,
    output: GenerateApaOutput,
  },
  "apa-auto-handover": {
    access: "scheduled",
    group: "documents",
    summary: "Automates asset handover steps",
    output: JobAnswer,
  },
  "analyze-project": {
    access: "user",
    group: "ai",
    summary: "AI analysis of a project from its URL",
    input: AnalyzeProjectInput,
    output: AnalyzeProjectOutput,
  },
  "security-headers": {
    access: "public",
    group: "utilities",
    summary: "The security header set",
    output: SecurityHeadersOutput,
  },
  "test-env": {
    access: "admin",
    group: "utilities",
    summary: "Reports which configuration is set",
    output: TestEnvOutput,
  },
  "test-sponsored-activation": {
    access: "admin",
    group: "utilities",
    summary: "Dry run of process-sponsored-activations at a given time",
    input: TestSponsoredActivationInput,
    output: TestSponsoredActivationOutput,
  },
  "test-payproc": {
    access: "admin",
    group: "utilities",
    summary: "Tests the payment processor connection",
    output: TestPayprocOutput,
  },
} as const satisfies Record<string, FunctionEntry>;

/** The name of a server function. */
export type FunctionName = keyof typeof FUNCTIONS;

/** Every function name. */
export const FUNCTION_NAMES = Object.keys(FUNCTIONS) as FunctionName[];

/** The catalog entry of function `N`, with its literal access rule and schemas. */
export type FunctionEntryOf<N extends FunctionName> = (typeof FUNCTIONS)[N];

/** The validated request body function `N` receives (undefined when it takes none). */
export type FunctionInput<N extends FunctionName> = FunctionEntryOf<N> extends
  { input: infer S extends z.ZodType } ? z.output<S> : undefined;

/** The request body a caller of function `N` sends (before defaults are applied). */
export type FunctionRequest<N extends FunctionName> = FunctionEntryOf<N> extends
  { input: infer S extends z.ZodType } ? z.input<S> : undefined;

/** The answer of function `N`. */
export type FunctionOutput<N extends FunctionName> = z.output<FunctionEntryOf<N>["output"]>;
