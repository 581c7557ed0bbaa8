/**
 * Webhook handlers of subscription events (`customer.subscription.*`) and of
 * `checkout.session.completed` in subscription mode.
 *
 * A lifecycle event whose own copy provably carries the newest state — the
 * row already mirrors the subscription, and the event was created strictly
 * after the processor time the row is known current at — is recorded and
 * written from that copy, with no processor read (`signed_copies.ts`).
 * Every other event re-reads the subscription (and the checkout session)
 * from the processor before any transaction, so the newest state wins
 * whatever the delivery order: a subscription the processor does not have
 * is never mirrored, only a row already mirroring it is ended. The common re-read case — the row already mirrors the
 * subscription — records the event and writes the row in one call
 * (`public.mirror_subscription`).
 *
 * @module
 */
import type Stripe from "stripe";
import type { Context } from "../platform/context.ts";
import { orNullIfMissing } from "../platform/payproc_calls.ts";
import { markGone } from "./subscription_gone.ts";
import { idOf } from "./subscription_state.ts";
import { applySignedCopy } from "./signed_copies.ts";
import {
  MIRROR_IN_PLACE,
  mirrorArgs,
  type MirrorRow,
  readContenders,
  readForSync,
  readSubscription,
  settledBy,
  type SubscriptionRead,
  type SyncResult,
  writeSync,
} from "./subscription_sync.ts";
import { existingUserId } from "./users.ts";
import { ledgerJson } from "../payproc_webhook/ledger.ts";
import {
  applied,
  type EventOf,
  ignored,
  skipped,
  type WebhookHandler,
  type WebhookHandlers,
  type WebhookResult,
} from "../payproc_webhook/types.ts";
import { payprocFor } from "../platform/payproc.ts";

/** A sync result as an event outcome. */
export function asWebhookResult(result: SyncResult): WebhookResult {
  switch (result.result) {
    case "changed":
      return applied();
    case "unchanged":
      return applied("already up to date");
    default:
      return skipped(`${result.result}: ${result.reason}`);
  }
}

/** What a subscription event found at the processor. */
export type SubscriptionEventRead =
  | { kind: "current"; read: SubscriptionRead }
  | { kind: "gone"; subscriptionId: string }
  | { kind: "settled"; result: WebhookResult };

/** The subscription an event is about, and the user it must belong to, or why there is none. */
type Target = { subscriptionId: string; userId?: string } | WebhookResult;

function subscriptionHandler<E extends Stripe.Event>(
  target: (event: E, ctx: Context) => Promise<Target>,
  options: { signedCopy: boolean } = { signedCopy: false },
): WebhookHandler<E, SubscriptionEventRead> {
  return {
    ...(options.signedCopy && { fromPayload: ({ entry, ctx }) => applySignedCopy(entry, ctx) }),
    async read({ event, ctx }) {
      const found = await target(event, ctx);
      if ("outcome" in found) return { kind: "settled", result: found };
      const current = await readSubscription(ctx, found.subscriptionId);
      if (!current) return { kind: "gone", subscriptionId: found.subscriptionId };
      const read = await readForSync(ctx, current.subscription, {
        readAt: current.readAt,
        stateAt: current.stateAt,
        eventCreated: event.created,
        userId: found.userId,
      });
      return { kind: "current", read };
    },
    async quick({ entry, db, read }) {
      if (read.kind !== "current") return null;
      const row = await db.maybeOne<MirrorRow & { recorded: boolean }>(
        MIRROR_IN_PLACE,
        mirrorArgs(read.read, ledgerJson(entry)),
      );
      if (row === null || !row.matches) return null;
      if (!row.recorded) return { outcome: "duplicate" };
      // Recorded and matching: the row was locked, so the update ran exactly when it was due.
      return asWebhookResult(settledBy(row)!);
    },
    async complete({ ctx, read, also }) {
      if (read.kind !== "current") return read;
      return { kind: "current", read: await readContenders(ctx, read.read, also) };
    },
    async write({ sql, read }) {
      switch (read.kind) {
        case "settled":
          return read.result;
        case "gone":
          return await markGone(sql, read.subscriptionId)
            ? applied("the processor no longer has it; its row is ended")
            : skipped(`subscription "${read.subscriptionId}" does not exist at the processor`);
        case "current":
          return asWebhookResult(await writeSync(sql, read.read));
      }
    },
  };
}

type SubscriptionEventType =
  | "customer.subscription.created"
  | "customer.subscription.updated"
  | "customer.subscription.deleted"
  | "customer.subscription.paused"
  | "customer.subscription.resumed";

/** A lifecycle event is about its own object, whose copy it carries. */
const onSubscriptionEvent = subscriptionHandler<EventOf<SubscriptionEventType>>(
  (event) => Promise.resolve({ subscriptionId: event.data.object.id }),
  { signedCopy: true },
);

/** A completed checkout links its subscription to the user it was made for (re-read, not trusted). */
export const onSubscriptionCheckoutCompleted = subscriptionHandler<
  EventOf<"checkout.session.completed">
>(
  async (event, ctx) => {
    const payproc = await payprocFor(ctx);
    const session = await orNullIfMissing(
      payproc.checkout.sessions.retrieve(event.data.object.id),
    );
    if (!session) return skipped("the checkout session does not exist at the processor");
    if (session.mode !== "subscription") return ignored(`checkout in ${session.mode} mode`);
    if (!session.subscription) return skipped("the checkout has no subscription");
    const userId = await existingUserId(ctx.db, session.client_reference_id) ??
      await existingUserId(ctx.db, session.metadata?.user_id);
    if (userId === null) return skipped("the checkout names no existing user");
    return { subscriptionId: idOf(session.subscription), userId };
  },
);

/**
 * Handlers of subscription lifecycle events (`checkout.session.completed`
 * is dispatched by mode in `payproc-webhook/dispatch.ts`).
 */
export const SUBSCRIPTION_EVENT_HANDLERS: WebhookHandlers = {
  "customer.subscription.created": onSubscriptionEvent,
  "customer.subscription.updated": onSubscriptionEvent,
  "customer.subscription.deleted": onSubscriptionEvent,
  "customer.subscription.paused": onSubscriptionEvent,
  "customer.subscription.resumed": onSubscriptionEvent,
};
