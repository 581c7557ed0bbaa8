/**
 * Payment intents (create, retrieve, update, confirm, capture, cancel, list),
 * and their charges. Confirming with `pm_card_chargeDeclined`
 * answers a 402 `card_declined` like the API's test card does, leaving the
 * intent as {@linkcode failPaymentIntent} does.
 *
 * @module
 */
import type Stripe from "stripe";
import type { FormObject } from "../../http_double.ts";
import { invalidRequest, PayprocApiError } from "../errors.ts";
import { filterCreated, listPage } from "../lists.ts";
import { applyMetadata, optInt, optString, reqInt, reqString, requireOneOf } from "../params.ts";
import { type Route, route } from "../router.ts";
import type { PayprocStore } from "../store.ts";
import type { KindMap, PayprocPaymentIntent } from "../types.ts";
import { liveCustomer } from "./customers.ts";

/** Input of {@linkcode createPaymentIntent}. */
export interface NewPaymentIntent {
  amount: number;
  currency: string;
  customer?: string | null;
  metadata?: Record<string, string>;
  transferGroup?: string | null;
  captureMethod?: Stripe.PaymentIntent.CaptureMethod;
  description?: string | null;
  receiptEmail?: string | null;
  paymentMethod?: string | null;
}

/** A declined payment attempt (see {@linkcode failPaymentIntent}). */
export interface PaymentFailure {
  /** The error code (default `card_declined`). */
  code?: string;
  /** Default "Your card was declined.". */
  message?: string;
  /** The issuer's decline code (default `generic_decline` when `code` is `card_declined`). */
  declineCode?: string;
}

const CAPTURE_METHODS = ["automatic", "automatic_async", "manual"] as const;
const CANCELABLE = [
  "requires_payment_method",
  "requires_capture",
  "requires_confirmation",
  "requires_action",
  "processing",
];

const CONFIRMABLE = ["requires_confirmation", "requires_payment_method", "requires_action"];
const PAST_PARTICIPLE: Record<string, string> = {
  cancel: "canceled",
  capture: "captured",
  confirm: "confirmed",
};

function unexpectedState(
  pi: PayprocPaymentIntent,
  action: string,
  allowed: string[],
): PayprocApiError {
  return invalidRequest(
    `You cannot ${action} this PaymentIntent because it has a status of ${pi.status}. ` +
      `Only a PaymentIntent with one of the following statuses may be ${
        PAST_PARTICIPLE[action] ?? `${action}d`
      }: ${allowed.join(", ")}.`,
    undefined,
    "payment_intent_unexpected_state",
  );
}

/** Creates a payment intent (status `requires_payment_method`). */
export function createPaymentIntent(
  store: PayprocStore,
  input: NewPaymentIntent,
): PayprocPaymentIntent {
  if (input.customer) liveCustomer(store, input.customer, "customer");
  const id = store.newId("pi_");
  return store.put("payment_intent", {
    id,
    object: "payment_intent",
    allowed_payment_method_types: null,
    amount: input.amount,
    amount_capturable: 0,
    amount_received: 0,
    application: null,
    application_fee_amount: null,
    automatic_payment_methods: { allow_redirects: "always", enabled: true },
    canceled_at: null,
    cancellation_reason: null,
    capture_method: input.captureMethod ?? "automatic_async",
    client_secret: `${id}_secret_${store.newId("").slice(0, 25)}`,
    confirmation_method: "automatic",
    created: store.now(),
    currency: input.currency.toLowerCase(),
    customer: input.customer ?? null,
    customer_account: null,
    description: input.description ?? null,
    excluded_payment_method_types: null,
    last_payment_error: null,
    latest_charge: null,
    livemode: false,
    managed_payments: null,
    metadata: input.metadata ?? {},
    next_action: null,
    on_behalf_of: null,
    payment_method: input.paymentMethod ?? null,
    payment_method_configuration_details: null,
    payment_method_options: null,
    payment_method_types: ["card"],
    payment_record: null,
    processing: null,
    receipt_email: input.receiptEmail ?? null,
    review: null,
    setup_future_usage: null,
    shipping: null,
    source: null,
    statement_descriptor: null,
    statement_descriptor_suffix: null,
    status: "requires_payment_method",
    transfer_data: null,
    transfer_group: input.transferGroup ?? null,
  });
}

