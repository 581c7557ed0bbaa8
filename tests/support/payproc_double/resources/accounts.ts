/**
 * The platform account (`GET /v1/account`: the account the API key belongs
 * to), connected accounts (`POST /v1/accounts`, retrieve, update, delete,
 * list), account links and login links. New accounts start with onboarding
 * requirements due and charges/payouts disabled; login links need
 * `details_submitted` (as the API requires) and an Express dashboard.
 *
 * A platform that has not signed up for Connect (see
 * {@linkcode configurePlatform}) answers as the API does: the list of
 * connected accounts is empty (the API reference: "If you're not a platform,
 * the list is empty"), creating one is refused with 400 ("You can only create
 * new accounts if you've signed up for Connect, …"), and working with another
 * account by id (retrieve, update, delete, links) with 403 ("Only Stripe
 * Connect platforms can work with other accounts. …").
 *
 * @module
 */
import type Stripe from "stripe";
import type { FormObject } from "../../http_double.ts";
import { invalidRequest, PayprocApiError } from "../errors.ts";
import { filterCreated, listPage } from "../lists.ts";
import { applyMetadata, optObject, optString, reqString, requireOneOf } from "../params.ts";
import { type Route, route } from "../router.ts";
import { type PayprocStore, randomId } from "../store.ts";
import type { PayprocAccount, Wire } from "../types.ts";

/** A capability's status. */
export type CapabilityStatus = "active" | "inactive" | "pending";

/** What {@linkcode patchAccount} can change (the processor's side of onboarding). */
export interface AccountPatch {
  requirements?: {
    currently_due?: string[];
    past_due?: string[];
    eventually_due?: string[];
    pending_verification?: string[];
    disabled_reason?: Stripe.Account.Requirements.DisabledReason | null;
    current_deadline?: number | null;
  };
  payouts_enabled?: boolean;
  charges_enabled?: boolean;
  details_submitted?: boolean;
  /** e.g. `{ transfers: "active" }`; when omitted, enabling charges activates every capability. */
  capabilities?: Record<string, CapabilityStatus>;
  email?: string | null;
  metadata?: Record<string, string>;
}

/** Requirements of a freshly created Express account. */
export const ONBOARDING_REQUIREMENTS = [
  "business_type",
  "external_account",
  "tos_acceptance.date",
  "tos_acceptance.ip",
];

function dashboardType(params: FormObject): "express" | "full" | "none" {
  const type = optString(params, "type");
  if (type) return type === "standard" ? "full" : type === "custom" ? "none" : "express";
  const controller = optObject(params, "controller") ?? {};
  const dashboard = optString(optObject(controller, "stripe_dashboard") ?? {}, "type");
  return dashboard === "full" || dashboard === "none" ? dashboard : "express";
}

function requestedCapabilities(params: FormObject): Record<string, CapabilityStatus> {
  const requested = optObject(params, "capabilities") ?? { transfers: { requested: "true" } };
  const out: Record<string, CapabilityStatus> = {};
  for (const [name, value] of Object.entries(requested)) {
    if (typeof value === "object" && !Array.isArray(value) && value.requested === "true") {
      out[name] = "inactive";
    }
  }
  return out;
}

function requirements(due: string[]): Wire<Stripe.Account.Requirements> {
  return {
    alternatives: [],
    current_deadline: null,
    currently_due: [...due],
    disabled_reason: due.length > 0 ? "requirements.past_due" : null,
    errors: [],
    eventually_due: [...due],
    past_due: [...due],
    pending_verification: [],
  };
}

/** An account's empty list of bank accounts and cards. */
function noExternalAccounts(): PayprocAccount["external_accounts"] {
  return { object: "list", data: [], has_more: false, url: "/v1/accounts/external_accounts" };
}

/** Creates a connected account as the API would (onboarding not done). */
export function createAccount(store: PayprocStore, params: FormObject = {}): PayprocAccount {
  const dashboard = dashboardType(params);
  return store.put("account", {
    id: store.newId("acct_"),
    object: "account",
    business_type: null,
    capabilities: requestedCapabilities(params),
    charges_enabled: false,
    controller: {
      fees: { payer: "application" },
      is_controller: true,
      losses: { payments: "application" },
      requirement_collection: dashboard === "none" ? "application" : "stripe",
      stripe_dashboard: { type: dashboard },
      type: "application",
    },
    country: optString(params, "country") ?? "US",
    created: store.now(),
    default_currency: optString(params, "default_currency") ?? "usd",
    details_submitted: false,
    email: optString(params, "email") ?? null,
    external_accounts: noExternalAccounts(),
    future_requirements: requirements([]),
    metadata: applyMetadata({}, params),
    payouts_enabled: false,
    requirements: requirements(ONBOARDING_REQUIREMENTS),
    tos_acceptance: { date: null, ip: null, user_agent: null },
    type: dashboard === "full" ? "standard" : dashboard === "none" ? "custom" : "express",
  });
}

