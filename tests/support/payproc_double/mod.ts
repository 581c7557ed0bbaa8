/**
 * The payment-processor double: {@linkcode PayprocDouble}, the client
 * helper and the webhook helpers.
 *
 * @module
 */
export { PayprocDouble, type PayprocDoubleOptions } from "./double.ts";
export { payprocClient, TEST_SECRET_KEY } from "./client.ts";
export {
  buildEvent,
  type EventOptions,
  type PayprocEventObject,
  type PayprocEventOf,
  type PayprocEventType,
  type SignedWebhook,
  signWebhook,
} from "./webhooks.ts";
export { PayprocApiError } from "./errors.ts";
export type { AccountPatch, CapabilityStatus } from "./resources/accounts.ts";
export type { CheckoutCompletion, CompletedCheckout } from "./resources/checkout.ts";
export type { NewCustomer } from "./resources/customers.ts";
export type { DisputeOptions, DisputeOutcome, DisputeReason } from "./resources/disputes.ts";
export type { NewInvoice, NewInvoiceLine } from "./resources/invoices.ts";
export type { PaymentFailure } from "./resources/payments.ts";
export type { Interval, NewPrice } from "./resources/prices.ts";
export type { RefundStatusOptions } from "./resources/refunds.ts";
export type { SubscriptionPatch, SubscriptionSeed } from "./subscription_helpers.ts";
export type * from "./types.ts";
