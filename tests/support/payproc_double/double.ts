/**
 * {@linkcode PayprocDouble}: a stateful local emulation of the payment
 * processor's API (Stripe, API version pinned by the SDK) that the real SDK
 * talks to over HTTP. It checks the `Authorization: Bearer sk_…` key, rejects
 * unknown parameters, replays `Idempotency-Key`s, answers with the API's
 * object, list and error shapes, and offers helpers to seed state and to
 * change it as the processor would (then build signed webhooks about it).
 *
 * @module
 */
import Stripe from "stripe";
import {
  decodeBracketParams,
  type FormObject,
  HttpDouble,
  jsonResponse,
  type RecordedRequest,
} from "../http_double.ts";
import { injectedFailureBody, invalidRequest, PayprocApiError, unauthenticated } from "./errors.ts";
import { expand } from "./expand.ts";
import { expandPaths, rejectUnknownParams } from "./params.ts";
import { matchRoute, type Route } from "./router.ts";
import { PayprocStore, randomId } from "./store.ts";
import type {
  Kind,
  KindMap,
  LinkKind,
  NewRefundStatus,
  PayprocAccount,
  PayprocCustomer,
  PayprocDispute,
  PayprocInvoice,
  PayprocPaymentIntent,
  PayprocPrice,
  PayprocRefund,
  PayprocSubscription,
  PayprocTransfer,
  PayprocTransferReversal,
  RefundStatus,
} from "./types.ts";
import {
  buildEvent,
  type EventOptions,
  type PayprocEventObject,
  type PayprocEventOf,
  type PayprocEventType,
  type SignedWebhook,
  signWebhook,
} from "./webhooks.ts";
import {
  type AccountPatch,
  accountRoutes,
  completeOnboarding,
  configurePlatform,
  createAccount,
  patchAccount,
  type PlatformOptions,
} from "./resources/accounts.ts";
import {
  type CheckoutCompletion,
  checkoutRoutes,
  completeCheckoutSession,
  type CompletedCheckout,
} from "./resources/checkout.ts";
import {
  createCustomer,
  customerRoutes,
  deleteCustomer,
  deletedCustomer,
  type NewCustomer,
} from "./resources/customers.ts";
import {
  createDispute,
  decideDispute,
  type DisputeOptions,
  type DisputeOutcome,
  disputeRoutes,
} from "./resources/disputes.ts";
import { eventRoutes } from "./resources/events.ts";
import { createInvoice, invoiceRoutes, type NewInvoice } from "./resources/invoices.ts";
import {
  failPaymentIntent,
  type PaymentFailure,
  paymentRoutes,
  setPaymentIntentStatus,
} from "./resources/payments.ts";
import { createPrice, type NewPrice, priceRoutes } from "./resources/prices.ts";
import { refundRoutes, type RefundStatusOptions, setRefundStatus } from "./resources/refunds.ts";
import { subscriptionRoutes } from "./resources/subscriptions.ts";
import { createReversal, transferRoutes } from "./resources/transfers.ts";
import {
  patchSubscription,
  renewSubscription,
  seedSubscription,
  type SubscriptionPatch,
  type SubscriptionSeed,
} from "./subscription_helpers.ts";

const ROUTES: readonly Route[] = [
  ...priceRoutes,
  ...customerRoutes,
  ...checkoutRoutes,
  ...subscriptionRoutes,
  ...invoiceRoutes,
  ...paymentRoutes,
  ...refundRoutes,
  ...disputeRoutes,
  ...transferRoutes,
  ...accountRoutes,
  ...eventRoutes,
];

/** Options of {@linkcode PayprocDouble}. */
export interface PayprocDoubleOptions {
  /** Clock in Unix seconds (default: real time); drives `created` and periods. */
  now?: () => number;
  /** How long new objects stay invisible to `/search` endpoints, like the API's index lag (default 0). */
  searchDelayMs?: number;
  /** The platform account's setup (default: a US account with Connect); see {@linkcode PayprocDouble.setPlatform}. */
  platform?: PlatformOptions;
}

