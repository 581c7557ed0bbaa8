/**
 * Checkout sessions (create in `subscription`/`payment` mode, retrieve, list,
 * line items, expire), the completion a customer's payment would cause, and
 * billing portal sessions.
 *
 * @module
 */
import type Stripe from "stripe";
import type { FormObject } from "../../http_double.ts";
import { invalidRequest } from "../errors.ts";
import { filterCreated, listPage } from "../lists.ts";
import {
  applyMetadata,
  expandPaths,
  objectArray,
  optInt,
  optObject,
  optString,
  reqString,
  requireOneOf,
} from "../params.ts";
import { type Route, route } from "../router.ts";
import type { PayprocStore } from "../store.ts";
import type {
  KindMap,
  PayprocCheckoutSession,
  PayprocCustomer,
  PayprocInvoice,
  PayprocPaymentIntent,
  PayprocPrice,
  PayprocSubscription,
  Wire,
} from "../types.ts";
import { createCustomer, liveCustomer } from "./customers.ts";
import { createPaymentIntent, setPaymentIntentStatus } from "./payments.ts";
import { priceFromData } from "./prices.ts";
import { createSubscription, firstInvoice } from "./subscriptions.ts";

/** Options of {@linkcode completeCheckoutSession}. */
export interface CheckoutCompletion {
  /** The email the customer typed (default: `customer_email` or a generated one). */
  email?: string;
  name?: string;
}

/** What completing a checkout session produced. */
export interface CompletedCheckout {
  session: PayprocCheckoutSession;
  customer: PayprocCustomer | null;
  /** Subscription mode only. */
  subscription: PayprocSubscription | null;
  /** Subscription mode only: the first, paid invoice. */
  invoice: PayprocInvoice | null;
  /** Payment mode only. */
  paymentIntent: PayprocPaymentIntent | null;
}

function lineItems(store: PayprocStore, params: FormObject, mode: string): Wire<Stripe.LineItem>[] {
  const entries = objectArray(params, "line_items");
  if (entries.length === 0) {
    throw invalidRequest(
      `line_items is required in ${mode} mode.`,
      "line_items",
      "parameter_missing",
    );
  }
  return entries.map((entry, i) => {
    const priceId = optString(entry, "price");
    const data = optObject(entry, "price_data");
    let price: PayprocPrice;
    if (priceId) price = store.require("price", priceId, `line_items[${i}][price]`);
    else if (data) price = priceFromData(store, data, `line_items[${i}][price_data]`);
    else {throw invalidRequest(
        "You must specify either `price` or `price_data`.",
        `line_items[${i}]`,
      );}
    if (mode === "payment" && price.recurring) {
      throw invalidRequest(
        "You specified `payment` mode but passed a recurring price. Either switch to `subscription` mode or use only one-time prices.",
        `line_items[${i}][price]`,
      );
    }
    const quantity = optInt(entry, "quantity") ?? 1;
    const amount = (price.unit_amount ?? 0) * quantity;
    return {
      id: store.newId("li_"),
      object: "item",
      adjustable_quantity: null,
      amount_discount: 0,
      amount_subtotal: amount,
      amount_tax: 0,
      amount_total: amount,
      currency: price.currency,
      description: store.get("product", price.product as string)?.name ?? null,
      metadata: {},
      price,
      quantity,
    };
  });
}

