/**
 * Applying a verified event exactly once: the event is recorded in
 * `payproc_events` and its handler runs in one transaction. A repeated
 * delivery finds the row and changes nothing; concurrent deliveries block on
 * the primary key until the first commits, then no-op; a failing handler
 * rolls back the record with its effects, so the processor's retry redoes it.
 * The same statement takes the advisory lock of the object the event is about
 * (`data.object.id`), so events about one object are applied one at a time.
 *
 * @module
 */
import type Stripe from "stripe";
import type { Context } from "../context.ts";
import { objectLockKey } from "./locks.ts";
import { handlerFor, WEBHOOK_HANDLERS } from "./webhook_handlers.ts";
import { objectId, type WebhookHandlers, type WebhookResult } from "./webhook_types.ts";

/** What applying an event did. */
export type EventOutcome = WebhookResult | { outcome: "duplicate" };

/** Records and handles `event` once. */
export async function processEvent(
  ctx: Context,
  event: Stripe.Event,
  handlers: Readonly<WebhookHandlers> = WEBHOOK_HANDLERS,
): Promise<EventOutcome> {
  return await ctx.db.tx(async (sql) => {
    const recorded = await sql.maybeOne(
      `with recorded as (
         insert into public.payproc_events (id, type, created, account, livemode, api_version)
         values ($1, $2, to_timestamp($3), $4, $5, $6)
         on conflict (id) do nothing
         returning id
       )
       select id, pg_advisory_xact_lock(hashtextextended($7, 0)) from recorded`,
      [
        event.id,
        event.type,
        event.created,
        event.account ?? null,
        event.livemode === true,
        event.api_version ?? null,
        objectLockKey(objectId(event)),
      ],
    );
    if (!recorded) return { outcome: "duplicate" } as const;
    const handler = handlerFor(event.type, handlers);
    const result: WebhookResult = handler
      ? await handler({ event, sql, ctx })
      : { outcome: "ignored", detail: `no handler for "${event.type}"` };
    if (result.outcome !== "applied" || result.detail !== undefined) {
      await sql.query("update public.payproc_events set outcome = $2, detail = $3 where id = $1", [
        event.id,
        result.outcome,
        result.detail ?? null,
      ]);
    }
    return result;
  });
}
