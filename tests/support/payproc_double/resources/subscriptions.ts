/**
 * Subscriptions. In API version 2026-10-28 the billing period
 * (`current_period_start`/`current_period_end`) lives on each item in
 * `items.data`, not on the subscription. Endpoints: create, list (`customer`,
 * `price`, `status` incl. `all`/`ended`, pagination), search, retrieve,
 * update (cancel_at_period_end, cancel_at, metadata, items), cancel (DELETE).
 *
 * @module
 */
import type Stripe from "stripe";
import type { FormObject } from "../../http_double.ts";
import { invalidRequest } from "../errors.ts";
import { filterCreated, listPage, searchPage } from "../lists.ts";
import {
  applyMetadata,
  objectArray,
  optBool,
  optInt,
  optObject,
  optString,
  reqString,
} from "../params.ts";
import { type Route, route } from "../router.ts";
import { compileSearch } from "../search_query.ts";
import type { PayprocStore } from "../store.ts";
import type { PayprocPrice, PayprocSubscription, PayprocSubscriptionItem } from "../types.ts";
import { liveCustomer } from "./customers.ts";
import { createInvoice } from "./invoices.ts";
import { planFromPrice, priceFromData } from "./prices.ts";

/** One item of {@linkcode NewSubscription}. */
export interface NewSubscriptionItem {
  price: PayprocPrice;
  quantity?: number;
}

/** Input of {@linkcode createSubscription}. */
export interface NewSubscription {
  customer: string;
  items: NewSubscriptionItem[];
  /** Default `active` (`trialing` when `trialEnd` is in the future). */
  status?: Stripe.Subscription.Status;
  /** Current period start on every item (default: now). */
  periodStart?: number;
  /** Current period end on every item (default: start + the price's interval). */
  periodEnd?: number;
  cancelAtPeriodEnd?: boolean;
  metadata?: Record<string, string>;
  trialEnd?: number | null;
  created?: number;
}

/** `start` plus `count` intervals, in calendar terms (UTC). */
export function addInterval(start: number, interval: string, count = 1): number {
  const date = new Date(start * 1000);
  if (interval === "day") date.setUTCDate(date.getUTCDate() + count);
  else if (interval === "week") date.setUTCDate(date.getUTCDate() + 7 * count);
  else if (interval === "month") date.setUTCMonth(date.getUTCMonth() + count);
  else date.setUTCFullYear(date.getUTCFullYear() + count);
  return Math.floor(date.getTime() / 1000);
}

function periodEndFor(price: PayprocPrice, start: number): number {
  const recurring = price.recurring;
  if (!recurring) {
    throw invalidRequest(`The price specified (${price.id}) is not recurring.`, "items");
  }
  return addInterval(start, recurring.interval, recurring.interval_count);
}

function buildItem(
  store: PayprocStore,
  subscription: string,
  item: NewSubscriptionItem,
  period: { start: number; end: number },
): PayprocSubscriptionItem {
  return {
    id: store.newId("si_"),
    object: "subscription_item",
    billing_thresholds: null,
    created: store.now(),
    current_period_end: period.end,
    current_period_start: period.start,
    current_trial: null,
    discounts: [],
    metadata: {},
    plan: planFromPrice(item.price),
    price: structuredClone(item.price),
    quantity: item.quantity ?? 1,
    subscription,
    tax_rates: [],
  };
}

