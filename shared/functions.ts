/**
 * The catalog of every server function: its name, who may call it, and the
 * group it belongs to (interface §1 and §5).
 *
 * @module
 */
import type { z } from "zod";
import type { Access } from "./access.ts";
import {
  AnalyzeProjectInput,
  AutoFixSubscriptionDatesInput,
  CheckSubscriptionOutput,
  ConnectLinkOutput,
  CreateCheckoutInput,
  CreateCheckoutOutput,
  CreateDealPaymentInput,
  CreateDealPaymentOutput,
  CustomerPortalOutput,
  DealIdInput,
  FixSubscriptionDatesInput,
  FixUserSubscriptionInput,
  GetPriceIdInput,
  GetPriceIdOutput,
  RefreshKycStatusOutput,
  RunDailyTasksInput,
  SendEmailInput,
  SetStarterSubscriptionsInput,
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
  access: Access;
  group: FunctionGroup;
  summary: string;
}

/** Every function, by name. */
export const FUNCTIONS = {
  "payproc-webhook": {
    access: "webhook",
    group: "billing",
    summary: "Payment processor webhook entry point",
  },
  "payproc-sync": {
    access: "scheduled",
    group: "billing",
    summary: "Syncs subscriptions with the payment processor",
  },
  "sync-invoices": { access: "scheduled", group: "billing", summary: "Synchronizes invoices" },
  "daily-subscription-sync": {
    access: "scheduled",
    group: "billing",
    summary: "Periodic subscription sync",
  },
  "check-subscription": {
    access: "user",
    group: "billing",
    summary: "Verifies and syncs the caller's subscription",
  },
  "fix-subscription-dates": {
    access: "admin",
    group: "billing",
    summary: "Corrects one user's subscription dates",
  },
  "auto-fix-subscription-dates": {
    access: "scheduled",
    group: "billing",
    summary: "Corrects subscription dates of all rows",
  },
  "fix-user-subscription": {
    access: "admin",
    group: "billing",
    summary: "Repairs a user's link to their subscription",
  },
  "set-starter-subscriptions": {
    access: "admin",
    group: "billing",
    summary: "Grants the Starter plan to a cohort",
  },
  "get-price-id": {
    access: "public",
    group: "billing",
    summary: "Maps a plan-interval key to a price id",
  },
  "create-checkout": {
    access: "user",
    group: "checkout",
    summary: "Creates a subscription checkout",
  },
  "customer-portal": {
    access: "user",
    group: "checkout",
    summary: "Creates a billing portal session",
  },
  "create-deal-checkout": {
    access: "deal-participant",
    group: "deals",
    summary: "Creates a hosted checkout for a deal",
  },
  "create-deal-payment": {
    access: "deal-participant",
    group: "deals",
    summary: "Creates the escrow payment of a deal",
  },
  "refund-deal-payment": { access: "admin", group: "deals", summary: "Refunds a deal's payment" },
  "release-deal-payout": {
    access: "admin",
    group: "deals",
    summary: "Releases a deal's payout to the seller",
  },
  "payment-status": {
    access: "deal-participant",
    group: "deals",
    summary: "Returns a deal's payment status",
  },
  "send-email": {
    access: "system",
    group: "notifications",
    summary: "Sends a transactional e-mail",
  },
  "send-notification": {
    access: "system",
    group: "notifications",
    summary: "Sends an in-app notification",
  },
  "send-admin-listing-notification": {
    access: "admin",
    group: "notifications",
    summary: "Notifies admins about listings",
  },
  "send-admin-message": {
    access: "admin",
    group: "notifications",
    summary: "Sends a message from an admin",
  },
  "send-auth-email": {
    access: "webhook",
    group: "notifications",
    summary: "Supabase Auth send-email hook",
  },
  "send-payment-email": {
    access: "system",
    group: "notifications",
    summary: "Sends payment e-mails",
  },
  "send-admin-contact-notification": {
    access: "admin",
    group: "notifications",
    summary: "Notifies admins of contact requests",
  },
  "send-listing-approval-notification": {
    access: "admin",
    group: "notifications",
    summary: "Tells a seller their listing was approved",
  },
  "send-listing-notifications": {
    access: "scheduled",
    group: "notifications",
    summary: "Sends listing notifications",
  },
  "send-new-user-notification": {
    access: "system",
    group: "notifications",
    summary: "Notifies about a new user",
  },
  "send-sponsored-notifications": {
    access: "scheduled",
    group: "notifications",
    summary: "Sends sponsored listing notifications",
  },
  "send-resubmission-notification": {
    access: "admin",
    group: "notifications",
    summary: "Asks a seller to resubmit a listing",
  },
  "auth-email-webhook": {
    access: "webhook",
    group: "notifications",
    summary: "Auth e-mail webhook",
  },
  "run-daily-tasks": {
    access: "scheduled",
    group: "schedulers",
    summary: "Runs the daily sub-jobs",
  },
  "run-price-alerts": { access: "scheduled", group: "schedulers", summary: "Scans price alerts" },
  "update-views-count": {
    access: "scheduled",
    group: "schedulers",
    summary: "Increments listing view counters",
  },
  "cleanup-duplicates": {
    access: "admin",
    group: "schedulers",
    summary: "Removes duplicate records",
  },
  "process-sponsored-activations": {
    access: "admin",
    group: "schedulers",
    summary: "Activates scheduled sponsored listings",
  },
  "connect-onboarding-link": {
    access: "seller",
    group: "onboarding",
    summary: "Payout account onboarding link",
  },
  "connect-dashboard-link": {
    access: "seller",
    group: "onboarding",
    summary: "Payout account dashboard link",
  },
  "refresh-kyc-status": {
    access: "seller",
    group: "onboarding",
    summary: "Refreshes the payout account's KYC status",
  },
  "deal-create-upload-url": {
    access: "deal-participant",
    group: "documents",
    summary: "Signed upload URL for a deal document",
  },
  "generate-apa-pdf": {
    access: "deal-participant",
    group: "documents",
    summary: "Generates the asset purchase agreement PDF",
  },
  "apa-auto-handover": {
    access: "scheduled",
    group: "documents",
    summary: "Automates asset handover steps",
  },
  "analyze-project": {
    access: "user",
    group: "ai",
    summary: "AI analysis of a project from its URL",
  },
  "security-headers": { access: "public", group: "utilities", summary: "The security header set" },
  "test-env": {
    access: "admin",
    group: "utilities",
    summary: "Reports which configuration is set",
  },
  "test-sponsored-activation": {
    access: "admin",
    group: "utilities",
    summary: "Tests sponsored activation",
  },
  "test-payproc": {
    access: "admin",
    group: "utilities",
    summary: "Tests the payment processor connection",
  },
} as const satisfies Record<string, FunctionEntry>;

