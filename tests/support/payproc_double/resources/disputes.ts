/**
 * Disputes (chargebacks): retrieve, list, update (metadata, staged or
 * submitted evidence), close (accept: the dispute is lost), and the
 * processor-side helpers that open a dispute on a charge and decide it.
 *
 * @module
 */
import type Stripe from "stripe";
import type { FormObject } from "../../http_double.ts";
import { invalidRequest } from "../errors.ts";
import { filterCreated, listPage } from "../lists.ts";
import { applyMetadata, optBool, optObject, optString, requireOneOf } from "../params.ts";
import { type Route, route } from "../router.ts";
import type { PayprocStore } from "../store.ts";
import type { PayprocDispute, Wire } from "../types.ts";

/**
 * The reasons a cardholder's bank gives (the SDK types `reason` as a plain
 * string, so the documented values are listed here).
 */
export type DisputeReason =
  | "bank_cannot_process"
  | "check_returned"
  | "credit_not_processed"
  | "customer_initiated"
  | "debit_not_authorized"
  | "duplicate"
  | "fraudulent"
  | "general"
  | "incorrect_account_details"
  | "insufficient_funds"
  | "noncompliant"
  | "product_not_received"
  | "product_unacceptable"
  | "subscription_canceled"
  | "unrecognized";

/** Options of {@linkcode createDispute}. */
export interface DisputeOptions {
  /** Default `fraudulent`, like the API's dispute test card. */
  reason?: DisputeReason;
}

/** The decided outcomes {@linkcode decideDispute} can set. */
export type DisputeOutcome = "won" | "lost";

/** The dispute fee the processor withdraws with the disputed amount (USD: $15.00). */
export const DISPUTE_FEE = 1500;

/** Days the merchant has to answer a new dispute in the double (`evidence_details.due_by`). */
const RESPONSE_DAYS = 7;

const CLOSED: readonly string[] = ["won", "lost", "warning_closed", "prevented"];

function emptyEvidence(): Wire<Stripe.Dispute.Evidence> {
  return {
    access_activity_log: null,
    billing_address: null,
    cancellation_policy: null,
    cancellation_policy_disclosure: null,
    cancellation_rebuttal: null,
    customer_communication: null,
    customer_email_address: null,
    customer_name: null,
    customer_purchase_ip: null,
    customer_signature: null,
    duplicate_charge_documentation: null,
    duplicate_charge_explanation: null,
    duplicate_charge_id: null,
    enhanced_evidence: {},
    product_description: null,
    receipt: null,
    refund_policy: null,
    refund_policy_disclosure: null,
    refund_refusal_explanation: null,
    service_date: null,
    service_documentation: null,
    shipping_address: null,
    shipping_carrier: null,
    shipping_date: null,
    shipping_documentation: null,
    shipping_tracking_number: null,
    uncategorized_file: null,
    uncategorized_text: null,
  };
}

function balanceTransaction(
  store: PayprocStore,
  dispute: { id: string; currency: string },
  amount: number,
  fee: number,
  description: string,
  category: "dispute" | "dispute_reversal",
): Wire<Stripe.BalanceTransaction> {
  const now = store.now();
  return {
    id: store.newId("txn_"),
    object: "balance_transaction",
    amount,
    available_on: now,
    balance_type: "payments",
    created: now,
    currency: dispute.currency,
    description,
    exchange_rate: null,
    fee,
    fee_details: fee === 0 ? [] : [{
      amount: fee,
      application: null,
      currency: dispute.currency,
      description: "Dispute fee",
      type: "stripe_fee",
    }],
    net: amount - fee,
    reporting_category: category,
    source: dispute.id,
    status: "available",
    type: "adjustment",
  };
}

/**
 * Opens a dispute on a captured charge as the cardholder's bank would:
 * `needs_response`, the captured amount withdrawn with the dispute fee (one
 * balance transaction), and `charge.disputed` set. Throws (a test mistake)
 * for an uncaptured or already disputed charge.
 */
