/**
 * Types for the payment-processor double's stored objects. Objects are kept in
 * the API's JSON ("wire") shape: the SDK's types with `Decimal` fields as the
 * decimal strings the API sends (the SDK turns them into `Decimal`s).
 *
 * @module
 */
import type Stripe from "stripe";
import type { Decimal } from "stripe";

/** The JSON shape of an SDK type: `Decimal` fields become decimal strings. */
export type Wire<T> = T extends string | number | boolean | null | undefined ? T
  : T extends Decimal ? string
  : T extends (infer U)[] ? Wire<U>[]
  : T extends object ? { [K in keyof T]: Wire<T[K]> }
  : T;

/** The stored kinds, keyed by their `object` value. */
export interface KindMap {
  account: Wire<Stripe.Account>;
  "billing_portal.session": Wire<Stripe.BillingPortal.Session>;
  charge: Wire<Stripe.Charge>;
  "checkout.session": Wire<Stripe.Checkout.Session>;
  customer: Wire<Stripe.Customer>;
  dispute: Wire<Stripe.Dispute>;
  event: Wire<Stripe.Event>;
  invoice: Wire<Stripe.Invoice>;
  payment_intent: Wire<Stripe.PaymentIntent>;
  price: Wire<Stripe.Price>;
  product: Wire<Stripe.Product>;
  refund: Wire<Stripe.Refund>;
  subscription: Wire<Stripe.Subscription>;
  transfer: Wire<Stripe.Transfer>;
  transfer_reversal: Wire<Stripe.TransferReversal>;
}

/** A stored kind's name, e.g. `"customer"` or `"checkout.session"`. */
export type Kind = keyof KindMap;

/** Kinds that are created but have no id (`createdCount` still counts them). */
export type LinkKind = "account_link" | "login_link";

/** Any stored object. */
export type StoredObject = KindMap[Kind];

/** Wire shapes the double hands back to tests. */
export type PayprocAccount = KindMap["account"];
/** A charge as the API sends it. */
export type PayprocCharge = KindMap["charge"];
/** A checkout session as the API sends it. */
export type PayprocCheckoutSession = KindMap["checkout.session"];
/** A customer as the API sends it. */
export type PayprocCustomer = KindMap["customer"];
/** A dispute as the API sends it. */
export type PayprocDispute = KindMap["dispute"];
/** An event as the API sends it. */
export type PayprocEvent = KindMap["event"];
/** An invoice as the API sends it. */
export type PayprocInvoice = KindMap["invoice"];
/** A payment intent as the API sends it. */
export type PayprocPaymentIntent = KindMap["payment_intent"];
/** A price as the API sends it. */
export type PayprocPrice = KindMap["price"];
/** The statuses a refund has at the processor. */
export type RefundStatus = "pending" | "requires_action" | "succeeded" | "failed" | "canceled";
/** The statuses a new refund may start in (see `PayprocDouble.setNewRefundStatus`). */
export type NewRefundStatus = "pending" | "requires_action" | "succeeded";
/** A refund as the API sends it. */
export type PayprocRefund = KindMap["refund"];
/** A subscription as the API sends it. */
export type PayprocSubscription = KindMap["subscription"];
/** A transfer as the API sends it. */
export type PayprocTransfer = KindMap["transfer"];
/** A transfer reversal as the API sends it. */
export type PayprocTransferReversal = KindMap["transfer_reversal"];
/** A subscription item as the API sends it. */
export type PayprocSubscriptionItem = Wire<Stripe.SubscriptionItem>;
/** A list envelope as the API sends it. */
export type PayprocList<T> = {
  object: "list";
  data: T[];
  has_more: boolean;
  url: string;
};
