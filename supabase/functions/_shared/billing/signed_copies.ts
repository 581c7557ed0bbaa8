/**
 * A subscription lifecycle event written from its own signed copy, with no
 * processor read, when that copy provably is the newest state
 * (`public.apply_subscription_event`; why that is safe in any delivery order
 * is in its migration, `20261128300000_signed_subscription_state.sql`).
 *
 * Copies that arrive while earlier ones are being written go to the database
 * together, in one call and one transaction
 * (`public.apply_subscription_events`, through a {@linkcode CallBatcher}):
 * a copy that arrives when the database is idle goes alone at once, and
 * under load many events cost one round trip and one commit. Each item is
 * judged, recorded and written as it would be alone. A batch that fails
 * writes nothing; its items are then written one by one, so one bad item
 * fails alone.
 *
 * @module
 */
import type Stripe from "stripe";
import { CallBatcher, type ItemOutcome } from "../lib/call_batcher.ts";
import type { Context } from "../platform/context.ts";
import type { Db } from "../platform/db.ts";
import { PAYPROC_API_VERSION } from "../platform/payproc.ts";
import type { Runtime } from "../platform/runtime.ts";
import { ledgerFields } from "../payproc_webhook/ledger.ts";
import { applied, type EventOutcome, type LedgerEntry } from "../payproc_webhook/types.ts";
import { ourPlans } from "./plan_prices.ts";
import { mirroredObject } from "./subscription_rows.ts";
import { subscriptionState } from "./subscription_state.ts";

/** One event's copy: the mirrored values of its subscription and its ledger fields. */
export interface SignedCopy {
  mirror: Record<string, unknown>;
  event: Record<string, unknown>;
}

/** What the database made of a copy. */
export interface Applied {
  outcome: "applied" | "duplicate" | "unproven";
  detail: string | null;
}

/** Batches at once (half the default pool: other requests keep connections). */
const CONCURRENCY = 2;
/** Items per batch, at most (`public.apply_subscription_events` takes 100). */
const MAX_BATCH = 100;

const APPLY_ONE =
  "select outcome, detail from public.apply_subscription_event($1::jsonb, $2::jsonb, $3::timestamptz)";
const APPLY_MANY =
  "select item, outcome, detail from public.apply_subscription_events($1::jsonb, $2::timestamptz)";

async function applyOne(db: Db, copy: SignedCopy): Promise<Applied> {
  return await db.one<Applied>(APPLY_ONE, [
    JSON.stringify(copy.mirror),
    JSON.stringify(copy.event),
    new Date(),
  ]);
}

/** Writes `copies` in one call; one by one when that call fails (so a bad item fails alone). */
export async function applyCopies(
  db: Db,
  copies: SignedCopy[],
): Promise<Array<ItemOutcome<Applied>>> {
  if (copies.length === 1) return [{ ok: true, value: await applyOne(db, copies[0]!) }];
  let rows: Array<Applied & { item: number }>;
  try {
    rows = await db.query<Applied & { item: number }>(APPLY_MANY, [
      JSON.stringify(copies),
      new Date(),
    ]);
  } catch {
    return await Promise.all(copies.map(async (copy): Promise<ItemOutcome<Applied>> => {
      try {
        return { ok: true, value: await applyOne(db, copy) };
      } catch (error) {
        return { ok: false, error };
      }
    }));
  }
  const outcomes: Array<ItemOutcome<Applied>> = copies.map(() => ({
    ok: false,
    error: new Error("Cannot apply the event: its batch did not answer for it"),
  }));
  for (const { item, outcome, detail } of rows) {
    outcomes[item - 1] = { ok: true, value: { outcome, detail } };
  }
  return outcomes;
}

/** The runtime's batcher of copies (one per isolate). */
function batcherOf(runtime: Runtime): CallBatcher<SignedCopy, Applied> {
  return runtime.cache(
    "signed-subscription-copies",
    () =>
      new CallBatcher<SignedCopy, Applied>(
        (copies) => applyCopies(runtime.database, copies),
        { concurrency: CONCURRENCY, maxSize: MAX_BATCH },
      ),
  );
}

/**
 * Applies a lifecycle event from its own copy when that provably is the
 * newest state; null when it cannot be proved (then the handler re-reads).
 * Only a copy in the API version our reads use is taken (another version
 * may place fields elsewhere).
 */
export async function applySignedCopy(
  entry: LedgerEntry,
  ctx: Context,
): Promise<EventOutcome | null> {
  const { event } = entry;
  const subscription = event.data.object as Partial<Stripe.Subscription>;
  if (
    event.api_version !== PAYPROC_API_VERSION || subscription.object !== "subscription" ||
    !Array.isArray(subscription.items?.data) || typeof subscription.customer !== "string"
  ) return null;
  const state = subscriptionState(subscription as Stripe.Subscription, await ourPlans(ctx));
  const result = await batcherOf(ctx.runtime).call({
    mirror: mirroredObject(state),
    event: ledgerFields(entry),
  });
  switch (result.outcome) {
    case "unproven":
      return null;
    case "duplicate":
      return { outcome: "duplicate" };
    case "applied":
      return applied(result.detail ?? undefined);
  }
}
