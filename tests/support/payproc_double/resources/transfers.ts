/**
 * Transfers to connected accounts: create (destination must exist with an
 * active `transfers` capability; `source_transaction` must be a charge with
 * enough untransferred funds), retrieve, update, list; and their reversals
 * (create up to the unreversed amount, retrieve, update metadata, list).
 *
 * @module
 */
import { invalidRequest, resourceMissing } from "../errors.ts";
import { filterCreated, listPage } from "../lists.ts";
import { applyMetadata, optBool, optInt, optString, reqInt, reqString } from "../params.ts";
import { type Route, route } from "../router.ts";
import type { PayprocStore } from "../store.ts";
import type { KindMap, PayprocTransfer, PayprocTransferReversal } from "../types.ts";
import type { FormObject } from "../../http_double.ts";

/** How many reversals the transfer object embeds (newest first), as the API does. */
const EMBEDDED_REVERSALS = 10;

function checkSource(
  store: PayprocStore,
  chargeId: string,
  amount: number,
  currency: string,
): void {
  const charge = store.require("charge", chargeId, "source_transaction");
  if (charge.currency !== currency) {
    throw invalidRequest(
      `The currency of source_transaction's balance transaction (${charge.currency}) must be the same as the transfer currency (${currency}).`,
      "currency",
    );
  }
  const transferred = store.all("transfer")
    .filter((t) => t.source_transaction === chargeId)
    .reduce((sum, t) => sum + t.amount, 0);
  const available = charge.amount_captured - charge.amount_refunded - transferred;
  if (amount > available) {
    throw invalidRequest(
      `Insufficient funds in source_transaction ${chargeId}: ${available} available, ${amount} requested.`,
      "amount",
      "balance_insufficient",
    );
  }
}

function createTransfer(store: PayprocStore, params: FormObject): KindMap["transfer"] {
  const amount = reqInt(params, "amount");
  const currency = reqString(params, "currency").toLowerCase();
  const destinationId = reqString(params, "destination");
  const destination = store.get("account", destinationId);
  if (!destination) {
    throw invalidRequest(
      `No such destination: '${destinationId}'`,
      "destination",
      "resource_missing",
    );
  }
  const capabilities = (destination.capabilities ?? {}) as Record<string, string>;
  if (capabilities.transfers !== "active") {
    throw invalidRequest(
      "Your destination account needs to have at least one of the following capabilities enabled: transfers, crypto_transfers, legacy_payments",
      "destination",
      "insufficient_capabilities_for_transfer",
    );
  }
  const source = optString(params, "source_transaction");
  if (source) checkSource(store, source, amount, currency);
  const id = store.newId("tr_");
  return store.put("transfer", {
    id,
    object: "transfer",
    amount,
    amount_reversed: 0,
    balance_transaction: store.newId("txn_"),
    created: store.now(),
    currency,
    description: optString(params, "description") ?? null,
    destination: destination.id,
    destination_payment: store.newId("py_"),
    livemode: false,
    metadata: applyMetadata({}, params),
    reversals: { object: "list", data: [], has_more: false, url: `/v1/transfers/${id}/reversals` },
    reversed: false,
    source_transaction: source ?? null,
    source_type: "card",
    transfer_group: optString(params, "transfer_group") ?? null,
  });
}

function reversalsOf(store: PayprocStore, transferId: string): PayprocTransferReversal[] {
  return store.all("transfer_reversal").filter((r) => r.transfer === transferId);
}

/** What {@linkcode createReversal} reads: the endpoint's parameters. */
export interface NewReversal {
  /** Default: all that is not reversed yet. */
  amount?: number;
  metadata?: Record<string, string>;
}

/**
 * Reverses (part of) a transfer: a `trr_` reversal, `amount_reversed` grows,
 * the reversal heads `transfer.reversals`, and `reversed` turns true once
 * nothing is left. Refuses an already fully reversed transfer and amounts
 * over what is left.
 */
