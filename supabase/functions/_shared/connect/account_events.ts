/**
 * Webhook handler of `account.updated` (Connect endpoint only): the
 * connected account named by the event is re-read from the processor and
 * its KYC and payout status written to `connect_accounts` and the seller's
 * profile. The event's copy is never written.
 *
 * @module
 */
import type Stripe from "stripe";
import { applyConnectAccount } from "./connect_accounts.ts";
import { orNullIfMissing } from "../platform/payproc_calls.ts";
import {
  applied,
  type EventOf,
  skipped,
  type WebhookHandler,
  type WebhookHandlers,
} from "../payproc_webhook/types.ts";
import { payprocFor } from "../platform/payproc.ts";

/** What the event found: the account now, when it is the event's own and still exists. */
type AccountRead = { account: Stripe.Account; readAt: Date } | { refusal: string };

const onAccountUpdated: WebhookHandler<EventOf<"account.updated">, AccountRead> = {
  async read({ event, ctx }) {
    const accountId = event.account;
    if (!accountId || event.data.object.id !== accountId) {
      return { refusal: "the event is not about its own connected account" };
    }
    const payproc = await payprocFor(ctx);
    const readAt = new Date();
    const account = await orNullIfMissing(payproc.accounts.retrieve(accountId));
    if (!account) return { refusal: `account "${accountId}" does not exist at the processor` };
    return { account, readAt };
  },
  async write({ event, sql, read, ctx }) {
    if ("refusal" in read) return skipped(read.refusal);
    const result = await applyConnectAccount(sql, read.account, {
      readAt: read.readAt,
      eventCreated: event.created,
      notify: ctx,
    });
    if ("reason" in result) return skipped(`${result.result}: ${result.reason}`);
    return result.result === "changed" ? applied() : applied("already up to date");
  },
};

/** Handlers of connected-account events. */
export const ACCOUNT_EVENT_HANDLERS: WebhookHandlers = {
  "account.updated": onAccountUpdated,
};
