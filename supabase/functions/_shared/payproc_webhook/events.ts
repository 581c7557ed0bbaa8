/**
 * Applying a verified event exactly once, without holding a database
 * connection across a processor call:
 *
 * 0. A handler that can may apply the event from its own signed copy, when
 *    that provably is the newest state (one database call, no read).
 * 1. The handler reads what the event is about from the processor.
 * 2. Its `quick` call may record and apply the event in one go (the common
 *    case: one database round trip per event); otherwise `complete` reads
 *    what the full write needs and one short transaction records the event
 *    and writes its effects.
 *
 * Either way the ledger row is written with the effects: an event recorded
 * before (a repeated or concurrent delivery) finds it and changes nothing
 * (`duplicate`), and a failure rolls back the record with its effects, so
 * the processor's retry redoes it. A repeat costs one processor read, which
 * keeps the common path at one database call.
 *
 * Ordering does not depend on delivery order: handlers write state re-read
 * from the processor, guarded by the time of the read, or an event's own
 * copy only when it is provably newer than what is stored.
 *
 * @module
 */
import type { Context } from "../platform/context.ts";
import type { Sql } from "../platform/db.ts";
import { HttpError } from "../platform/errors.ts";
import { RereadNeeded } from "../platform/payproc_calls.ts";
import { recordEvent, settleOutcome } from "./ledger.ts";
import type { EventOutcome, LedgerEntry, WebhookHandler, WebhookResult } from "./types.ts";
import type { Endpoint, VerifiedEvent } from "./verify.ts";

/** How often a write may send its handler back to read an object it met unread. */
const MAX_READS = 3;

/** Finds the handler of an event: `payproc-webhook`'s dispatch tables (tests pass their own). */
export type HandlerLookup = (endpoint: Endpoint, type: string) => WebhookHandler | undefined;

/** Records and handles a verified event once. */
export async function processEvent(
  ctx: Context,
  verified: VerifiedEvent,
  lookup: HandlerLookup,
): Promise<EventOutcome> {
  const entry: LedgerEntry = verified;
  const handler = lookup(entry.endpoint, entry.event.type);
  if (!handler) {
    return await inTransaction(ctx, entry, () =>
      Promise.resolve({
        outcome: "ignored" as const,
        detail: `no handler for "${entry.event.type}" on the ${entry.endpoint} endpoint`,
      }));
  }
  assertObjectId(entry);
  return await applyWith(ctx, entry, handler);
}

/**
 * 400 `invalid_input` unless the event's object has an id: every handler
 * re-reads its object from the processor by that id, and an empty one would
 * read the list endpoint instead (`GET /v1/disputes/`), whose answer no
 * handler expects — a 500 the processor would retry for days. Events no
 * handler takes (some objects have no id) are not checked.
 */
function assertObjectId({ event }: LedgerEntry): void {
  const id = (event.data.object as { id?: unknown }).id;
  if (typeof id !== "string" || id.trim() === "") {
    throw new HttpError(
      400,
      "invalid_input",
      `Cannot accept the webhook: the object of event "${event.id}" has no id`,
    );
  }
}

async function applyWith(
  ctx: Context,
  entry: LedgerEntry,
  handler: WebhookHandler,
): Promise<EventOutcome> {
  const { event } = entry;
  const signed = await handler.fromPayload?.({ entry, ctx });
  if (signed) return signed;
  let read = await handler.read({ event, ctx });
  const quick = await handler.quick?.({ entry, db: ctx.db, read });
  if (quick) return quick;
  let also: string[] = [];
  for (let attempt = 1;; attempt++) {
    if (handler.complete) read = await handler.complete({ ctx, read, also });
    try {
      return await inTransaction(ctx, entry, (sql) => handler.write({ event, sql, read, ctx }));
    } catch (error) {
      if (!(error instanceof RereadNeeded) || attempt >= MAX_READS) throw error;
      also = [...also, error.objectId];
    }
  }
}

/**
 * Records the event and runs `write` in one transaction; a duplicate changes
 * nothing. The ledger row is the transaction's first lock (a concurrent
 * delivery of the same event waits on it holding nothing, then finds it);
 * whatever `write` locks comes after it — for a deal, in the order of
 * `deals/deal_rows.ts`.
 */
function inTransaction(
  ctx: Context,
  entry: LedgerEntry,
  write: (sql: Sql) => Promise<WebhookResult>,
): Promise<EventOutcome> {
  return ctx.db.tx(async (sql) => {
    if (!(await recordEvent(sql, entry))) return { outcome: "duplicate" } as const;
    const result = await write(sql);
    await settleOutcome(sql, entry, result);
    return result;
  });
}
