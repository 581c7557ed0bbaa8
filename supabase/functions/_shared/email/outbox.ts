/**
 * A request's outbox: e-mails written inside its transactions, delivered
 * once the handler is done (the factory flushes it, whatever the handler
 * answered). A message whose transaction rolled back is simply not there;
 * one the process never got to is picked up by the retry sub-job.
 *
 * @module
 */
import type { Context } from "../context.ts";
import { HttpError } from "../errors.ts";
import type { EmailOutcome } from "./send.ts";

/** E-mails queued by one request. */
export class Outbox {
  readonly #ids: string[] = [];

  /** Creates the outbox of `ctx`'s request. */
  constructor(private readonly ctx: Context) {}

  /** Queues written message `id`. */
  add(id: string): void {
    if (!this.#ids.includes(id)) this.#ids.push(id);
  }

  /** How many messages wait. */
  get size(): number {
    return this.#ids.length;
  }

  /**
   * Makes one attempt at each queued message, a few at a time, and empties
   * the outbox. A message that fails stays due for the retry sub-job; an
   * unexpected error is logged, never thrown.
   */
  async flush(concurrency = 4): Promise<Map<string, EmailOutcome>> {
    const ids = this.#ids.splice(0);
    const outcomes = new Map<string, EmailOutcome>();
    if (ids.length === 0) return outcomes;
    // Loaded here, not with the context: a request that queues nothing
    // (most of them) never loads the sender.
    const { deliverEmail } = await import("./send.ts");
    let next = 0;
    const worker = async () => {
      while (next < ids.length) {
        const id = ids[next++]!;
        try {
          outcomes.set(id, await deliverEmail(this.ctx, id));
        } catch (error) {
          // Its transaction rolled back: there is nothing to deliver.
          if (error instanceof HttpError && error.status === 404) continue;
          this.ctx.log.error("cannot deliver a queued e-mail; the retry sub-job will", {
            email_log_id: id,
            error: String(error),
          });
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, ids.length) }, worker));
    return outcomes;
  }
}