/** The name of a server function. */
export type FunctionName = keyof typeof FUNCTIONS;

/** Every function name. */
export const FUNCTION_NAMES = Object.keys(FUNCTIONS) as FunctionName[];

/** The request and response schemas of a function, where documented. */
export interface FunctionSchemas {
  /** The JSON body; absent: the function takes no body. */
  input?: z.ZodType;
  /** The JSON answer; absent: not a documented shape. */
  output?: z.ZodType;
}

/** Schemas of the functions with documented payloads (interface §4.2). */
export const FUNCTION_SCHEMAS = {
  "send-email": { input: SendEmailInput },
  "get-price-id": { input: GetPriceIdInput, output: GetPriceIdOutput },
  "create-checkout": { input: CreateCheckoutInput, output: CreateCheckoutOutput },
  "customer-portal": { output: CustomerPortalOutput },
  "create-deal-payment": { input: CreateDealPaymentInput, output: CreateDealPaymentOutput },
  "release-deal-payout": { input: DealIdInput },
  "refund-deal-payment": { input: DealIdInput },
  "connect-onboarding-link": { output: ConnectLinkOutput },
  "connect-dashboard-link": { output: ConnectLinkOutput },
  "refresh-kyc-status": { output: RefreshKycStatusOutput },
  "check-subscription": { output: CheckSubscriptionOutput },
  "analyze-project": { input: AnalyzeProjectInput },
  "run-daily-tasks": { input: RunDailyTasksInput },
  "fix-user-subscription": { input: FixUserSubscriptionInput },
  "fix-subscription-dates": { input: FixSubscriptionDatesInput },
  "auto-fix-subscription-dates": { input: AutoFixSubscriptionDatesInput },
  "set-starter-subscriptions": { input: SetStarterSubscriptionsInput },
} as const satisfies Partial<Record<FunctionName, FunctionSchemas>>;

/** Functions with documented schemas. */
export type DocumentedFunctionName = keyof typeof FUNCTION_SCHEMAS;