export function createDispute(
  store: PayprocStore,
  chargeId: string,
  options: DisputeOptions = {},
): PayprocDispute {
  const charge = store.require("charge", chargeId);
  if (!charge.captured || charge.amount_captured === 0) {
    throw new Error(`charge ${chargeId} was not captured, so it cannot be disputed`);
  }
  if (charge.disputed) throw new Error(`charge ${chargeId} is already disputed`);
  const now = store.now();
  const id = store.newId("dp_");
  const amount = charge.amount_captured;
  charge.disputed = true;
  return store.put("dispute", {
    id,
    object: "dispute",
    amount,
    balance_transactions: [
      balanceTransaction(
        store,
        { id, currency: charge.currency },
        -amount,
        DISPUTE_FEE,
        `Chargeback withdrawal for ${charge.id}`,
        "dispute",
      ),
    ],
    charge: charge.id,
    created: now,
    currency: charge.currency,
    enhanced_eligibility_types: [],
    evidence: emptyEvidence(),
    evidence_details: {
      due_by: now + RESPONSE_DAYS * 86_400,
      enhanced_eligibility: {},
      has_evidence: false,
      past_due: false,
      submission_count: 0,
      submission_method: "not_submitted",
    },
    intended_submission_method: null,
    is_charge_refundable: false,
    livemode: false,
    metadata: {},
    network_reason_code: null,
    payment_intent: typeof charge.payment_intent === "string"
      ? charge.payment_intent
      : charge.payment_intent?.id ?? null,
    payment_method_details: {
      card: { brand: "visa", case_type: "chargeback", network: "visa", network_reason_code: null },
      type: "card",
    },
    reason: options.reason ?? "fraudulent",
    status: "needs_response",
  });
}

/**
 * Decides a dispute as the bank would: `won` returns the disputed amount
 * (a `dispute_reversal` balance transaction), `lost` keeps it withdrawn.
 */
export function decideDispute(
  store: PayprocStore,
  dispute: PayprocDispute,
  outcome: DisputeOutcome,
): PayprocDispute {
  if (outcome === "won" && dispute.status !== "won") {
    dispute.balance_transactions.push(
      balanceTransaction(
        store,
        dispute,
        dispute.amount,
        0,
        `Chargeback reversal for ${chargeId(dispute)}`,
        "dispute_reversal",
      ),
    );
  }
  dispute.status = outcome;
  dispute.evidence_details.due_by = null;
  return dispute;
}

function chargeId(dispute: PayprocDispute): string {
  return typeof dispute.charge === "string" ? dispute.charge : dispute.charge.id;
}

function updateDispute(
  dispute: PayprocDispute,
  params: FormObject,
): PayprocDispute {
  const evidence = optObject(params, "evidence");
  const submit = optBool(params, "submit");
  const method = optString(params, "intended_submission_method");
  if ((evidence !== undefined || submit) && CLOSED.includes(dispute.status)) {
    throw invalidRequest(
      `This dispute is already closed (status: ${dispute.status}); its evidence can no longer be changed.`,
    );
  }
  if (method !== undefined) {
    dispute.intended_submission_method = requireOneOf(
      method,
      ["manual", "prefer_manual", "prefer_smart_disputes", "smart_disputes"] as const,
      "intended_submission_method",
    );
  }
  // The evidence's content is accepted but not kept; only that some was given.
  if (evidence !== undefined && Object.keys(evidence).length > 0) {
    dispute.evidence_details.has_evidence = true;
  }
  if (submit) {
    if (dispute.status === "needs_response") dispute.status = "under_review";
    if (dispute.status === "warning_needs_response") dispute.status = "warning_under_review";
    dispute.evidence_details.submission_count += 1;
    dispute.evidence_details.submission_method = "manual";
  }
  dispute.metadata = applyMetadata(dispute.metadata, params);
  return dispute;
}

/** The dispute endpoints. */
export const disputeRoutes: Route[] = [
  route("GET", "/v1/disputes", [
    "charge",
    "created",
    "ending_before",
    "limit",
    "payment_intent",
    "starting_after",
  ], ({ store, params }) => {
    const charge = optString(params, "charge");
    const pi = optString(params, "payment_intent");
    const found = filterCreated(store.all("dispute"), params).filter((d) =>
      (charge === undefined || d.charge === charge) &&
      (pi === undefined || d.payment_intent === pi)
    );
    return listPage(found, params, "/v1/disputes");
  }),
  route("GET", "/v1/disputes/:id", [], ({ store, path }) => store.require("dispute", path.id)),
  route(
    "POST",
    "/v1/disputes/:id",
    ["evidence", "intended_submission_method", "metadata", "submit"],
    ({ store, path, params }) => updateDispute(store.require("dispute", path.id), params),
  ),
  route("POST", "/v1/disputes/:id/close", [], ({ store, path }) => {
    const dispute = store.require("dispute", path.id);
    if (dispute.status === "warning_needs_response") {
      dispute.status = "warning_closed";
      return dispute;
    }
    if (dispute.status !== "needs_response") {
      throw invalidRequest(
        `This dispute cannot be closed because it has a status of ${dispute.status}. Only disputes with a status of needs_response or warning_needs_response can be closed.`,
      );
    }
    // Accepting a dispute concedes it: the API marks it lost.
    return decideDispute(store, dispute, "lost");
  }),
];