export function createReversal(
  store: PayprocStore,
  transfer: PayprocTransfer,
  input: NewReversal = {},
): PayprocTransferReversal {
  const remaining = transfer.amount - transfer.amount_reversed;
  if (remaining <= 0) {
    throw invalidRequest(`The transfer ${transfer.id} is already fully reversed.`);
  }
  const amount = input.amount ?? remaining;
  if (amount < 1) {
    throw invalidRequest("This value must be greater than or equal to 1.", "amount");
  }
  if (amount > remaining) {
    throw invalidRequest(
      `Transfer reversal amount (${amount}) is greater than unreversed amount on transfer (${remaining}).`,
      "amount",
    );
  }
  const reversal = store.put("transfer_reversal", {
    id: store.newId("trr_"),
    object: "transfer_reversal",
    amount,
    balance_transaction: store.newId("txn_"),
    created: store.now(),
    currency: transfer.currency,
    destination_payment_refund: store.newId("pyr_"),
    metadata: input.metadata ?? {},
    source_refund: null,
    transfer: transfer.id,
  });
  transfer.amount_reversed += amount;
  transfer.reversed = transfer.amount_reversed >= transfer.amount;
  const all = reversalsOf(store, transfer.id);
  transfer.reversals = {
    object: "list",
    data: all.slice(0, EMBEDDED_REVERSALS),
    has_more: all.length > EMBEDDED_REVERSALS,
    url: `/v1/transfers/${transfer.id}/reversals`,
  };
  return reversal;
}

function requireReversal(
  store: PayprocStore,
  transferId: string,
  reversalId: string,
): PayprocTransferReversal {
  const transfer = store.require("transfer", transferId);
  const reversal = store.get("transfer_reversal", reversalId);
  if (!reversal || reversal.transfer !== transfer.id) {
    throw resourceMissing("transfer_reversal", reversalId);
  }
  return reversal;
}

/** The transfer endpoints. */
export const transferRoutes: Route[] = [
  route(
    "POST",
    "/v1/transfers",
    [
      "amount",
      "currency",
      "description",
      "destination",
      "fx_quote",
      "metadata",
      "source_transaction",
      "source_type",
      "transfer_group",
    ],
    ({ store, params }) => createTransfer(store, params),
  ),
  route("GET", "/v1/transfers/:id", [], ({ store, path }) => store.require("transfer", path.id)),
  route("POST", "/v1/transfers/:id", ["description", "metadata"], ({ store, path, params }) => {
    const transfer = store.require("transfer", path.id);
    const description = optString(params, "description");
    if (description !== undefined) transfer.description = description || null;
    transfer.metadata = applyMetadata(transfer.metadata, params);
    return transfer;
  }),
  route("GET", "/v1/transfers", [
    "created",
    "destination",
    "ending_before",
    "limit",
    "starting_after",
    "transfer_group",
  ], ({ store, params }) => {
    const destination = optString(params, "destination");
    const group = optString(params, "transfer_group");
    const found = filterCreated(store.all("transfer"), params).filter((t) =>
      (destination === undefined || t.destination === destination) &&
      (group === undefined || t.transfer_group === group)
    );
    return listPage(found, params, "/v1/transfers");
  }),
  route(
    "POST",
    "/v1/transfers/:id/reversals",
    ["amount", "description", "metadata", "refund_application_fee"],
    ({ store, path, params }) => {
      const transfer = store.require("transfer", path.id);
      optString(params, "description"); // accepted; the reversal object has no description
      optBool(params, "refund_application_fee"); // no application fees in the double
      return createReversal(store, transfer, {
        amount: optInt(params, "amount"),
        metadata: applyMetadata({}, params),
      });
    },
  ),
  route(
    "GET",
    "/v1/transfers/:id/reversals",
    ["ending_before", "limit", "starting_after"],
    ({ store, path, params }) => {
      const transfer = store.require("transfer", path.id);
      return listPage(
        reversalsOf(store, transfer.id),
        params,
        `/v1/transfers/${transfer.id}/reversals`,
      );
    },
  ),
  route(
    "GET",
    "/v1/transfers/:id/reversals/:reversal",
    [],
    ({ store, path }) => requireReversal(store, path.id, path.reversal ?? ""),
  ),
  route(
    "POST",
    "/v1/transfers/:id/reversals/:reversal",
    ["metadata"],
    ({ store, path, params }) => {
      const reversal = requireReversal(store, path.id, path.reversal ?? "");
      reversal.metadata = applyMetadata(reversal.metadata ?? {}, params);
      return reversal;
    },
  ),
];
