/**
 * Transfers to connected accounts: create (destination must exist with an
 * active `transfers` capability; `source_transaction` must be a charge with
 * enough untransferred funds), retrieve, update, list.
 *
 * @module
 */
import { invalidRequest } from "../errors.ts";
import { filterCreated, listPage } from "../lists.ts";
import { applyMetadata, optString, reqInt, reqString } from "../params.ts";
import { type Route, route } from "../router.ts";
import type { PayprocStore } from "../store.ts";
import type { KindMap } from "../types.ts";
import type { FormObject } from "../../http_double.ts";

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
];