/** Creates a subscription as the API would (no invoice; see {@linkcode firstInvoice}). */
export function createSubscription(
  store: PayprocStore,
  input: NewSubscription,
): PayprocSubscription {
  const first = input.items[0];
  if (!first) throw invalidRequest("Missing required param: items.", "items", "parameter_missing");
  liveCustomer(store, input.customer, "customer");
  const id = store.newId("sub_");
  const now = store.now();
  const start = input.periodStart ?? now;
  const end = input.periodEnd ?? periodEndFor(first.price, start);
  const trialEnd = input.trialEnd ?? null;
  const status = input.status ?? (trialEnd !== null && trialEnd > now ? "trialing" : "active");
  const cancelAtPeriodEnd = input.cancelAtPeriodEnd ?? false;
  const ended = status === "canceled" || status === "incomplete_expired";
  return store.put("subscription", {
    id,
    object: "subscription",
    application: null,
    application_fee_percent: null,
    automatic_tax: { disabled_reason: null, enabled: false, liability: null },
    billing_cycle_anchor: start,
    billing_cycle_anchor_config: null,
    billing_mode: {
      flexible: { proration_discounts: "included" },
      type: "flexible",
      updated_at: now,
    },
    billing_schedules: [],
    billing_thresholds: null,
    cancel_at: cancelAtPeriodEnd ? end : null,
    cancel_at_period_end: cancelAtPeriodEnd,
    canceled_at: ended ? now : null,
    cancellation_details: { comment: null, feedback: null, feedback_option: null, reason: null },
    collection_method: "charge_automatically",
    created: input.created ?? now,
    currency: first.price.currency,
    customer: input.customer,
    customer_account: null,
    days_until_due: null,
    default_payment_method: null,
    default_source: null,
    default_tax_rates: [],
    description: null,
    discounts: [],
    ended_at: ended ? now : null,
    invoice_settings: {
      account_tax_ids: null,
      custom_fields: null,
      description: null,
      footer: null,
      issuer: { type: "self" },
    },
    items: {
      object: "list",
      data: input.items.map((item) => buildItem(store, id, item, { start, end })),
      has_more: false,
      url: `/v1/subscription_items?subscription=${id}`,
    },
    latest_invoice: null,
    livemode: false,
    managed_payments: null,
    metadata: input.metadata ?? {},
    next_pending_invoice_item_invoice: null,
    on_behalf_of: null,
    pause_collection: null,
    payment_settings: {
      payment_method_options: null,
      payment_method_types: null,
      save_default_payment_method: "off",
    },
    pending_invoice_item_interval: null,
    pending_setup_intent: null,
    pending_update: null,
    schedule: null,
    start_date: input.created ?? now,
    status,
    test_clock: null,
    transfer_data: null,
    trial_end: trialEnd,
    trial_settings: {
      end_behavior: { billing_cycle_anchor: null, missing_payment_method: "create_invoice" },
    },
    trial_start: trialEnd !== null ? start : null,
  });
}

/** Bills the subscription's current period (sets `latest_invoice`); `paid` unless `status` says otherwise. */
export function firstInvoice(
  store: PayprocStore,
  subscription: PayprocSubscription,
  billingReason: Stripe.Invoice.BillingReason,
  status: Stripe.Invoice.Status = "paid",
) {
  const items = subscription.items.data;
  const trialing = subscription.status === "trialing";
  const invoice = createInvoice(store, {
    customer: subscription.customer as string,
    subscription: subscription.id,
    status,
    billingReason,
    periodStart: items[0]?.current_period_start,
    periodEnd: items[0]?.current_period_end,
    lines: items.map((item) => ({
      price: item.price,
      quantity: item.quantity,
      amount: trialing ? 0 : undefined,
      subscriptionItem: item.id,
      periodStart: item.current_period_start,
      periodEnd: item.current_period_end,
    })),
  });
  subscription.latest_invoice = invoice.id;
  return invoice;
}

/** The current billing period of a subscription (from its first item). */
export function currentPeriod(subscription: PayprocSubscription): { start: number; end: number } {
  const item = subscription.items.data[0];
  return { start: item?.current_period_start ?? 0, end: item?.current_period_end ?? 0 };
}

/** Marks a subscription canceled now. */
export function cancelNow(
  store: PayprocStore,
  subscription: PayprocSubscription,
): PayprocSubscription {
  const now = store.now();
  subscription.status = "canceled";
  subscription.canceled_at = subscription.canceled_at ?? now;
  subscription.ended_at = now;
  return subscription;
}

function resolvePrice(
  store: PayprocStore,
  entry: FormObject,
  param: string,
): PayprocPrice | undefined {
  const priceId = optString(entry, "price");
  if (priceId) return store.require("price", priceId, `${param}[price]`);
  const data = optObject(entry, "price_data");
  return data ? priceFromData(store, data, `${param}[price_data]`) : undefined;
}

