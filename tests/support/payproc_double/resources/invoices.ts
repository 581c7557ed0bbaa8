/**
 * Invoices: list (`customer`, `subscription`, `status`, `created`), retrieve,
 * and the builder used by seeding, checkout completion and renewals. In this
 * API version an invoice names its subscription under
 * `parent.subscription_details.subscription`.
 *
 * @module
 */
import type Stripe from "stripe";
import { filterCreated, listPage } from "../lists.ts";
import { optString } from "../params.ts";
import { type Route, route } from "../router.ts";
import type { PayprocStore } from "../store.ts";
import type { PayprocInvoice, PayprocPrice, Wire } from "../types.ts";

/** One line of {@linkcode NewInvoice}. */
export interface NewInvoiceLine {
  price?: PayprocPrice;
  quantity?: number;
  /** Defaults to `price.unit_amount × quantity`. */
  amount?: number;
  description?: string;
  subscriptionItem?: string;
  periodStart?: number;
  periodEnd?: number;
}

/** Input of {@linkcode createInvoice}. */
export interface NewInvoice {
  customer: string;
  subscription?: string | null;
  /** Default `paid`. */
  status?: Stripe.Invoice.Status;
  /** Total; defaults to the sum of `lines` (or 0). */
  amount?: number;
  /** Default: the first line's price currency, else `usd`. */
  currency?: string;
  created?: number;
  periodStart?: number;
  periodEnd?: number;
  billingReason?: Stripe.Invoice.BillingReason;
  lines?: NewInvoiceLine[];
  metadata?: Record<string, string>;
}

function buildLine(
  store: PayprocStore,
  invoiceId: string,
  subscription: string | null,
  line: NewInvoiceLine,
  fallbackPeriod: { start: number; end: number },
  currency: string,
): Wire<Stripe.InvoiceLineItem> {
  const quantity = line.quantity ?? 1;
  const amount = line.amount ?? (line.price?.unit_amount ?? 0) * quantity;
  return {
    id: store.newId("il_"),
    object: "line_item",
    amount,
    currency,
    description: line.description ?? `${quantity} × ${line.price?.nickname ?? "item"}`,
    discount_amounts: [],
    discountable: true,
    discounts: [],
    invoice: invoiceId,
    livemode: false,
    metadata: {},
    parent: line.subscriptionItem
      ? {
        type: "subscription_item_details",
        invoice_item_details: null,
        subscription_item_details: {
          invoice_item: null,
          proration: false,
          proration_details: null,
          subscription,
          subscription_item: line.subscriptionItem,
        },
      }
      : null,
    period: {
      start: line.periodStart ?? fallbackPeriod.start,
      end: line.periodEnd ?? fallbackPeriod.end,
    },
    pretax_credit_amounts: [],
    pricing: line.price
      ? {
        type: "price_details",
        price_details: { price: line.price.id, product: line.price.product as string },
        unit_amount_decimal: line.price.unit_amount_decimal,
      }
      : null,
    quantity,
    quantity_decimal: String(quantity),
    subscription,
    subtotal: amount,
    taxes: [],
  };
}