/** The failure a declined charge records. */
interface ChargeFailure {
  code: string;
  message: string;
  declineCode: string | null;
}

function createCharge(
  store: PayprocStore,
  pi: PayprocPaymentIntent,
  captured: boolean,
  failure?: ChargeFailure,
): KindMap["charge"] {
  const id = store.newId("ch_");
  const customer = typeof pi.customer === "string" ? pi.customer : pi.customer?.id ?? null;
  return store.put("charge", {
    id,
    object: "charge",
    amount: pi.amount,
    amount_captured: captured && !failure ? pi.amount : 0,
    amount_refunded: 0,
    application: null,
    application_fee: null,
    application_fee_amount: null,
    balance_transaction: failure ? null : store.newId("txn_"),
    billing_details: {
      address: {
        city: null,
        country: null,
        line1: null,
        line2: null,
        postal_code: null,
        state: null,
      },
      email: null,
      name: null,
      phone: null,
      tax_id: null,
    },
    calculated_statement_descriptor: "MARKETPLACE",
    captured: captured && !failure,
    created: store.now(),
    currency: pi.currency,
    customer,
    description: pi.description,
    disputed: false,
    failure_balance_transaction: null,
    failure_code: failure?.code ?? null,
    failure_message: failure?.message ?? null,
    fraud_details: {},
    livemode: false,
    metadata: pi.metadata,
    on_behalf_of: null,
    outcome: failure
      ? {
        advice_code: null,
        network_advice_code: null,
        network_decline_code: null,
        network_status: "declined_by_network",
        reason: failure.declineCode,
        risk_level: "normal",
        seller_message: "The bank did not return any further details with this decline.",
        type: "issuer_declined",
      }
      : null,
    paid: !failure,
    payment_intent: pi.id,
    payment_method: typeof pi.payment_method === "string" ? pi.payment_method : "pm_card_visa",
    payment_method_details: null,
    receipt_email: pi.receipt_email,
    receipt_number: null,
    receipt_url: `${store.baseUrl}/receipts/${id}`,
    refunded: false,
    review: null,
    shipping: null,
    source: null,
    source_transfer: null,
    statement_descriptor: null,
    statement_descriptor_suffix: null,
    status: failure ? "failed" : "succeeded",
    transfer_data: null,
    transfer_group: pi.transfer_group,
  });
}

/**
 * Moves a payment intent to `status` as the processor would; reaching
 * `succeeded` or `requires_capture` attaches a charge as `latest_charge`.
 */
export function setPaymentIntentStatus(
  store: PayprocStore,
  pi: PayprocPaymentIntent,
  status: Stripe.PaymentIntent.Status,
): PayprocPaymentIntent {
  pi.status = status;
  if (status === "succeeded" || status === "requires_capture") {
    const captured = status === "succeeded";
    const chargeId = typeof pi.latest_charge === "string" ? pi.latest_charge : undefined;
    const previous = chargeId ? store.require("charge", chargeId) : undefined;
    // A declined attempt's charge stays failed; the next attempt gets a new charge.
    const charge = previous && previous.status !== "failed"
      ? previous
      : createCharge(store, pi, captured);
    pi.latest_charge = charge.id;
    if (captured) {
      charge.captured = true;
      charge.amount_captured = charge.amount_captured || pi.amount;
      pi.amount_received = charge.amount_captured;
      pi.amount_capturable = 0;
    } else {
      pi.amount_capturable = pi.amount;
    }
    pi.payment_method ??= "pm_card_visa";
  }
  if (status === "canceled") pi.canceled_at = store.now();
  return pi;
}

/**
 * Records a declined payment attempt as the processor does: a `failed`
 * charge becomes `latest_charge`, the intent goes back to
 * `requires_payment_method` (its payment method detached) with
 * `last_payment_error` set (`card_error`, default code `card_declined`).
 * Throws (a test mistake) for an intent that already succeeded, is
 * authorized (`requires_capture`) or is canceled.
 */
