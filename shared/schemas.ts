/**
 * zod schemas of every documented request and response body (interface §4.2),
 * and of the error body every function answers failures with.
 *
 * @module
 */
import { z } from "zod";

/** A deal's id. */
export const DealId = z.uuid();

/** Every failure: `{ error: { code, message, details? } }`. */
export const ErrorBody = z.object({
  error: z.object({
    code: z.string(),
    message: z.string(),
    details: z.unknown().optional(),
  }),
});

/** `send-email` request. */
export const SendEmailInput = z.object({
  to: z.email(),
  subject: z.string().trim().min(1).max(300),
  html: z.string().min(1).max(500_000),
  emailType: z.string().trim().min(1).max(100),
});

/** `get-price-id` request. */
export const GetPriceIdInput = z.object({ plan: z.string().trim().min(1).max(100) });
/** `get-price-id` response. */
export const GetPriceIdOutput = z.object({ priceId: z.string() });

/** `create-checkout` request. */
export const CreateCheckoutInput = z.object({
  priceId: z.string().trim().min(1).max(255),
  successUrl: z.url().optional(),
  cancelUrl: z.url().optional(),
});
/** `create-checkout` response. */
export const CreateCheckoutOutput = z.object({ url: z.url() });

/** `customer-portal` response. */
export const CustomerPortalOutput = z.object({ url: z.url() });

/** Requests that name a deal: release-deal-payout, refund-deal-payment and others. */
export const DealIdInput = z.object({ dealId: DealId });

/** `create-deal-payment` request. */
export const CreateDealPaymentInput = DealIdInput;
/** `create-deal-payment` response. */
export const CreateDealPaymentOutput = z.object({ client_secret: z.string() });

/** `connect-onboarding-link` and `connect-dashboard-link` response. */
export const ConnectLinkOutput = z.object({ url: z.url() });

/** The refresh-KYC summary. */
export const KycSummary = z.object({
  currently_due_count: z.number().int().min(0),
  past_due_count: z.number().int().min(0),
  disabled_reason: z.string(),
  payouts_enabled: z.boolean(),
});
/** `refresh-kyc-status` response. */
export const RefreshKycStatusOutput = z.object({ summary: KycSummary });

/** `check-subscription` response. */
export const CheckSubscriptionOutput = z.object({
  subscribed: z.boolean(),
  subscription_level: z.enum(["free", "starter", "pro"]),
  subscription_status: z.string().nullable(),
  subscription_end: z.string().nullable(),
});

/** `analyze-project` request. */
export const AnalyzeProjectInput = z.object({
  url: z.url({ protocol: /^https?$/ }).max(2048),
});

/** `run-daily-tasks` request. */
export const RunDailyTasksInput = z.object({
  force: z.boolean().default(false),
  slot: z.string().trim().min(1).max(50).default("scheduled"),
});

/** A user named by id or by e-mail (exactly one): the admin billing repairs. */
const OneUser = z.object({
  userId: z.uuid().optional(),
  email: z.email().max(320).optional(),
});
const exactlyOneUser = (value: { userId?: string; email?: string }) =>
  (value.userId === undefined) !== (value.email === undefined);
const exactlyOneUserIssue = { message: "Give exactly one of userId and email" };

/** `fix-user-subscription` request. */
export const FixUserSubscriptionInput = OneUser.refine(exactlyOneUser, exactlyOneUserIssue);

/** `fix-subscription-dates` request. */
export const FixSubscriptionDatesInput = OneUser.extend({
  dryRun: z.boolean().default(false),
}).refine(exactlyOneUser, exactlyOneUserIssue);

/** `auto-fix-subscription-dates` request (a scheduled start sends no body). */
export const AutoFixSubscriptionDatesInput = z.object({
  dryRun: z.boolean().default(false),
});

/** `set-starter-subscriptions` request: a cohort by ids or by sign-up window. */
export const SetStarterSubscriptionsInput = z.object({
  userIds: z.array(z.uuid()).min(1).max(1000).optional(),
  createdAfter: z.iso.datetime({ offset: true }).optional(),
  createdBefore: z.iso.datetime({ offset: true }).optional(),
  days: z.number().int().min(1).max(366),
  dryRun: z.boolean().default(false),
}).refine(
  (v) =>
    (v.userIds !== undefined) !==
      (v.createdAfter !== undefined || v.createdBefore !== undefined),
  { message: "Give either userIds or a createdAfter/createdBefore window" },
).refine(
  (v) =>
    v.createdAfter === undefined || v.createdBefore === undefined ||
    Date.parse(v.createdAfter) < Date.parse(v.createdBefore),
  { message: "createdAfter must be before createdBefore", path: ["createdAfter"] },
);

/** One item a job could not process. */
export const JobFailure = z.object({
  item: z.string(),
  code: z.string(),
  message: z.string(),
});

/**
 * Answer of the billing jobs (payproc-sync, daily-subscription-sync,
 * sync-invoices, auto-fix-subscription-dates). With failures the same object
 * comes back as `error.details` of a 500 `partial_failure`.
 */
export const SyncJobOutput = z.object({
  job: z.string(),
  runId: z.uuid(),
  dryRun: z.boolean(),
  scanned: z.number().int().min(0),
  changed: z.number().int().min(0),
  failed: z.number().int().min(0),
  counts: z.record(z.string(), z.number().int()),
  failures: z.array(JobFailure),
});
