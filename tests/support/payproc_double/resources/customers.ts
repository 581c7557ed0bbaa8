/**
 * Customers: create, retrieve (deleted ones answer `deleted: true`), update,
 * delete, list (`email`, `created`) and search (`email:'…'`,
 * `metadata['key']:'…'`).
 *
 * @module
 */
import type { FormObject } from "../../http_double.ts";
import { resourceMissing } from "../errors.ts";
import { filterCreated, listPage, searchPage } from "../lists.ts";
import { applyMetadata, optString, reqString } from "../params.ts";
import { type Route, route } from "../router.ts";
import { compileSearch } from "../search_query.ts";
import type { PayprocStore } from "../store.ts";
import type { PayprocCustomer } from "../types.ts";

/** Input of {@linkcode createCustomer}. */
export interface NewCustomer {
  email?: string | null;
  name?: string | null;
  phone?: string | null;
  description?: string | null;
  metadata?: Record<string, string>;
}

/** Creates a customer as the API would. */
export function createCustomer(store: PayprocStore, input: NewCustomer = {}): PayprocCustomer {
  const id = store.newId("cus_");
  return store.put("customer", {
    id,
    object: "customer",
    address: null,
    balance: 0,
    created: store.now(),
    currency: null,
    customer_account: null,
    default_source: null,
    delinquent: false,
    description: input.description ?? null,
    discount: null,
    email: input.email ?? null,
    invoice_prefix: id.slice(4, 12).toUpperCase(),
    invoice_settings: {
      custom_fields: null,
      default_payment_method: null,
      footer: null,
      rendering_options: null,
    },
    livemode: false,
    metadata: input.metadata ?? {},
    name: input.name ?? null,
    next_invoice_sequence: 1,
    phone: input.phone ?? null,
    preferred_locales: [],
    shipping: null,
    tax_exempt: "none",
    test_clock: null,
  });
}

/** A live (not deleted) customer, or `resource_missing`. */
export function liveCustomer(store: PayprocStore, id: string, param = "id"): PayprocCustomer {
  if (store.deletedCustomers.has(id)) throw resourceMissing("customer", id, param);
  return store.require("customer", id, param);
}

/** The shape the API answers for a deleted customer. */
export function deletedCustomer(id: string): { id: string; object: "customer"; deleted: true } {
  return { id, object: "customer", deleted: true };
}

/** Deletes a customer as the API does, canceling its subscriptions. */
export function deleteCustomer(
  store: PayprocStore,
  id: string,
): { id: string; object: "customer"; deleted: true } {
  const customer = liveCustomer(store, id);
  store.deletedCustomers.add(customer.id);
  for (const sub of store.all("subscription")) {
    if (sub.customer === customer.id && sub.status !== "canceled") {
      sub.status = "canceled";
      sub.canceled_at = sub.ended_at = store.now();
    }
  }
  return deletedCustomer(customer.id);
}

function applyUpdate(customer: PayprocCustomer, params: FormObject): PayprocCustomer {
  for (const key of ["email", "name", "phone", "description"] as const) {
    const value = optString(params, key);
    if (value !== undefined) customer[key] = value === "" ? null : value;
  }
  customer.metadata = applyMetadata(customer.metadata, params);
  return customer;
}

const WRITE_PARAMS = [
  "address",
  "balance",
  "business_name",
  "cash_balance",
  "description",
  "email",
  "individual_name",
  "invoice_prefix",
  "invoice_settings",
  "metadata",
  "name",
  "next_invoice_sequence",
  "payment_method",
  "phone",
  "preferred_locales",
  "shipping",
  "source",
  "tax",
  "tax_exempt",
  "tax_id_data",
  "test_clock",
  "validate",
  "default_source",
] as const;

/** The customer endpoints. */
export const customerRoutes: Route[] = [
  route(
    "POST",
    "/v1/customers",
    WRITE_PARAMS,
    ({ store, params }) => applyUpdate(createCustomer(store), params),
  ),
  route("GET", "/v1/customers/search", ["query", "limit", "page"], ({ store, params }) => {
    const matches = compileSearch(reqString(params, "query"));
    const found = store.all("customer").filter((c) =>
      !store.deletedCustomers.has(c.id) && store.searchable(c.id) &&
      matches((field, key) =>
        field === "metadata"
          ? c.metadata[key ?? ""]
          : field === "email" || field === "name" || field === "phone" || field === "created"
          ? c[field]
          : undefined
      )
    );
    return searchPage(found, params, "/v1/customers/search");
  }),
  route("GET", "/v1/customers", [
    "created",
    "email",
    "ending_before",
    "limit",
    "starting_after",
    "test_clock",
  ], ({ store, params }) => {
    const email = optString(params, "email");
    const customers = filterCreated(store.all("customer"), params).filter((c) =>
      !store.deletedCustomers.has(c.id) && (email === undefined || c.email === email)
    );
    return listPage(customers, params, "/v1/customers");
  }),
  route("GET", "/v1/customers/:id", [], ({ store, path }) => {
    const customer = store.require("customer", path.id);
    return store.deletedCustomers.has(customer.id) ? deletedCustomer(customer.id) : customer;
  }),
  route(
    "POST",
    "/v1/customers/:id",
    WRITE_PARAMS,
    ({ store, path, params }) => applyUpdate(liveCustomer(store, path.id), params),
  ),
  route("DELETE", "/v1/customers/:id", [], ({ store, path }) => deleteCustomer(store, path.id)),
];