/** The stateful payment-processor double; see the module doc. Start with `new PayprocDouble()`. */
export class PayprocDouble extends HttpDouble {
  /** The emulated state (prefer the helpers; mutate directly only for odd cases). */
  readonly store: PayprocStore;

  /** Starts the server on 127.0.0.1 with an ephemeral port. */
  constructor(options: PayprocDoubleOptions = {}) {
    super();
    this.store = new PayprocStore(options.now ?? (() => Math.floor(Date.now() / 1000)), this.url);
    this.store.searchDelayMs = options.searchDelayMs ?? 0;
    if (options.platform) configurePlatform(this.store, options.platform);
  }

  /**
   * The platform account (`GET /v1/account`), after applying `options`: e.g.
   * `setPlatform({ connect: false })` for a platform that never signed up for
   * Connect (connected-account calls then answer as the API does without it).
   */
  setPlatform(options: PlatformOptions = {}): PayprocAccount {
    return structuredClone(configurePlatform(this.store, options));
  }

  /** Seeds a price (and product), e.g. `addPrice({ lookupKey: "pro_monthly", unitAmount: 1500, interval: "month" })`. */
  addPrice(input: NewPrice): PayprocPrice {
    return structuredClone(createPrice(this.store, input));
  }

  /** Seeds a customer. */
  addCustomer(input: NewCustomer = {}): PayprocCustomer {
    return structuredClone(createCustomer(this.store, input));
  }

  /** Deletes a customer as if done in the dashboard (its subscriptions end; retrieval answers `deleted: true`). */
  deleteCustomer(id: string): void {
    deleteCustomer(this.store, id);
  }

  /** Completes a checkout session as if the customer paid; see `completeCheckoutSession`. */
  completeCheckout(sessionId: string, options: CheckoutCompletion = {}): CompletedCheckout {
    return structuredClone(completeCheckoutSession(this.store, sessionId, options));
  }

  /** Seeds a subscription for a customer (one item, by `priceId` or `lookupKey`). */
  addSubscription(seed: SubscriptionSeed): PayprocSubscription {
    return structuredClone(seedSubscription(this.store, seed));
  }

  /** Changes a subscription as the processor would (status, period, price, cancellation). */
  updateSubscription(id: string, patch: SubscriptionPatch): PayprocSubscription {
    return structuredClone(patchSubscription(this.store, id, patch));
  }

  /** Rolls a subscription into its next period (paid invoice), or ends it if set to cancel. */
  renewSubscription(
    id: string,
  ): { subscription: PayprocSubscription; invoice: PayprocInvoice | null } {
    return structuredClone(renewSubscription(this.store, id));
  }

  /** Seeds an invoice. */
  addInvoice(input: NewInvoice): PayprocInvoice {
    return structuredClone(createInvoice(this.store, input));
  }

  /** Moves a payment intent to `status`; `succeeded`/`requires_capture` attach a `latest_charge`. */
  setPaymentIntentStatus(id: string, status: Stripe.PaymentIntent.Status): PayprocPaymentIntent {
    return structuredClone(
      setPaymentIntentStatus(this.store, this.store.require("payment_intent", id), status),
    );
  }

  /**
   * Declines a payment attempt: a failed charge as `latest_charge`, status
   * back to `requires_payment_method`, `last_payment_error` set (`card_error`,
   * default code `card_declined`, "Your card was declined.").
   */
  failPaymentIntent(id: string, options: PaymentFailure = {}): PayprocPaymentIntent {
    return structuredClone(
      failPaymentIntent(this.store, this.store.require("payment_intent", id), options),
    );
  }

  /**
   * Opens a dispute on a captured charge as the cardholder's bank would
   * (`needs_response`, the captured amount, `charge.disputed` set).
   */
  disputeCharge(chargeId: string, options: DisputeOptions = {}): PayprocDispute {
    return structuredClone(createDispute(this.store, chargeId, options));
  }

  /** Decides a dispute (`won` returns the funds with a `dispute_reversal` balance transaction). */
  closeDispute(id: string, outcome: DisputeOutcome): PayprocDispute {
    return structuredClone(decideDispute(this.store, this.store.require("dispute", id), outcome));
  }

