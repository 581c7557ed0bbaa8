/**
 * Paging through the processor's subscriptions, each page with the time it
 * was read (so writes from it can be ordered against fresher reads).
 *
 * @module
 */
import type Stripe from "stripe";
import type { Context } from "../platform/context.ts";
import { payprocFor } from "../platform/payproc.ts";

/** Which subscriptions to page through: not ended (the API's default) or all. */
export type SubscriptionScope = "live" | "all";

/** Calls `fn` with each page of subscriptions (customers expanded) and its read time. */
export async function forEachSubscriptionPage(
  ctx: Context,
  scope: SubscriptionScope,
  fn: (subscriptions: Stripe.Subscription[], readAt: Date) => Promise<void>,
): Promise<void> {
  const payproc = await payprocFor(ctx);
  let startingAfter: string | undefined;
  do {
    const readAt = new Date();
    const page = await payproc.subscriptions.list({
      limit: 100,
      expand: ["data.customer"],
      ...(scope === "all" ? { status: "all" as const } : {}),
      ...(startingAfter ? { starting_after: startingAfter } : {}),
    });
    await fn(page.data, readAt);
    startingAfter = page.has_more ? page.data.at(-1)?.id : undefined;
  } while (startingAfter !== undefined);
}
