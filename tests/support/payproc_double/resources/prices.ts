/**
 * Prices and products: `GET /v1/prices` (lookup keys, active, product, type),
 * `GET|POST /v1/prices[/:id]`, `GET /v1/products[/:id]`, and the seed builder.
 *
 * @module
 */
import type Stripe from "stripe";
import { invalidRequest } from "../errors.ts";
import { filterCreated, listPage } from "../lists.ts";
import {
  applyMetadata,
  optBool,
  optObject,
  optString,
  reqInt,
  reqString,
  requireOneOf,
  stringArray,
} from "../params.ts";
import { type Route, route } from "../router.ts";
import type { PayprocStore } from "../store.ts";
import type { PayprocPrice, Wire } from "../types.ts";

/** The billing intervals. */
export const INTERVALS = ["day", "week", "month", "year"] as const;

/** A billing interval. */
export type Interval = typeof INTERVALS[number];

/** Input of {@linkcode createPrice}. */
export interface NewPrice {
  /** The price's `lookup_key` (must be unique). */
  lookupKey?: string;
  /** Amount in the currency's minor unit. */
  unitAmount: number;
  /** Default `usd`. */
  currency?: string;
  /** Recurring interval; omitted for a one-time price. */
  interval?: Interval;
  /** Default 1. */
  intervalCount?: number;
  /** Name of a new product for the price (default "Product"). */
  productName?: string;
  /** Use this existing product instead of creating one. */
  productId?: string;
  /** Default true. */
  active?: boolean;
  metadata?: Record<string, string>;
  nickname?: string;
}

/** Creates a product (as the API would). */
export function createProduct(store: PayprocStore, name: string): Wire<Stripe.Product> {
  const now = store.now();
  return store.put("product", {
    id: store.newId("prod_"),
    object: "product",
    active: true,
    created: now,
    default_price: null,
    description: null,
    images: [],
    livemode: false,
    marketing_features: [],
    metadata: {},
    name,
    package_dimensions: null,
    shippable: null,
    statement_descriptor: null,
    tax_code: null,
    tax_details: null,
    type: "service",
    unit_label: null,
    updated: now,
    url: null,
  });
}

/** Creates a price (and its product unless `productId` is given). */
export function createPrice(store: PayprocStore, input: NewPrice): PayprocPrice {
  if (input.lookupKey && store.all("price").some((p) => p.lookup_key === input.lookupKey)) {
    throw invalidRequest(
      `A price (\`${input.lookupKey}\`) already uses that lookup key.`,
      "lookup_key",
    );
  }
  const product = input.productId
    ? store.require("product", input.productId, "product")
    : createProduct(store, input.productName ?? "Product");
  const price: PayprocPrice = store.put("price", {
    id: store.newId("price_"),
    object: "price",
    active: input.active ?? true,
    billing_scheme: "per_unit",
    created: store.now(),
    currency: (input.currency ?? "usd").toLowerCase(),
    custom_unit_amount: null,
    livemode: false,
    lookup_key: input.lookupKey ?? null,
    metadata: input.metadata ?? {},
    nickname: input.nickname ?? null,
    product: product.id,
    recurring: input.interval
      ? {
        interval: input.interval,
        interval_count: input.intervalCount ?? 1,
        meter: null,
        trial_period_days: null,
        usage_type: "licensed",
      }
      : null,
    tax_behavior: "unspecified",
    tiers_mode: null,
    transform_quantity: null,
    type: input.interval ? "recurring" : "one_time",
    unit_amount: input.unitAmount,
    unit_amount_decimal: String(input.unitAmount),
  });
  if (product.default_price === null) product.default_price = price.id;
  return price;
}

/** The legacy `plan` object the API still embeds next to a recurring price. */
export function planFromPrice(price: PayprocPrice): Wire<Stripe.Plan> {
  const recurring = price.recurring;
  if (!recurring) throw invalidRequest(`The price ${price.id} is not recurring.`, "price");
  return {
    id: price.id,
    object: "plan",
    active: price.active,
    amount: price.unit_amount,
    amount_decimal: price.unit_amount_decimal,
    billing_scheme: "per_unit",
    created: price.created,
    currency: price.currency,
    interval: recurring.interval,
    interval_count: recurring.interval_count,
    livemode: false,
    metadata: price.metadata,
    meter: null,
    nickname: price.nickname,
    product: price.product,
    tiers_mode: null,
    transform_usage: null,
    trial_period_days: null,
    usage_type: "licensed",
  };
}