function createSession(store: PayprocStore, params: FormObject): PayprocCheckoutSession {
  const mode = requireOneOf(
    reqString(params, "mode"),
    ["payment", "setup", "subscription"] as const,
    "mode",
  );
  const customer = optString(params, "customer");
  const customerEmail = optString(params, "customer_email");
  if (customer && customerEmail) {
    throw invalidRequest(
      "You may only specify one of these parameters: customer, customer_email.",
      "customer_email",
    );
  }
  if (customer) liveCustomer(store, customer, "customer");
  const items = mode === "setup" ? [] : lineItems(store, params, mode);
  if (mode === "subscription" && !items.some((item) => item.price?.recurring)) {
    throw invalidRequest(
      "You must provide at least one recurring price in `subscription` mode when using prices.",
      "line_items",
    );
  }
  const total = items.reduce((sum, item) => sum + item.amount_total, 0);
  const id = store.newId("cs_test_");
  const now = store.now();
  store.checkoutLineItems.set(id, items);
  return store.put("checkout.session", {
    id,
    object: "checkout.session",
    adaptive_pricing: null,
    after_expiration: null,
    allow_promotion_codes: null,
    allowed_payment_method_types: null,
    amount_subtotal: total,
    amount_total: total,
    automatic_tax: { enabled: false, liability: null, provider: null, status: null },
    billing_address_collection: null,
    cancel_url: optString(params, "cancel_url") ?? null,
    client_reference_id: optString(params, "client_reference_id") ?? null,
    client_secret: null,
    collected_information: null,
    consent: null,
    consent_collection: null,
    created: now,
    currency: items[0]?.currency ?? optString(params, "currency") ?? null,
    currency_conversion: null,
    custom_fields: [],
    custom_text: {
      after_submit: null,
      shipping_address: null,
      submit: null,
      terms_of_service_acceptance: null,
    },
    customer: customer ?? null,
    customer_account: null,
    customer_creation: customer ? null : mode === "payment" ? "if_required" : "always",
    customer_details: null,
    customer_email: customerEmail ?? null,
    discounts: [],
    expires_at: optInt(params, "expires_at") ?? now + 24 * 3600,
    integration_identifier: null,
    invoice: null,
    invoice_creation: null,
    livemode: false,
    locale: null,
    managed_payments: null,
    metadata: applyMetadata({}, params),
    mode,
    origin_context: null,
    payment_intent: null,
    payment_link: null,
    payment_method_collection: mode === "subscription" ? "always" : null,
    payment_method_configuration_details: null,
    payment_method_options: {},
    payment_method_types: ["card"],
    payment_status: "unpaid",
    permissions: null,
    phone_number_collection: { enabled: false },
    recovered_from: null,
    saved_payment_method_options: null,
    setup_intent: null,
    shipping_address_collection: null,
    shipping_cost: null,
    shipping_options: [],
    status: "open",
    submit_type: null,
    subscription: null,
    success_url: optString(params, "success_url") ?? null,
    total_details: { amount_discount: 0, amount_shipping: 0, amount_tax: 0 },
    ui_mode: "hosted_page",
    url: `${store.baseUrl}/checkout/${id}`,
    wallet_options: null,
  });
}

function sessionCustomer(
  store: PayprocStore,
  session: PayprocCheckoutSession,
  options: CheckoutCompletion,
): PayprocCustomer | null {
  if (typeof session.customer === "string") {
    return liveCustomer(store, session.customer, "customer");
  }
  const email = options.email ?? session.customer_email ??
    `buyer+${session.id.slice(-6)}@example.test`;
  if (session.customer_creation === "if_required") return null;
  return createCustomer(store, { email, name: options.name ?? null });
}

/**
 * Completes an open session as if the customer paid: creates the customer
 * if needed, then (subscription mode) an active subscription with a paid
 * first invoice, or (payment mode) a succeeded payment intent with a charge.
 */
export function completeCheckoutSession(
  store: PayprocStore,
  sessionId: string,
  options: CheckoutCompletion = {},
): CompletedCheckout {
  const session = store.require("checkout.session", sessionId);
  if (session.status !== "open") {
    throw new Error(`checkout session ${sessionId} is ${session.status}, not open`);
  }
  const customer = sessionCustomer(store, session, options);
  const extra = store.checkoutParams.get(session.id) ?? {};
  const items = store.checkoutLineItems.get(session.id) ?? [];
  let subscription: PayprocSubscription | null = null;
  let invoice: PayprocInvoice | null = null;
  let paymentIntent: PayprocPaymentIntent | null = null;
  if (session.mode === "subscription" && customer) {
    const data = optObject(extra, "subscription_data") ?? {};
    const trialDays = optInt(data, "trial_period_days");
    const trialEnd = trialDays !== undefined ? store.now() + trialDays * 86_400 : null;
    subscription = createSubscription(store, {
      customer: customer.id,
      items: items.flatMap((item) =>
        item.price ? [{ price: item.price, quantity: item.quantity ?? 1 }] : []
      ),
      metadata: applyMetadata({}, data),
      trialEnd,
      periodEnd: trialEnd ?? undefined,
    });
    invoice = firstInvoice(store, subscription, "subscription_create");
    session.subscription = subscription.id;
    session.invoice = invoice.id;
  } else if (session.mode === "payment") {
    const data = optObject(extra, "payment_intent_data") ?? {};
    const capture = optString(data, "capture_method");
    paymentIntent = createPaymentIntent(store, {
      amount: session.amount_total ?? 0,
      currency: session.currency ?? "usd",
      customer: customer?.id ?? null,
      metadata: applyMetadata({}, data),
      transferGroup: optString(data, "transfer_group"),
      captureMethod: capture === "manual" ? "manual" : "automatic_async",
      description: optString(data, "description"),
      receiptEmail: options.email ?? session.customer_email,
    });
    setPaymentIntentStatus(
      store,
      paymentIntent,
      capture === "manual" ? "requires_capture" : "succeeded",
    );
    session.payment_intent = paymentIntent.id;
  }
  session.customer = customer?.id ?? null;
  session.customer_details = {
    address: null,
    business_name: null,
    email: customer?.email ?? options.email ?? session.customer_email,
    individual_name: null,
    name: options.name ?? null,
    phone: null,
    tax_exempt: "none",
    tax_ids: [],
  };
  session.status = "complete";
  session.payment_status = "paid";
  session.url = null;
  return { session, customer, subscription, invoice, paymentIntent };
}

