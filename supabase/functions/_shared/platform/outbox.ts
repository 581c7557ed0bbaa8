/**
 * A request's outbox: deliveries written inside its transactions (e-mails,
 * today) and made once the handler is done — the factory flushes it,
 * whatever the handler answered. The feature that queues a delivery hands
 * over how to make it, so this layer knows nothing of e-mail. A delivery
 * whose transaction rolled back finds nothing (404) and is skipped; one the
 * process never got to is its feature's retry job's to make.
 *
 * @module
 */
import type { Logger } from "./log.ts";
import { HttpError } from "./errors.ts";

/** Deliveries queued by one request, by the id of what they deliver. */
export class Outbox {
  readonly #queued = new Map<string, () => Promise<unknown>>();

  /** Creates the outbox of a request that logs with `log`. */
  constructor(private readonly log: Logger) {}

  /** Queues `deliver`, the delivery of written item `id` (once per id). */
  add(id: string, deliver: () => Promise<unknown>): void {
    if (!this.#queued.has(id)) this.#queued.set(id, deliver);
  }

  /** How many deliveries wait. */
  get size(): number {
    return this.#queued.size;
  }

  /**
   * Makes one attempt at each queued delivery, a few at a time, and empties
   * the outbox; answers each delivery's result by id. A delivery that fails
   * stays due for its feature's retry job; an unexpected error is logged,
   * never thrown.
   */
  async flush(concurrency = 4): Promise<Map<string, unknown>> {
    const queued = [...this.#queued];
    this.#queued.clear();
    const results = new Map<string, unknown>();
    let next = 0;
    const worker = async () => {
      while (next < queued.length) {
        const [id, deliver] = queued[next++]!;
        try {
          results.set(id, await deliver());
        } catch (error) {
          // Its transaction rolled back: there is nothing to deliver.
          if (error instanceof HttpError && error.status === 404) continue;
          this.log.error("cannot make a queued delivery; its retry job will", {
            delivery_id: id,
            error: String(error),
          });
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, queued.length) }, worker));
    return results;
  }
}