/** Applies the processor-side changes in `patch` to an account. */
export function patchAccount(account: PayprocAccount, patch: AccountPatch): PayprocAccount {
  if (patch.requirements) {
    const current = account.requirements ?? requirements([]);
    const r = patch.requirements;
    account.requirements = {
      ...current,
      currently_due: r.currently_due ?? current.currently_due,
      past_due: r.past_due ?? current.past_due,
      eventually_due: r.eventually_due ?? r.currently_due ?? current.eventually_due,
      pending_verification: r.pending_verification ?? current.pending_verification,
      disabled_reason: r.disabled_reason !== undefined
        ? r.disabled_reason
        : current.disabled_reason,
      current_deadline: r.current_deadline !== undefined
        ? r.current_deadline
        : current.current_deadline,
    };
  }
  if (patch.details_submitted !== undefined) account.details_submitted = patch.details_submitted;
  if (patch.payouts_enabled !== undefined) account.payouts_enabled = patch.payouts_enabled;
  if (patch.charges_enabled !== undefined) account.charges_enabled = patch.charges_enabled;
  const capabilities: Record<string, CapabilityStatus> = {
    ...(account.capabilities as Record<string, CapabilityStatus>),
  };
  if (patch.capabilities) Object.assign(capabilities, patch.capabilities);
  else if (patch.charges_enabled !== undefined) {
    for (const name of Object.keys(capabilities)) {
      capabilities[name] = patch.charges_enabled ? "active" : "inactive";
    }
  }
  account.capabilities = capabilities;
  if (patch.email !== undefined) account.email = patch.email;
  if (patch.metadata) account.metadata = { ...account.metadata, ...patch.metadata };
  return account;
}

/** Marks an account fully onboarded: details submitted, nothing due, charges/payouts and capabilities enabled. */
export function completeOnboarding(account: PayprocAccount, now: number): PayprocAccount {
  account.tos_acceptance = { date: now, ip: "127.0.0.1", user_agent: null };
  account.business_type = "individual";
  return patchAccount(account, {
    details_submitted: true,
    charges_enabled: true,
    payouts_enabled: true,
    requirements: { currently_due: [], past_due: [], eventually_due: [], disabled_reason: null },
  });
}

const ACCOUNT_PARAMS = [
  "account_token",
  "business_profile",
  "business_type",
  "capabilities",
  "company",
  "controller",
  "country",
  "default_currency",
  "documents",
  "email",
  "external_account",
  "groups",
  "individual",
  "metadata",
  "settings",
  "tos_acceptance",
  "type",
] as const;

/** How the platform (the account the API key belongs to) is set up; see {@linkcode configurePlatform}. */
export interface PlatformOptions {
  /** Two-letter country of the platform account (default `US`). */
  country?: string;
  /** Whether the platform has signed up for Connect (default true). */
  connect?: boolean;
}

interface Platform {
  account: PayprocAccount;
  connect: boolean;
}

/**
 * The platform of each store. Kept beside the store rather than in it: the
 * platform is the double's setup, not an object the API creates, so
 * `resetState()` keeps it.
 */
const PLATFORMS = new WeakMap<PayprocStore, Platform>();

/** The platform of `store` (created on first use: a US Standard account with Connect). */
function platformOf(store: PayprocStore): Platform {
  let platform = PLATFORMS.get(store);
  if (!platform) {
    platform = { account: platformAccount(store, "US"), connect: true };
    PLATFORMS.set(store, platform);
  }
  return platform;
}

/** The platform's own account as `GET /v1/account` answers it: onboarded, charges and payouts on. */
function platformAccount(store: PayprocStore, country: string): PayprocAccount {
  return {
    id: randomId("acct_"),
    object: "account",
    business_profile: {
      mcc: "5734",
      minority_owned_business_designation: null,
      name: "Marketplace (test double)",
      specified_commercial_transactions_act_url: null,
      support_address: null,
      support_email: null,
      support_phone: null,
      support_url: null,
      url: null,
    },
    business_type: "company",
    capabilities: { card_payments: "active", transfers: "active" },
    charges_enabled: true,
    controller: { type: "account" },
    country,
    created: store.now(),
    default_currency: "usd",
    details_submitted: true,
    email: "platform@example.test",
    external_accounts: noExternalAccounts(),
    future_requirements: requirements([]),
    metadata: {},
    payouts_enabled: true,
    requirements: requirements([]),
    tos_acceptance: { date: store.now(), ip: "127.0.0.1", user_agent: null },
    type: "standard",
  };
}