function applyItems(
  store: PayprocStore,
  subscription: PayprocSubscription,
  params: FormObject,
): void {
  const period = currentPeriod(subscription);
  objectArray(params, "items").forEach((entry, i) => {
    const param = `items[${i}]`;
    const id = optString(entry, "id");
    const items = subscription.items.data;
    const existing = id ? items.find((item) => item.id === id) : undefined;
    if (id && !existing) {
      throw invalidRequest(
        `No such subscription item: '${id}'`,
        `${param}[id]`,
        "resource_missing",
      );
    }
    if (existing && optBool(entry, "deleted")) {
      subscription.items.data = items.filter((item) => item !== existing);
      return;
    }
    const price = resolvePrice(store, entry, param);
    const quantity = optInt(entry, "quantity");
    if (price && !price.recurring) {
      throw invalidRequest(
        `The price specified (${price.id}) is not recurring.`,
        `${param}[price]`,
      );
    }
    if (existing) {
      if (price) {
        existing.price = structuredClone(price);
        existing.plan = planFromPrice(price);
      }
      if (quantity !== undefined) existing.quantity = quantity;
      existing.metadata = applyMetadata(existing.metadata, entry);
    } else {
      if (!price) {
        throw invalidRequest(
          "Missing required param: price.",
          `${param}[price]`,
          "parameter_missing",
        );
      }
      items.push(buildItem(store, subscription.id, { price, quantity }, period));
    }
  });
}

function applyCancelAt(subscription: PayprocSubscription, params: FormObject): void {
  const atPeriodEnd = optBool(params, "cancel_at_period_end");
  if (atPeriodEnd !== undefined) {
    subscription.cancel_at_period_end = atPeriodEnd;
    subscription.cancel_at = atPeriodEnd ? currentPeriod(subscription).end : null;
  }
  const cancelAt = optString(params, "cancel_at");
  if (cancelAt === "") {
    subscription.cancel_at = null;
    subscription.cancel_at_period_end = false;
  } else if (cancelAt !== undefined) {
    const at = cancelAt === "min_period_end" || cancelAt === "max_period_end"
      ? currentPeriod(subscription).end
      : optInt(params, "cancel_at");
    subscription.cancel_at = at ?? null;
    subscription.cancel_at_period_end = at === currentPeriod(subscription).end;
  }
}

function applyCancellationDetails(subscription: PayprocSubscription, params: FormObject): void {
  const details = optObject(params, "cancellation_details");
  if (!details) return;
  const comment = optString(details, "comment");
  const feedback = optString(details, "feedback");
  if (comment !== undefined) subscription.cancellation_details!.comment = comment || null;
  if (feedback !== undefined) {
    subscription.cancellation_details!.feedback = (feedback || null) as
      | Stripe.Subscription.CancellationDetails.Feedback
      | null;
  }
}

function updateSubscription(
  store: PayprocStore,
  subscription: PayprocSubscription,
  params: FormObject,
) {
  if (subscription.status === "canceled") {
    const touched = Object.keys(params).filter((k) =>
      !["metadata", "cancellation_details", "expand"].includes(k)
    );
    if (touched.length > 0) {
      throw invalidRequest(
        "A canceled subscription can only update its cancellation_details and metadata.",
        touched[0],
      );
    }
  }
  applyItems(store, subscription, params);
  applyCancelAt(subscription, params);
  applyCancellationDetails(subscription, params);
  subscription.metadata = applyMetadata(subscription.metadata, params);
  const description = optString(params, "description");
  if (description !== undefined) subscription.description = description || null;
  const paymentMethod = optString(params, "default_payment_method");
  if (paymentMethod !== undefined) subscription.default_payment_method = paymentMethod || null;
  const trialEnd = optString(params, "trial_end");
  if (trialEnd === "now") {
    subscription.trial_end = store.now();
    if (subscription.status === "trialing") subscription.status = "active";
  }
  const pause = params.pause_collection;
  if (pause === "") subscription.pause_collection = null;
  else if (pause !== undefined) {
    const behavior = reqString(optObject(params, "pause_collection") ?? {}, "behavior");
    subscription.pause_collection = {
      behavior: behavior as Stripe.Subscription.PauseCollection.Behavior,
      resumes_at: optInt(optObject(params, "pause_collection") ?? {}, "resumes_at") ?? null,
    };
  }
  return subscription;
}

const CREATE_PARAMS = [
  "add_invoice_items",
  "application_fee_percent",
  "automatic_tax",
  "backdate_start_date",
  "billing_cycle_anchor",
  "billing_cycle_anchor_config",
  "billing_mode",
  "billing_schedules",
  "billing_thresholds",
  "cancel_at",
  "cancel_at_period_end",
  "collection_method",
  "currency",
  "customer",
  "customer_account",
  "days_until_due",
  "default_payment_method",
  "default_source",
  "default_tax_rates",
  "description",
  "discounts",
  "invoice_settings",
  "items",
  "metadata",
  "off_session",
  "on_behalf_of",
  "payment_behavior",
  "payment_settings",
  "pending_invoice_item_interval",
  "proration_behavior",
  "transfer_data",
  "trial_end",
  "trial_from_plan",
  "trial_period_days",
  "trial_settings",
] as const;

