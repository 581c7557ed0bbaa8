/**
 * Refunds: create against a payment intent's (or charge's) captured,
 * not yet refunded amount (refused with `charge_disputed` while a dispute
 * holds the charge, or after it was lost); retrieve, update metadata, list.
 * A refund starts `succeeded` unless the store's `newRefundStatus` says
 * otherwise; {@linkcode setRefundStatus} moves it later as the processor
 * would (a pending refund succeeding or failing, a succeeded one failing
 * when the card was closed), giving a failed or canceled refund's amount
 * back to its charge.
 *
 * @module
 */
import type { FormObject } from "../../http_double.ts";
import { invalidRequest } from "../errors.ts";
import { filterCreated, listPage } from "../lists.ts";
import { applyMetadata, optInt, optString, requireOneOf } from "../params.ts";
import { type Route, route } from "../router.ts";
import type { PayprocStore } from "../store.ts";
import type { KindMap, RefundStatus } from "../types.ts";

/** Options of {@linkcode setRefundStatus}. */
export interface RefundStatusOptions {
  /** Why a refund failed (`failure_reason`); default `expired_or_canceled_card`. */
  failureReason?: string;
}

/** The moves {@linkcode setRefundStatus} allows, by the refund's status (failed and canceled are final). */
const REFUND_MOVES: Record<string, readonly RefundStatus[]> = {
  pending: ["requires_action", "succeeded", "failed", "canceled"],
  requires_action: ["pending", "succeeded", "failed", "canceled"],
  succeeded: ["failed"],
  failed: [],
  canceled: [],
};

/** Creates a refund against a payment intent's (or a charge's) captured amount. */
export function createRefund(store: PayprocStore, params: FormObject): KindMap["refund"] {
  const piId = optString(params, "payment_intent");
  const chargeId = optString(params, "charge");
  if (!piId && !chargeId) {
    throw invalidRequest(
      "One of the following params should be provided for this request: payment_intent or charge.",
    );
  }
  const pi = piId ? store.require("payment_intent", piId, "payment_intent") : undefined;
  const latest = pi ? pi.latest_charge : chargeId;
  const charge = typeof latest === "string" ? store.require("charge", latest, "charge") : undefined;
  if (!charge || !charge.captured) {
    throw invalidRequest(
      `This PaymentIntent (${piId}) does not have a successful charge to refund.`,
      "payment_intent",
    );
  }
  const chargedBack = store.all("dispute").some((d) =>
    d.charge === charge.id && !d.is_charge_refundable &&
    !["won", "warning_closed", "prevented"].includes(d.status)
  );
  if (chargedBack) {
    throw invalidRequest(
      `Charge ${charge.id} has been charged back; cannot issue a refund.`,
      undefined,
      "charge_disputed",
    );
  }
  const remaining = charge.amount_captured - charge.amount_refunded;
  if (remaining <= 0) {
    throw invalidRequest(
      `Charge ${charge.id} has already been refunded.`,
      "charge",
      "charge_already_refunded",
    );
  }
  const amount = optInt(params, "amount") ?? remaining;
  if (amount > remaining) {
    throw invalidRequest(
      `Refund amount (${amount}) is greater than unrefunded amount on charge (${remaining})`,
      "amount",
    );
  }
  charge.amount_refunded += amount;
  charge.refunded = charge.amount_refunded === charge.amount_captured;
  const reason = optString(params, "reason");
  return store.put("refund", {
    id: store.newId("re_"),
    object: "refund",
    amount,
    balance_transaction: store.newId("txn_"),
    charge: charge.id,
    created: store.now(),
    currency: charge.currency,
    customer: charge.customer,
    customer_account: null,
    metadata: applyMetadata({}, params),
    payment_intent: typeof charge.payment_intent === "string" ? charge.payment_intent : null,
    payment_method: charge.payment_method,
    reason: reason
      ? requireOneOf(
        reason,
        ["duplicate", "fraudulent", "requested_by_customer"] as const,
        "reason",
      )
      : null,
    receipt_number: null,
    source_transfer_reversal: null,
    status: store.newRefundStatus,
    transfer_reversal: null,
  });
}

/**
 * Moves `refund` to `status` as the processor would: a pending refund
 * succeeds, fails or is canceled; a succeeded one may still fail (the card
 * was closed). A failed or canceled refund gives its amount back to the
 * charge (`amount_refunded`, `refunded`), which can be refunded again.
 * Throws for a move the processor never makes (out of `failed` or
 * `canceled`, or a succeeded refund back to pending).
 */
export function setRefundStatus(
  store: PayprocStore,
  refund: KindMap["refund"],
  status: RefundStatus,
  options: RefundStatusOptions = {},
): KindMap["refund"] {
  const from = refund.status ?? "pending";
  if (from === status) return refund;
  if (!(REFUND_MOVES[from] ?? []).includes(status)) {
    throw new Error(`A refund cannot move from ${from} to ${status} (refund ${refund.id})`);
  }
  refund.status = status;
  if (status === "failed" || status === "canceled") {
    const chargeId = typeof refund.charge === "string" ? refund.charge : refund.charge?.id;
    const charge = chargeId ? store.get("charge", chargeId) : undefined;
    if (charge) {
      charge.amount_refunded = Math.max(0, charge.amount_refunded - refund.amount);
      charge.refunded = charge.amount_refunded >= charge.amount_captured &&
        charge.amount_captured > 0;
    }
  }
  if (status === "failed") {
    refund.failure_reason = options.failureReason ?? "expired_or_canceled_card";
    refund.failure_balance_transaction = store.newId("txn_");
  }
  return refund;
}

/** The refund endpoints. */
export const refundRoutes: Route[] = [
  route(
    "POST",
    "/v1/refunds",
    [
      "amount",
      "charge",
      "currency",
      "customer",
      "instructions_email",
      "metadata",
      "origin",
      "payment_intent",
      "reason",
      "refund_application_fee",
      "reverse_transfer",
    ],
    ({ store, params }) => createRefund(store, params),
  ),
  route("GET", "/v1/refunds/:id", [], ({ store, path }) => store.require("refund", path.id)),
  route("POST", "/v1/refunds/:id", ["metadata"], ({ store, path, params }) => {
    const refund = store.require("refund", path.id);
    refund.metadata = applyMetadata(refund.metadata ?? {}, params);
    return refund;
  }),
  route("POST", "/v1/refunds/:id/cancel", [], ({ store, path }) => {
    const refund = store.require("refund", path.id);
    if (refund.status !== "requires_action") {
      throw invalidRequest(
        `Refund ${refund.id} cannot be canceled because it has a status of ${refund.status}. Only refunds with a status of requires_action can be canceled.`,
      );
    }
    return setRefundStatus(store, refund, "canceled");
  }),
  route("GET", "/v1/refunds", [
    "charge",
    "created",
    "ending_before",
    "limit",
    "payment_intent",
    "starting_after",
  ], ({ store, params }) => {
    const pi = optString(params, "payment_intent");
    const charge = optString(params, "charge");
    const found = filterCreated(store.all("refund"), params).filter((r) =>
      (pi === undefined || r.payment_intent === pi) && (charge === undefined || r.charge === charge)
    );
    return listPage(found, params, "/v1/refunds");
  }),
];