/**
 * Changes the platform's setup (country, whether it has Connect) and returns
 * its account; `{}` just returns it. The account's id stays the same.
 */
export function configurePlatform(
  store: PayprocStore,
  options: PlatformOptions = {},
): PayprocAccount {
  const platform = platformOf(store);
  if (options.country !== undefined) platform.account.country = options.country;
  if (options.connect !== undefined) platform.connect = options.connect;
  return platform.account;
}

/** 400 for creating a connected account without Connect, in the API's words. */
function requireConnectToCreate(store: PayprocStore): void {
  if (platformOf(store).connect) return;
  throw invalidRequest(
    "You can only create new accounts if you've signed up for Connect, which you can learn how to do at https://stripe.com/docs/connect.",
  );
}

/** 403 for working with another account without Connect, in the API's words. */
function requireConnect(store: PayprocStore): void {
  if (platformOf(store).connect) return;
  throw new PayprocApiError(
    403,
    "invalid_request_error",
    "Only Stripe Connect platforms can work with other accounts. If you specified a client_id parameter, make sure it's correct. If you need to setup a Stripe Connect platform, you can do so at https://dashboard.stripe.com/account/applications/settings.",
  );
}

/** The platform account, account, account link and login link endpoints. */
export const accountRoutes: Route[] = [
  route("GET", "/v1/account", [], ({ store }) => platformOf(store).account),
  route("POST", "/v1/accounts", ACCOUNT_PARAMS, ({ store, params }) => {
    requireConnectToCreate(store);
    const type = optString(params, "type");
    if (type) requireOneOf(type, ["custom", "express", "standard"] as const, "type");
    return createAccount(store, params);
  }),
  route(
    "GET",
    "/v1/accounts",
    ["created", "ending_before", "limit", "starting_after"],
    ({ store, params }) =>
      listPage(
        platformOf(store).connect ? filterCreated(store.all("account"), params) : [],
        params,
        "/v1/accounts",
      ),
  ),
  route("GET", "/v1/accounts/:id", [], ({ store, path }) => {
    requireConnect(store);
    return store.require("account", path.id);
  }),
  route(
    "POST",
    "/v1/accounts/:id",
    ACCOUNT_PARAMS.filter((p) => !["controller", "country", "type"].includes(p)),
    ({ store, path, params }) => {
      requireConnect(store);
      const account = store.require("account", path.id);
      const email = optString(params, "email");
      if (email !== undefined) account.email = email || null;
      account.metadata = applyMetadata(account.metadata ?? {}, params);
      return account;
    },
  ),
  route("DELETE", "/v1/accounts/:id", [], ({ store, path }) => {
    requireConnect(store);
    const account = store.require("account", path.id);
    return { id: account.id, object: "account", deleted: true };
  }),
  route("POST", "/v1/account_links", [
    "account",
    "collect",
    "collection_options",
    "refresh_url",
    "return_url",
    "type",
  ], ({ store, params }) => {
    requireConnect(store);
    const account = store.require("account", reqString(params, "account"), "account");
    requireOneOf(
      reqString(params, "type"),
      ["account_onboarding", "account_update"] as const,
      "type",
    );
    const created = store.now();
    const link: Wire<Stripe.AccountLink> = {
      object: "account_link",
      created,
      expires_at: created + 300,
      url: `${store.baseUrl}/connect/setup/${account.id}/${randomId("", 12)}`,
    };
    store.accountLinks.push(link);
    return link;
  }),
  route("POST", "/v1/accounts/:id/login_links", [], ({ store, path }) => {
    requireConnect(store);
    const account = store.require("account", path.id);
    if (account.controller?.stripe_dashboard?.type !== "express") {
      throw invalidRequest(
        "Login links can only be created for accounts with access to the Express Dashboard.",
        "account",
      );
    }
    if (!account.details_submitted) {
      throw invalidRequest(
        "Cannot create a login link for an account that has not completed onboarding.",
        "account",
      );
    }
    const link: Wire<Stripe.LoginLink> = {
      object: "login_link",
      created: store.now(),
      url: `${store.baseUrl}/express/${account.id}/${randomId("", 12)}`,
    };
    store.loginLinks.push(link);
    return link;
  }),
];
