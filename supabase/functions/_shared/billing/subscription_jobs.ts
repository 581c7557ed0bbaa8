/**
 * The subscription sync of payproc-sync (live subscriptions, hourly) and
 * daily-subscription-sync (all of them): expire grants, page through the
 * processor's subscriptions into our rows, then re-read rows we mirror as
 * live that the listing did not show.
 *
 * @module
 */
import type { Context } from "../context.ts";
import type { Sql } from "../db.ts";
import { expireGrants } from "./grants.ts";
import type { JobTally } from "./job_guard.ts";
import { lockProcessorObject } from "./locks.ts";
import { orNullIfMissing } from "./processor.ts";
import { forEachSubscriptionPage, type SubscriptionScope } from "./subscription_pages.ts";
import { ENDED_STATUSES } from "./subscription_state.ts";
import { type SyncResult, syncSubscription } from "./subscription_sync.ts";

/** Brings `public.subscriptions` in line with the processor; counts go to `tally`. */
export async function syncSubscriptions(
  ctx: Context,
  tally: JobTally,
  scope: SubscriptionScope,
): Promise<void> {
  const expired = await expireGrants(ctx.db);
  tally.count("grants_expired", expired.length);
  tally.changed += expired.length;

  const seen = new Set<string>();
  await forEachSubscriptionPage(ctx, scope, async (subscriptions, readAt) => {
    for (const subscription of subscriptions) {
      seen.add(subscription.id);
      tally.scanned++;
      const result = await tally.attempt(
        subscription.id,
        () => ctx.db.tx((sql) => syncSubscription(ctx, sql, subscription, { readAt })),
      );
      if (result) record(tally, result);
    }
  });

  const mirrored = await ctx.db.query<{ payproc_subscription_id: string }>(
    `select payproc_subscription_id from public.subscriptions
     where payproc_subscription_id is not null and subscription_status <> all($1::text[])`,
    [ENDED_STATUSES],
  );
  for (const { payproc_subscription_id: id } of mirrored) {
    if (seen.has(id)) continue;
    tally.scanned++;
    await tally.attempt(id, async () => {
      const readAt = new Date();
      const subscription = await orNullIfMissing(ctx.payproc.subscriptions.retrieve(id));
      await ctx.db.tx(async (sql) => {
        if (subscription) {
          record(tally, await syncSubscription(ctx, sql, subscription, { readAt }));
        } else if (await markGone(sql, id)) {
          tally.changed++;
          tally.count("gone");
        }
      });
    });
  }
}

/** Ends the row of a subscription the processor no longer has. */
export async function markGone(sql: Sql, subscriptionId: string): Promise<boolean> {
  await lockProcessorObject(sql, subscriptionId);
  const row = await sql.maybeOne(
    `update public.subscriptions set subscription_status = 'canceled'
     where payproc_subscription_id = $1 and subscription_status <> 'canceled'
     returning id`,
    [subscriptionId],
  );
  return row !== null;
}

function record(tally: JobTally, outcome: SyncResult): void {
  if (outcome.result === "changed") tally.changed++;
  else tally.count(outcome.result);
}