/** Creates a price from a `price_data` parameter (checkout, subscription items). */
export function priceFromData(
  store: PayprocStore,
  data: Record<string, unknown>,
  param: string,
): PayprocPrice {
  const form = data as Parameters<typeof reqString>[0];
  const productData = optObject(form, "product_data");
  const recurring = optObject(form, "recurring");
  const interval = recurring &&
    requireOneOf(reqString(recurring, "interval"), INTERVALS, `${param}[recurring][interval]`);
  return createPrice(store, {
    unitAmount: reqInt(form, "unit_amount"),
    currency: reqString(form, "currency"),
    interval,
    productId: optString(form, "product"),
    productName: productData ? reqString(productData, "name") : undefined,
    active: false,
  });
}

const PRICE_LIST_PARAMS = [
  "active",
  "created",
  "currency",
  "ending_before",
  "limit",
  "lookup_keys",
  "product",
  "recurring",
  "starting_after",
  "type",
] as const;

const PRICE_CREATE_PARAMS = [
  "active",
  "billing_scheme",
  "currency",
  "currency_options",
  "custom_unit_amount",
  "lookup_key",
  "metadata",
  "nickname",
  "product",
  "product_data",
  "recurring",
  "tax_behavior",
  "tiers",
  "tiers_mode",
  "transfer_lookup_key",
  "transform_quantity",
  "unit_amount",
  "unit_amount_decimal",
] as const;

/** The price and product endpoints. */
export const priceRoutes: Route[] = [
  route("GET", "/v1/prices", PRICE_LIST_PARAMS, ({ store, params }) => {
    const lookupKeys = stringArray(params, "lookup_keys");
    const active = optBool(params, "active");
    const product = optString(params, "product");
    const type = optString(params, "type");
    const currency = optString(params, "currency");
    const interval = optString(optObject(params, "recurring") ?? {}, "interval");
    const prices = filterCreated(store.all("price"), params).filter((p) =>
      (lookupKeys.length === 0 || (p.lookup_key !== null && lookupKeys.includes(p.lookup_key))) &&
      (active === undefined || p.active === active) &&
      (product === undefined || p.product === product) &&
      (type === undefined || p.type === type) &&
      (currency === undefined || p.currency === currency) &&
      (interval === undefined || p.recurring?.interval === interval)
    );
    return listPage(prices, params, "/v1/prices");
  }),
  route("GET", "/v1/prices/:id", [], ({ store, path }) => store.require("price", path.id)),
  route("POST", "/v1/prices", PRICE_CREATE_PARAMS, ({ store, params }) => {
    const lookupKey = optString(params, "lookup_key");
    if (lookupKey && optBool(params, "transfer_lookup_key")) {
      for (const p of store.all("price")) if (p.lookup_key === lookupKey) p.lookup_key = null;
    }
    const productData = optObject(params, "product_data");
    const recurring = optObject(params, "recurring");
    const price = createPrice(store, {
      lookupKey,
      unitAmount: reqInt(params, "unit_amount"),
      currency: reqString(params, "currency"),
      interval: recurring &&
        requireOneOf(reqString(recurring, "interval"), INTERVALS, "recurring[interval]"),
      productId: productData ? undefined : reqString(params, "product"),
      productName: productData ? reqString(productData, "name") : undefined,
      active: optBool(params, "active"),
      nickname: optString(params, "nickname"),
    });
    price.metadata = applyMetadata({}, params);
    return price;
  }),
  route("GET", "/v1/products", [
    "active",
    "created",
    "ending_before",
    "ids",
    "limit",
    "shippable",
    "starting_after",
    "url",
  ], ({ store, params }) => {
    const active = optBool(params, "active");
    const ids = stringArray(params, "ids");
    const products = filterCreated(store.all("product"), params).filter((p) =>
      (active === undefined || p.active === active) && (ids.length === 0 || ids.includes(p.id))
    );
    return listPage(products, params, "/v1/products");
  }),
  route("GET", "/v1/products/:id", [], ({ store, path }) => store.require("product", path.id)),
];
