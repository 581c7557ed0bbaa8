/**
 * Telling one user about their pending price-alert events, in one
 * transaction: claim the user's events not yet handed to a channel (`for
 * update skip locked`, so a second writer passes them by), write one notice
 * through the notifications module (type `price_alerts`; in-app when any
 * claimed event is `in_app`, an e-mail of type `price_alert` when any is
 * `email`), and move the events on:
 *
 * - `in_app`: `sent` (notice written, or written before under the same key)
 *   or `suppressed` (the user's preference);
 * - `email`: stays `pending` with its `email_log_id` until the outbox has
 *   delivered it (reconciled from `email_logs`), or `suppressed` when the
 *   user has no address;
 * - events whose alert was switched off or whose listing is no longer on sale
 *   since they matched: `suppressed`, not told;
 * - events whose price is hidden from the user now (their plan or the blur
 *   policy changed since the match, or the listing became confidential and
 *   they have no approved access; the rule the matcher asks `can_view_field`,
 *   read here per event through `listing_visibility()`): `suppressed`, not
 *   told — a notice never carries a value hidden from its recipient.
 *
 * The notice's key is the first claimed event's id: the same claim written
 * again (a retried transaction) is the same notice, a later claim a new one.
 *
 * @module
 */
import type { Context } from "../platform/context.ts";
import type { Sql } from "../platform/db.ts";
import { type PriceAlertMatch, priceAlertNotice } from "../email/templates/price_alerts.ts";
import { queueNotice } from "../notifications/notify.ts";

/** A claimed event with what its notice shows. */
interface ClaimedEvent {
  id: string;
  channel: "email" | "in_app";
  listing_id: string;
  price: string;
  currency: string;
  title: string;
  /** The alert is active and the listing approved and not the user's own. */
  live: boolean;
  /**
   * The asking price of a live event's listing is visible to the user: not
   * among the fields `listing_visibility()` hides from them (their plan's,
   * and a confidential listing's without approved access), which is what
   * `can_view_field` answers (false for an event that is not live).
   */
  price_visible: boolean;
  /** Null for a saved search. */
  target_price: string | null;
  category: string | null;
  max_price: string | null;
}

/** What telling one user did to their events. */
export interface UserDelivery {
  /** Whether a notice was written (false: nothing was left to tell). */
  notified: boolean;
  /** Events moved to `sent` (in-app). */
  sent: number;
  /** Events moved to `suppressed`. */
  suppressed: number;
}

const NOT_LIVE = "The alert was switched off or the listing is no longer on sale";
const PRICE_HIDDEN =
  "The listing's asking price is hidden from the user (their plan, or a confidential listing without approved access)";
const NO_ADDRESS = "The user has no e-mail address";
const IN_APP_OFF = 'The user switched off in-app notices of type "price_alerts"';

/** Claims `userId`'s events that no channel has yet: oldest first, then cheapest. */
async function claimEvents(sql: Sql, userId: string): Promise<ClaimedEvent[]> {
  return await sql.query<ClaimedEvent>(
    `select e.id, e.channel, e.listing_id, e.price::text as price, e.currency, l.title,
            a.active and l.review_status = 'approved' and l.seller_id <> e.user_id as live,
            coalesce(not ('asking_price' = any (seen.hidden_fields)), false) as price_visible,
            a.target_price::text as target_price, a.category, a.max_price::text as max_price
     from public.price_alert_events e
     join public.price_alerts a on a.id = e.alert_id
     join public.listings l on l.id = e.listing_id
     cross join lateral public.listing_visibility(e.listing_id, $1) seen
     where e.user_id = $1 and e.status = 'pending' and e.email_log_id is null
     order by e.created_at, e.price, e.id
     for update of e skip locked`,
    [userId],
  );
}

/** The listing of `event` as the notice shows it. */
function matchOf(event: ClaimedEvent): PriceAlertMatch {
  return {
    listingId: event.listing_id,
    title: event.title,
    price: event.price,
    currency: event.currency,
    alert: event.target_price !== null
      ? { kind: "listing", targetPrice: event.target_price }
      : { kind: "search", category: event.category ?? "", maxPrice: event.max_price ?? "0" },
  };
}

/** Sets `ids` to `status` (with `error`), or to `sent` with their notice. */
async function settle(
  sql: Sql,
  ids: string[],
  change: { status: "sent"; notificationId: string } | {
    status: "suppressed";
    error: string;
  },
): Promise<number> {
  if (ids.length === 0) return 0;
  await sql.query(
    `update public.price_alert_events
     set status = $2, notification_id = $3, error_message = $4
     where id = any($1::uuid[])`,
    [
      ids,
      change.status,
      change.status === "sent" ? change.notificationId : null,
      change.status === "suppressed" ? change.error : null,
    ],
  );
  return ids.length;
}

/**
 * Tells `userId` about their pending events in one transaction (see the
 * module doc); its e-mail waits in `ctx.outbox`.
 */
export async function notifyUser(ctx: Context, userId: string): Promise<UserDelivery> {
  return await ctx.db.tx(async (sql) => {
    const out: UserDelivery = { notified: false, sent: 0, suppressed: 0 };
    const events = await claimEvents(sql, userId);
    const first = events[0];
    if (!first) return out;
    out.suppressed += await settle(sql, events.filter((e) => !e.live).map((e) => e.id), {
      status: "suppressed",
      error: NOT_LIVE,
    });
    const hidden = events.filter((e) => e.live && !e.price_visible);
    out.suppressed += await settle(sql, hidden.map((e) => e.id), {
      status: "suppressed",
      error: PRICE_HIDDEN,
    });
    const told = events.filter((e) => e.live && e.price_visible);
    const inApp = told.filter((e) => e.channel === "in_app");
    const email = told.filter((e) => e.channel === "email");
    if (inApp.length === 0 && email.length === 0) return out;

    const inAppNotice = priceAlertNotice(inApp.map(matchOf));
    const emailNotice = priceAlertNotice(email.map(matchOf));
    const shown = inApp.length > 0 ? inAppNotice : emailNotice;
    const outcome = await queueNotice(ctx, sql, {
      userId,
      type: "price_alerts",
      title: shown.title,
      body: shown.body,
      link: shown.link,
      data: { listingIds: shown.listingIds, total: shown.total },
      key: `price_alerts:${first.id}`,
      inApp: inApp.length > 0,
      email: email.length > 0
        ? { emailType: "price_alert", content: emailNotice.email }
        : undefined,
    });
    out.notified = true;

    const inAppIds = inApp.map((e) => e.id);
    if (outcome.notificationId !== null) {
      out.sent += await settle(sql, inAppIds, {
        status: "sent",
        notificationId: outcome.notificationId,
      });
    } else {
      out.suppressed += await settle(sql, inAppIds, { status: "suppressed", error: IN_APP_OFF });
    }

    const emailIds = email.map((e) => e.id);
    if (outcome.email === null) {
      out.suppressed += await settle(sql, emailIds, { status: "suppressed", error: NO_ADDRESS });
    } else if (emailIds.length > 0) {
      // The e-mail's status (suppressed now, or sent/failed after the flush)
      // reaches these events through reconcile_price_alert_emails().
      await sql.query(
        "update public.price_alert_events set email_log_id = $2 where id = any($1::uuid[])",
        [emailIds, outcome.email.id],
      );
    }
    return out;
  });
}
