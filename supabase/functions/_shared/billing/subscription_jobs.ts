/**
 * The subscription sync of payproc-sync (live subscriptions, hourly) and
 * daily-subscription-sync (all of them): expire grants, page through the
 * processor's subscriptions into our rows, then re-read rows we mirror as
 * live that the listing did not show. Each page is read before anything is
 * written; each write is its own short statement or transaction.
 *
 * @module
 */
import type { Context } from "../platform/context.ts";
import type { JobTally } from "../platform/jobs/tally.ts";
import { expireGrants } from "./grants.ts";
import { markGone } from "./subscription_gone.ts";
import { forEachSubscriptionPage, type SubscriptionScope } from "./subscription_pages.ts";
import { ENDED_STATUSES } from "./subscription_state.ts";
import { readSubscription, type SyncResult, syncSubscription } from "./subscription_sync.ts";

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
        () => syncSubscription(ctx, subscription, { readAt }),
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
      const current = await readSubscription(ctx, id);
      if (current) {
        record(tally, await syncSubscription(ctx, current.subscription, current));
      } else if (await ctx.db.tx((sql) => markGone(sql, id))) {
        tally.changed++;
        tally.count("gone");
      }
    });
  }
}

function record(tally: JobTally, outcome: SyncResult): void {
  if (outcome.result === "changed") tally.changed++;
  else tally.count(outcome.result);
}