  /**
   * The status refunds created from now on start in: `succeeded` (the
   * default, as card refunds usually do), or `pending` / `requires_action`
   * (bank debits, some wallets) until {@linkcode setRefundStatus} moves them.
   */
  setNewRefundStatus(status: NewRefundStatus): void {
    this.store.newRefundStatus = status;
  }

  /**
   * Moves a refund as the processor would: a pending one succeeds, fails or
   * is canceled; a succeeded one may still fail (`failureReason`, default
   * `expired_or_canceled_card`). A failed or canceled refund gives its amount
   * back to the charge. Then build its webhook, e.g.
   * `event("refund.failed", refund)` or `event("charge.refund.updated", refund)`.
   */
  setRefundStatus(
    id: string,
    status: RefundStatus,
    options: RefundStatusOptions = {},
  ): PayprocRefund {
    return structuredClone(
      setRefundStatus(this.store, this.store.require("refund", id), status, options),
    );
  }

  /**
   * Reverses a transfer as the processor would (e.g. from the dashboard):
   * `amount` defaults to what is left; the same checks as the API apply.
   */
  reverseTransfer(
    id: string,
    amount?: number,
  ): { transfer: PayprocTransfer; reversal: PayprocTransferReversal } {
    const transfer = this.store.require("transfer", id);
    const reversal = createReversal(this.store, transfer, { amount });
    return structuredClone({ transfer, reversal });
  }

  /** Seeds a connected Express account, optionally already changed by `patch`. */
  addAccount(patch: AccountPatch = {}): PayprocAccount {
    return structuredClone(patchAccount(createAccount(this.store), patch));
  }

  /** Changes a connected account's requirements, capabilities and enabled flags. */
  setAccount(id: string, patch: AccountPatch): PayprocAccount {
    return structuredClone(patchAccount(this.store.require("account", id), patch));
  }

  /** Marks a connected account fully onboarded (nothing due, charges, payouts and capabilities on). */
  completeOnboarding(id: string): PayprocAccount {
    return structuredClone(completeOnboarding(this.store.require("account", id), this.store.now()));
  }

  /** Builds an event about `object` (stored, so `GET /v1/events/:id` finds it). */
  event<T extends PayprocEventType>(
    type: T,
    object: PayprocEventObject<T>,
    options: EventOptions = {},
  ): PayprocEventOf<T> {
    const event = buildEvent(type, object, { created: this.store.now(), ...options });
    this.store.put("event", event as unknown as KindMap["event"]);
    return structuredClone(event);
  }

  /** Signs an event like a webhook delivery; see `signWebhook`. */
  signedWebhook(
    event: object | string,
    secret: string,
    options: { timestamp?: number } = {},
  ): Promise<SignedWebhook> {
    return signWebhook(event, secret, options);
  }

  /** A copy of a stored object, or undefined. */
  get<K extends Kind>(kind: K, id: string): KindMap[K] | undefined {
    const found = this.store.get(kind, id);
    return found && structuredClone(found);
  }

  /** Copies of all stored objects of a kind, newest first. */
  all<K extends Kind>(kind: K): KindMap[K][] {
    return structuredClone(this.store.all(kind));
  }

  /** How many objects of a kind exist (e.g. to assert exactly one customer was created). */
  createdCount(kind: Kind | LinkKind): number {
    return this.store.count(kind);
  }

  /** Forgets all state (objects, idempotency keys), keeping the server and recorded requests. */
  resetState(): void {
    this.store.clear();
  }

  /** API errors have the processor's envelope. */
  protected override failureBody(status: number): unknown {
    return injectedFailureBody(status);
  }

