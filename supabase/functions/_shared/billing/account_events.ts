/**
 * Webhook handler of `account.updated`: the connected account is re-read
 * under its lock and its KYC and payout status written to `connect_accounts`
 * and the seller's profile.
 *
 * @module
 */
import type Stripe from "stripe";
import { applyConnectAccount } from "./connect_accounts.ts";
import { orNullIfMissing } from "./processor.ts";
import {
  applied,
  type EventOf,
  skipped,
  type WebhookArgs,
  type WebhookHandlers,
  type WebhookResult,
} from "./webhook_types.ts";

async function onAccountUpdated(
  { event, sql, ctx }: WebhookArgs<EventOf<"account.updated">>,
): Promise<WebhookResult> {
  const payload: Stripe.Account = event.data.object;
  const readAt = new Date();
  const current = await orNullIfMissing(ctx.payproc.accounts.retrieve(payload.id));
  const result = await applyConnectAccount(sql, current ?? payload, {
    readAt: current ? readAt : null,
    eventCreated: event.created,
  });
  if ("reason" in result) return skipped(`${result.result}: ${result.reason}`);
  return result.result === "changed" ? applied() : applied("already up to date");
}

/** Handlers of connected-account events. */
export const ACCOUNT_EVENT_HANDLERS: WebhookHandlers = {
  "account.updated": onAccountUpdated,
};
