/**
 * zod schemas of every documented request and response body (`docs/functions.md`),
 * and of the error body every function answers failures with.
 *
 * @module
 */
import { z } from "zod";
import { cleanUserText, USER_TEXT_PROBLEMS, userTextProblem } from "./user_text.ts";

/** A deal's id. */
export const DealId = z.uuid();

/**
 * Free text a user writes, as the database takes it (`user_text.ts`): at
 * most `max` characters after cleaning, not empty when `required`; parses to
 * the cleaned text, or to `undefined` for an empty optional one.
 */
export function UserText(max: number, required: boolean) {
  return z.string().transform((text, context) => {
    const problem = userTextProblem(text, { max, required });
    if (problem) {
      context.addIssue({
        code: "custom",
        message: problem === "too_long"
          ? `It is longer than ${max} characters`
          : USER_TEXT_PROBLEMS[problem],
      });
      return z.NEVER;
    }
    const cleaned = cleanUserText(text);
    return cleaned === "" ? undefined : cleaned;
  });
}

/** Every failure: `{ error: { code, message, details? } }`. */
export const ErrorBody = z.object({
  error: z.object({
    code: z.string(),
    message: z.string(),
    details: z.unknown().optional(),
  }),
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
/** A KYC summary (the server builds it from the processor's account). */
export type KycSummary = z.output<typeof KycSummary>;
/** `refresh-kyc-status` response. */
export const RefreshKycStatusOutput = z.object({ summary: KycSummary });

/** `check-subscription` response. */
export const CheckSubscriptionOutput = z.object({
  subscribed: z.boolean(),
  subscription_level: z.enum(["free", "starter", "pro"]),
  subscription_status: z.string().nullable(),
  subscription_end: z.string().nullable(),
});

/** `security-headers` response: the security header set the frontend host should serve. */
export const SecurityHeadersOutput = z.object({ headers: z.record(z.string(), z.string()) });

/** `test-env` response: which variables are set (never their values) and whether the database answers. */
export const TestEnvOutput = z.object({
  variables: z.record(z.string(), z.boolean()),
  database: z.object({
    ok: z.boolean(),
    latency_ms: z.number().min(0),
    error: z.string().optional(),
  }),
  runtime: z.object({ deno: z.string() }),
});

/** One plan price as `test-payproc` found it at the processor (by lookup key). */
export const PayprocPriceCheck = z.object({
  /** The plan-interval lookup key, e.g. `starter_monthly`. */
  key: z.string(),
  /** The price carrying that lookup key; null when none does. */
  priceId: z.string().nullable(),
  found: z.boolean(),
  active: z.boolean(),
});

/**
 * `test-payproc` response: whether the processor answers our key, and how it
 * is set up. Never a secret value; `ok: false` with `reason` when it cannot be
 * reached or refuses the key (a diagnostic answers 200 either way).
 */
export const TestPayprocOutput = z.object({
  ok: z.boolean(),
  /** Why `ok` is false (missing key, refused key, unreachable, ...). */
  reason: z.string().optional(),
  /** From the key's prefix; null without a key or with an unknown prefix. */
  mode: z.enum(["test", "live"]).nullable(),
  /** The platform account; null when it could not be read. */
  account: z.object({ id: z.string(), country: z.string().nullable() }).nullable(),
  webhookSecretSet: z.boolean(),
  connectWebhookSecretSet: z.boolean(),
  /**
   * Connect: true once a connected account exists, false when the processor
   * refuses Connect calls, null when it cannot tell (unreachable, refused key,
   * or no connected account yet — the processor lists none for a platform
   * without Connect either, and proving it off would take a write).
   */
  connectEnabled: z.boolean().nullable(),
  /** Each plan-interval key of `shared/plans.ts`, in that order. */
  prices: z.array(PayprocPriceCheck),
  /** Time spent talking to the processor. */
  latencyMs: z.number().min(0),
});