export function failPaymentIntent(
  store: PayprocStore,
  pi: PayprocPaymentIntent,
  options: PaymentFailure = {},
): PayprocPaymentIntent {
  if (["succeeded", "requires_capture", "canceled"].includes(pi.status)) {
    throw new Error(`payment intent ${pi.id} is ${pi.status}; only an unpaid intent can fail`);
  }
  const code = options.code ?? "card_declined";
  const message = options.message ?? "Your card was declined.";
  const declineCode = options.declineCode ??
    (code === "card_declined" ? "generic_decline" : undefined);
  const charge = createCharge(store, pi, false, {
    code,
    message,
    declineCode: declineCode ?? null,
  });
  pi.latest_charge = charge.id;
  pi.last_payment_error = {
    type: "card_error",
    charge: charge.id,
    code,
    ...(declineCode ? { decline_code: declineCode } : {}),
    doc_url: `https://stripe.com/docs/error-codes/${code.replaceAll("_", "-")}`,
    message,
  };
  pi.payment_method = null;
  pi.status = "requires_payment_method";
  pi.amount_capturable = 0;
  return pi;
}

function confirm(
  store: PayprocStore,
  pi: PayprocPaymentIntent,
  params: FormObject,
): PayprocPaymentIntent {
  if (!CONFIRMABLE.includes(pi.status)) throw unexpectedState(pi, "confirm", CONFIRMABLE);
  const paymentMethod = optString(params, "payment_method") ??
    (typeof pi.payment_method === "string" ? pi.payment_method : undefined);
  if (!paymentMethod) {
    throw invalidRequest(
      "You cannot confirm this PaymentIntent because it's missing a payment method. To confirm the PaymentIntent with its customer, you must provide a payment method.",
      "payment_method",
      "payment_intent_unexpected_state",
    );
  }
  pi.payment_method = paymentMethod;
  if (paymentMethod === "pm_card_chargeDeclined") {
    failPaymentIntent(store, pi);
    throw new PayprocApiError(402, "card_error", "Your card was declined.", "card_declined");
  }
  return setPaymentIntentStatus(
    store,
    pi,
    pi.capture_method === "manual" ? "requires_capture" : "succeeded",
  );
}

function applyUpdate(
  store: PayprocStore,
  pi: PayprocPaymentIntent,
  params: FormObject,
): PayprocPaymentIntent {
  const amount = optInt(params, "amount");
  if (amount !== undefined) {
    if (pi.status === "succeeded" || pi.status === "canceled") {
      throw unexpectedState(pi, "update", CANCELABLE);
    }
    pi.amount = amount;
  }
  const customer = optString(params, "customer");
  if (customer) pi.customer = liveCustomer(store, customer, "customer").id;
  for (const key of ["description", "receipt_email", "transfer_group"] as const) {
    const value = optString(params, key);
    if (value !== undefined) pi[key] = value || null;
  }
  const paymentMethod = optString(params, "payment_method");
  if (paymentMethod !== undefined) pi.payment_method = paymentMethod || null;
  pi.metadata = applyMetadata(pi.metadata, params);
  return pi;
}

const PI_PARAMS = [
  "amount",
  "application_fee_amount",
  "automatic_payment_methods",
  "capture_method",
  "confirm",
  "confirmation_method",
  "confirmation_token",
  "currency",
  "customer",
  "customer_account",
  "description",
  "error_on_requires_action",
  "excluded_payment_method_types",
  "hooks",
  "mandate",
  "mandate_data",
  "metadata",
  "off_session",
  "on_behalf_of",
  "payment_details",
  "payment_method",
  "payment_method_configuration",
  "payment_method_data",
  "payment_method_options",
  "payment_method_types",
  "radar_options",
  "receipt_email",
  "return_url",
  "setup_future_usage",
  "shipping",
  "statement_descriptor",
  "statement_descriptor_suffix",
  "transfer_data",
  "transfer_group",
  "use_stripe_sdk",
] as const;