const UPDATE_PARAMS = [
  ...CREATE_PARAMS.filter((p) =>
    !["customer", "customer_account", "currency", "backdate_start_date", "trial_period_days"]
      .includes(p)
  ),
  "cancellation_details",
  "pause_collection",
  "proration_date",
] as const;

/** The subscription endpoints. */
export const subscriptionRoutes: Route[] = [
  route("POST", "/v1/subscriptions", CREATE_PARAMS, ({ store, params }) => {
    const items = objectArray(params, "items").map((entry, i) => {
      const price = resolvePrice(store, entry, `items[${i}]`);
      if (!price) {
        throw invalidRequest(
          "Missing required param: price.",
          `items[${i}][price]`,
          "parameter_missing",
        );
      }
      return { price, quantity: optInt(entry, "quantity") };
    });
    const trialDays = optInt(params, "trial_period_days");
    const trialEnd = trialDays !== undefined
      ? store.now() + trialDays * 86_400
      : optInt(params, "trial_end");
    const incomplete = optString(params, "payment_behavior") === "default_incomplete";
    const subscription = createSubscription(store, {
      customer: reqString(params, "customer"),
      items,
      status: incomplete ? "incomplete" : undefined,
      trialEnd,
      periodEnd: trialEnd ?? undefined,
      cancelAtPeriodEnd: optBool(params, "cancel_at_period_end"),
      metadata: applyMetadata({}, params),
    });
    firstInvoice(store, subscription, "subscription_create", incomplete ? "open" : "paid");
    return subscription;
  }),
  route("GET", "/v1/subscriptions/search", ["query", "limit", "page"], ({ store, params }) => {
    const matches = compileSearch(reqString(params, "query"));
    const found = store.all("subscription").filter((s) =>
      store.searchable(s.id) &&
      matches((field, key) =>
        field === "metadata"
          ? s.metadata[key ?? ""]
          : field === "status" || field === "created" || field === "canceled_at"
          ? s[field]
          : undefined
      )
    );
    return searchPage(found, params, "/v1/subscriptions/search");
  }),
  route(
    "GET",
    "/v1/subscriptions",
    [
      "automatic_tax",
      "collection_method",
      "created",
      "current_period_end",
      "current_period_start",
      "customer",
      "customer_account",
      "ending_before",
      "limit",
      "price",
      "starting_after",
      "status",
      "test_clock",
    ],
    ({ store, params }) => {
      const customer = optString(params, "customer");
      const price = optString(params, "price");
      const status = optString(params, "status");
      const subscriptions = filterCreated(store.all("subscription"), params).filter((s) =>
        (customer === undefined || s.customer === customer) &&
        (price === undefined || s.items.data.some((item) => item.price.id === price)) &&
        (status === "all" ||
          (status === undefined && s.status !== "canceled" && s.status !== "incomplete_expired") ||
          (status === "ended" && (s.status === "canceled" || s.status === "incomplete_expired")) ||
          s.status === status)
      );
      return listPage(subscriptions, params, "/v1/subscriptions");
    },
  ),
  route(
    "GET",
    "/v1/subscriptions/:id",
    [],
    ({ store, path }) => store.require("subscription", path.id),
  ),
  route(
    "POST",
    "/v1/subscriptions/:id",
    UPDATE_PARAMS,
    ({ store, path, params }) =>
      updateSubscription(store, store.require("subscription", path.id), params),
  ),
  route(
    "DELETE",
    "/v1/subscriptions/:id",
    ["cancellation_details", "invoice_now", "prorate"],
    ({ store, path, params }) => {
      const subscription = store.require("subscription", path.id);
      if (subscription.status === "canceled") {
        throw invalidRequest(
          `No such subscription: '${subscription.id}'`,
          "id",
          "resource_missing",
        );
      }
      applyCancellationDetails(subscription, params);
      subscription.cancellation_details!.reason = "cancellation_requested";
      return cancelNow(store, subscription);
    },
  ),
];
