/**
 * zod schemas of the billing functions that are not documented by the
 * interface: the webhook's answer and the admin repairs' requests and answers.
 *
 * @module
 */
import { z } from "zod";

/** `payproc-webhook` answer (to the payment processor). */
export const PayprocWebhookOutput = z.object({
  received: z.literal(true),
  id: z.string(),
  type: z.string(),
  outcome: z.enum(["applied", "ignored", "skipped", "duplicate"]),
  detail: z.string().optional(),
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

/** A `subscriptions` row as the repairs report it (dates as ISO strings). */
export const SubscriptionRowReport = z.object({
  subscription_level: z.enum(["free", "starter", "pro"]),
  subscription_status: z.string(),
  source: z.enum(["payproc", "grant"]),
  payproc_customer_id: z.string().nullable(),
  payproc_subscription_id: z.string().nullable(),
  payproc_price_id: z.string().nullable(),
  billing_interval: z.enum(["month", "year"]).nullable(),
  current_period_start: z.string().nullable(),
  current_period_end: z.string().nullable(),
  cancel_at_period_end: z.boolean(),
});

/** `fix-user-subscription` answer. */
export const FixUserSubscriptionOutput = z.object({
  userId: z.uuid(),
  email: z.string().nullable(),
  customerId: z.string().nullable(),
  customerFoundBy: z.enum(["stored", "metadata", "email", "created"]).nullable(),
  subscriptionId: z.string().nullable(),
  actions: z.array(z.string()),
  changed: z.array(z.string()),
  before: SubscriptionRowReport.nullable(),
  after: SubscriptionRowReport.nullable(),
});

/** `fix-subscription-dates` request. */
export const FixSubscriptionDatesInput = OneUser.extend({
  dryRun: z.boolean().default(false),
}).refine(exactlyOneUser, exactlyOneUserIssue);

/** A billing period as the date repairs report it. */
const Period = z.object({ start: z.string().nullable(), end: z.string().nullable() });

/** `fix-subscription-dates` answer. */
export const FixSubscriptionDatesOutput = z.object({
  dryRun: z.boolean(),
  userId: z.uuid(),
  subscriptionId: z.string(),
  changed: z.boolean(),
  written: z.boolean(),
  reason: z.string().optional(),
  before: Period,
  after: Period,
});

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

/** `set-starter-subscriptions` answer. */
export const SetStarterSubscriptionsOutput = z.object({
  dryRun: z.boolean(),
  days: z.number().int(),
  matched: z.number().int().min(0),
  granted: z.number().int().min(0),
  userIds: z.array(z.uuid()),
  skipped: z.array(z.object({
    userId: z.uuid(),
    reason: z.enum([
      "paid_subscription",
      "already_granted",
      "no_such_user",
      "changed_concurrently",
    ]),
  })),
});