const CREATE_PARAMS = [
  "adaptive_pricing",
  "after_expiration",
  "allow_promotion_codes",
  "automatic_tax",
  "billing_address_collection",
  "branding_settings",
  "cancel_url",
  "client_reference_id",
  "consent_collection",
  "currency",
  "custom_fields",
  "custom_text",
  "customer",
  "customer_account",
  "customer_creation",
  "customer_email",
  "customer_update",
  "discounts",
  "excluded_payment_method_types",
  "expires_at",
  "integration_identifier",
  "invoice_creation",
  "line_items",
  "locale",
  "managed_payments",
  "metadata",
  "mode",
  "name_collection",
  "optional_items",
  "origin_context",
  "payment_intent_data",
  "payment_method_collection",
  "payment_method_configuration",
  "payment_method_data",
  "payment_method_options",
  "payment_method_types",
  "permissions",
  "phone_number_collection",
  "redirect_on_completion",
  "return_url",
  "saved_payment_method_options",
  "setup_intent_data",
  "shipping_address_collection",
  "shipping_options",
  "submit_type",
  "subscription_data",
  "success_url",
  "tax_id_collection",
  "ui_mode",
  "wallet_options",
] as const;

function withLineItems(
  store: PayprocStore,
  session: PayprocCheckoutSession,
  params: FormObject,
): unknown {
  if (!expandPaths(params).includes("line_items")) return session;
  const items = store.checkoutLineItems.get(session.id) ?? [];
  return {
    ...structuredClone(session),
    line_items: {
      object: "list",
      data: items,
      has_more: false,
      url: `/v1/checkout/sessions/${session.id}/line_items`,
    },
  };
}

/** Creates a billing portal session for a customer. */
function createPortalSession(
  store: PayprocStore,
  params: FormObject,
): KindMap["billing_portal.session"] {
  const customer = liveCustomer(store, reqString(params, "customer"), "customer");
  const id = store.newId("bps_");
  return store.put("billing_portal.session", {
    id,
    object: "billing_portal.session",
    configuration: optString(params, "configuration") ?? "bpc_default_double",
    created: store.now(),
    customer: customer.id,
    customer_account: null,
    flow: null,
    livemode: false,
    locale: null,
    on_behalf_of: null,
    return_url: optString(params, "return_url") ?? null,
    url: `${store.baseUrl}/billing_portal/${id}`,
  });
}

/** The checkout and billing portal endpoints. */
export const checkoutRoutes: Route[] = [
  route("POST", "/v1/checkout/sessions", CREATE_PARAMS, ({ store, params }) => {
    const session = createSession(store, params);
    store.checkoutParams.set(session.id, params);
    return withLineItems(store, session, params);
  }),
  route(
    "GET",
    "/v1/checkout/sessions",
    [
      "created",
      "customer",
      "customer_account",
      "customer_details",
      "ending_before",
      "limit",
      "payment_intent",
      "payment_link",
      "starting_after",
      "status",
      "subscription",
    ],
    ({ store, params }) => {
      const filters = (["customer", "payment_intent", "subscription", "status"] as const).map((
        key,
      ) => [key, optString(params, key)] as const);
      const found = filterCreated(store.all("checkout.session"), params).filter((s) =>
        filters.every(([key, value]) => value === undefined || s[key] === value)
      );
      return listPage(found, params, "/v1/checkout/sessions");
    },
  ),
  route(
    "GET",
    "/v1/checkout/sessions/:id",
    [],
    ({ store, path, params }) =>
      withLineItems(store, store.require("checkout.session", path.id), params),
  ),
  route(
    "GET",
    "/v1/checkout/sessions/:id/line_items",
    ["ending_before", "limit", "starting_after"],
    ({ store, path, params }) => {
      const session = store.require("checkout.session", path.id);
      return listPage(
        store.checkoutLineItems.get(session.id) ?? [],
        params,
        `/v1/checkout/sessions/${session.id}/line_items`,
      );
    },
  ),
  route("POST", "/v1/checkout/sessions/:id/expire", [], ({ store, path }) => {
    const session = store.require("checkout.session", path.id);
    if (session.status !== "open") {
      throw invalidRequest(
        `Only Checkout Sessions with a status in ["open"] can be expired. This Checkout Session has a status of "${session.status}".`,
      );
    }
    session.status = "expired";
    session.url = null;
    return session;
  }),
  route(
    "POST",
    "/v1/billing_portal/sessions",
    [
      "configuration",
      "customer",
      "customer_account",
      "flow_data",
      "locale",
      "on_behalf_of",
      "return_url",
    ],
    ({ store, params }) => createPortalSession(store, params),
  ),
];