/** Creates an invoice as the API would (finalized unless `draft`). */
export function createInvoice(store: PayprocStore, input: NewInvoice): PayprocInvoice {
  const id = store.newId("in_");
  const created = input.created ?? store.now();
  const status = input.status ?? "paid";
  const subscription = input.subscription ?? null;
  const period = { start: input.periodStart ?? created, end: input.periodEnd ?? created };
  const currency = input.currency ?? input.lines?.[0]?.price?.currency ?? "usd";
  const lines = (input.lines ?? []).map((line) =>
    buildLine(store, id, subscription, line, period, currency)
  );
  const total = input.amount ?? lines.reduce((sum, line) => sum + line.amount, 0);
  const paid = status === "paid";
  const customer = store.get("customer", input.customer);
  const sequence = store.all("invoice").filter((i) => i.customer === input.customer).length + 1;
  const finalized = status === "draft" ? null : created;
  return store.put("invoice", {
    id,
    object: "invoice",
    account_country: "US",
    account_name: "Marketplace (test double)",
    account_tax_ids: null,
    amount_due: total,
    amount_overpaid: 0,
    amount_paid: paid ? total : 0,
    amount_remaining: paid ? 0 : total,
    amount_shipping: 0,
    application: null,
    attempt_count: paid ? 1 : 0,
    attempted: paid,
    auto_advance: !paid,
    automatic_tax: {
      disabled_reason: null,
      enabled: false,
      liability: null,
      provider: null,
      status: null,
    },
    automatically_finalizes_at: null,
    billing_reason: input.billingReason ?? (subscription ? "subscription_cycle" : "manual"),
    collection_method: "charge_automatically",
    created,
    currency,
    custom_fields: null,
    customer: input.customer,
    customer_account: null,
    customer_address: null,
    customer_email: customer?.email ?? null,
    customer_name: customer?.name ?? null,
    customer_phone: customer?.phone ?? null,
    customer_shipping: null,
    customer_tax_exempt: "none",
    customer_tax_ids: [],
    default_payment_method: null,
    default_source: null,
    default_tax_rates: [],
    description: null,
    discounts: [],
    due_date: null,
    effective_at: finalized,
    ending_balance: status === "draft" ? null : 0,
    footer: null,
    from_invoice: null,
    hosted_invoice_url: status === "draft" ? null : `${store.baseUrl}/invoice/${id}`,
    invoice_pdf: status === "draft" ? null : `${store.baseUrl}/invoice/${id}/pdf`,
    issuer: { type: "self" },
    last_finalization_error: null,
    latest_revision: null,
    lines: { object: "list", data: lines, has_more: false, url: `/v1/invoices/${id}/lines` },
    livemode: false,
    metadata: input.metadata ?? {},
    next_payment_attempt: null,
    number: status === "draft"
      ? null
      : `${customer?.invoice_prefix ?? "DOUBLE"}-${String(sequence).padStart(4, "0")}`,
    on_behalf_of: null,
    parent: subscription
      ? {
        type: "subscription_details",
        quote_details: null,
        subscription_details: {
          metadata: store.get("subscription", subscription)?.metadata ?? {},
          subscription,
        },
      }
      : null,
    payment_settings: {
      default_mandate: null,
      payment_method_options: null,
      payment_method_types: null,
    },
    period_end: period.end,
    period_start: period.start,
    post_payment_credit_notes_amount: 0,
    pre_payment_credit_notes_amount: 0,
    receipt_number: null,
    rendering: null,
    shipping_cost: null,
    shipping_details: null,
    starting_balance: 0,
    statement_descriptor: null,
    status,
    status_transitions: {
      finalized_at: finalized,
      marked_uncollectible_at: status === "uncollectible" ? created : null,
      paid_at: paid ? created : null,
      voided_at: status === "void" ? created : null,
    },
    subtotal: total,
    subtotal_excluding_tax: total,
    test_clock: null,
    total,
    total_discount_amounts: [],
    total_excluding_tax: total,
    total_pretax_credit_amounts: [],
    total_taxes: [],
    webhooks_delivered_at: created,
  });
}

/** The subscription an invoice belongs to (`parent.subscription_details.subscription`). */
export function invoiceSubscription(invoice: PayprocInvoice): string | null {
  const subscription = invoice.parent?.subscription_details?.subscription;
  return typeof subscription === "string" ? subscription : subscription?.id ?? null;
}

/** The invoice endpoints. */
export const invoiceRoutes: Route[] = [
  route(
    "GET",
    "/v1/invoices",
    [
      "collection_method",
      "created",
      "customer",
      "customer_account",
      "due_date",
      "ending_before",
      "limit",
      "starting_after",
      "status",
      "subscription",
    ],
    ({ store, params }) => {
      const customer = optString(params, "customer");
      const subscription = optString(params, "subscription");
      const status = optString(params, "status");
      const invoices = filterCreated(store.all("invoice"), params).filter((i) =>
        (customer === undefined || i.customer === customer) &&
        (subscription === undefined || invoiceSubscription(i) === subscription) &&
        (status === undefined || i.status === status)
      );
      return listPage(invoices, params, "/v1/invoices");
    },
  ),
  route("GET", "/v1/invoices/:id", [], ({ store, path }) => store.require("invoice", path.id)),
];