  /** Serves hosted pages and the `/v1` API. */
  protected override handle(request: RecordedRequest): Response {
    if (!request.path.startsWith("/v1/")) return this.#hostedPage(request);
    const requestId = randomId("req_");
    try {
      this.#authenticate(request);
      const key = request.method === "POST" ? request.headers.get("idempotency-key") : null;
      const replay = key ? this.#replay(key, request) : undefined;
      if (replay) return replay;
      const body = this.#dispatch(request);
      const text = JSON.stringify(body);
      if (key) {
        this.store.idempotency.set(key, {
          method: request.method,
          path: request.path,
          bodyText: request.bodyText,
          status: 200,
          body: text,
          requestId,
        });
      }
      return this.#respond(200, text, request, requestId, key);
    } catch (error) {
      if (!(error instanceof PayprocApiError)) throw error;
      return this.#respond(error.status, JSON.stringify(error.body()), request, requestId, null);
    }
  }

  #dispatch(request: RecordedRequest): unknown {
    const matched = matchRoute(ROUTES, request.method, request.path);
    if (!matched) {
      throw new PayprocApiError(
        404,
        "invalid_request_error",
        `Unrecognized request URL (${request.method}: ${request.path}). Please see https://stripe.com/docs or we can help at https://support.stripe.com/.`,
      );
    }
    const params: FormObject = {
      ...decodeBracketParams(request.query),
      ...(isFormObject(request.body) ? request.body : {}),
    };
    rejectUnknownParams(params, matched.route.params);
    const result = matched.route.handle({
      store: this.store,
      params,
      path: matched.path,
      request,
      baseUrl: this.url,
    });
    return expand(structuredClone(result), expandPaths(params), (id) => this.#render(id));
  }

  #render(id: string): unknown {
    if (this.store.deletedCustomers.has(id)) return deletedCustomer(id);
    const found = this.store.find(id);
    return found && structuredClone(found);
  }

  #authenticate(request: RecordedRequest): void {
    const header = request.headers.get("authorization");
    if (!header) {
      throw unauthenticated(
        "You did not provide an API key. You need to provide your API key in the Authorization header, using Bearer auth (e.g. 'Authorization: Bearer YOUR_SECRET_KEY').",
      );
    }
    const key = header.replace(/^Bearer\s+/i, "");
    if (!/^(sk|rk)_(test|live)_\S+$/.test(key) && !/^sk_\S+$/.test(key)) {
      throw unauthenticated(
        `Invalid API Key provided: ${key.slice(0, 8)}${"*".repeat(Math.max(0, key.length - 12))}${
          key.slice(-4)
        }`,
      );
    }
  }

  #replay(key: string, request: RecordedRequest): Response | undefined {
    const previous = this.store.idempotency.get(key);
    if (!previous) return undefined;
    if (
      previous.method !== request.method || previous.path !== request.path ||
      previous.bodyText !== request.bodyText
    ) {
      throw new PayprocApiError(
        400,
        "idempotency_error",
        `Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '${key}' if you meant to execute a different request.`,
      );
    }
    return this.#respond(
      previous.status,
      String(previous.body),
      request,
      previous.requestId,
      key,
      true,
    );
  }

  #respond(
    status: number,
    text: string,
    request: RecordedRequest,
    requestId: string,
    idempotencyKey: string | null,
    replayed = false,
  ): Response {
    const headers: Record<string, string> = {
      "content-type": "application/json",
      // The processor's clock (`now`), as the API's answers carry it: the
      // webhook compares it with events' `created`.
      date: new Date(this.store.now() * 1000).toUTCString(),
      "request-id": requestId,
      "stripe-version": request.headers.get("stripe-version") ?? Stripe.API_VERSION,
    };
    if (idempotencyKey) headers["idempotency-key"] = idempotencyKey;
    if (replayed) {
      headers["idempotent-replayed"] = "true";
      headers["original-request"] = requestId;
    }
    return new Response(text, { status, headers });
  }

  #hostedPage(request: RecordedRequest): Response {
    if (request.method !== "GET") return jsonResponse(404, invalidRequest("Not found").body());
    const title = request.path.split("/").filter(Boolean).join(" / ");
    return new Response(
      `<!doctype html><title>${title}</title><h1>${title}</h1><p>Hosted page of the payment-processor test double.</p>`,
      {
        headers: { "content-type": "text/html; charset=utf-8" },
      },
    );
  }
}

function isFormObject(body: unknown): body is FormObject {
  return typeof body === "object" && body !== null && !Array.isArray(body);
}