/** The payment intent and charge endpoints. */
export const paymentRoutes: Route[] = [
  route("POST", "/v1/payment_intents", PI_PARAMS, ({ store, params }) => {
    const capture = optString(params, "capture_method");
    const pi = createPaymentIntent(store, {
      amount: reqInt(params, "amount"),
      currency: reqString(params, "currency"),
      customer: optString(params, "customer"),
      metadata: applyMetadata({}, params),
      transferGroup: optString(params, "transfer_group"),
      captureMethod: capture ? requireOneOf(capture, CAPTURE_METHODS, "capture_method") : undefined,
      description: optString(params, "description"),
      receiptEmail: optString(params, "receipt_email"),
      paymentMethod: optString(params, "payment_method"),
    });
    return optString(params, "confirm") === "true" ? confirm(store, pi, params) : pi;
  }),
  route("GET", "/v1/payment_intents", [
    "created",
    "customer",
    "customer_account",
    "ending_before",
    "limit",
    "starting_after",
  ], ({ store, params }) => {
    const customer = optString(params, "customer");
    const found = filterCreated(store.all("payment_intent"), params).filter((pi) =>
      customer === undefined || pi.customer === customer
    );
    return listPage(found, params, "/v1/payment_intents");
  }),
  route(
    "GET",
    "/v1/payment_intents/:id",
    ["client_secret"],
    ({ store, path }) => store.require("payment_intent", path.id),
  ),
  route(
    "POST",
    "/v1/payment_intents/:id",
    PI_PARAMS,
    ({ store, path, params }) =>
      applyUpdate(store, store.require("payment_intent", path.id), params),
  ),
  route(
    "POST",
    "/v1/payment_intents/:id/confirm",
    PI_PARAMS,
    ({ store, path, params }) => confirm(store, store.require("payment_intent", path.id), params),
  ),
  route(
    "POST",
    "/v1/payment_intents/:id/capture",
    [
      "amount_to_capture",
      "application_fee_amount",
      "final_capture",
      "metadata",
      "statement_descriptor",
      "statement_descriptor_suffix",
      "transfer_data",
      "amount_details",
      "hooks",
      "payment_details",
    ],
    ({ store, path, params }) => {
      const pi = store.require("payment_intent", path.id);
      if (pi.status !== "requires_capture") {
        throw unexpectedState(pi, "capture", ["requires_capture"]);
      }
      const amount = optInt(params, "amount_to_capture") ?? pi.amount_capturable;
      if (amount > pi.amount_capturable) {
        throw invalidRequest(
          `The amount to capture (${amount}) is greater than the amount capturable (${pi.amount_capturable}).`,
          "amount_to_capture",
        );
      }
      const charge = store.require("charge", pi.latest_charge as string);
      charge.amount_captured = amount;
      pi.metadata = applyMetadata(pi.metadata, params);
      return setPaymentIntentStatus(store, pi, "succeeded");
    },
  ),
  route(
    "POST",
    "/v1/payment_intents/:id/cancel",
    ["cancellation_reason"],
    ({ store, path, params }) => {
      const pi = store.require("payment_intent", path.id);
      if (!CANCELABLE.includes(pi.status)) throw unexpectedState(pi, "cancel", CANCELABLE);
      const reason = optString(params, "cancellation_reason");
      pi.cancellation_reason = reason
        ? requireOneOf(
          reason,
          ["abandoned", "duplicate", "fraudulent", "requested_by_customer"] as const,
          "cancellation_reason",
        )
        : null;
      return setPaymentIntentStatus(store, pi, "canceled");
    },
  ),
  route("GET", "/v1/charges/:id", [], ({ store, path }) => store.require("charge", path.id)),
  route("GET", "/v1/charges", [
    "created",
    "customer",
    "ending_before",
    "limit",
    "payment_intent",
    "starting_after",
    "transfer_group",
  ], ({ store, params }) => {
    const pi = optString(params, "payment_intent");
    const group = optString(params, "transfer_group");
    const found = filterCreated(store.all("charge"), params).filter((c) =>
      (pi === undefined || c.payment_intent === pi) &&
      (group === undefined || c.transfer_group === group)
    );
    return listPage(found, params, "/v1/charges");
  }),
];
