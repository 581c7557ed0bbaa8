/**
 * Gathers concurrent calls into batches: a call made while fewer than
 * `concurrency` batches run starts a batch at once (alone, when nothing else
 * waits: no added latency); calls made while that many run wait together and
 * go as one batch (at most `maxSize`) when one ends. Under load this turns
 * many round trips into few, with no timer.
 *
 * `run` answers each item's outcome in order; a `run` that throws fails
 * every call of its batch with that error.
 *
 * @module
 */

/** The outcome of one item of a batch. */
export type ItemOutcome<O> = { ok: true; value: O } | { ok: false; error: unknown };

interface Waiting<I, O> {
  item: I;
  resolve(value: O): void;
  reject(error: unknown): void;
}

/** Batches concurrent calls to `run`. */
export class CallBatcher<I, O> {
  #waiting: Array<Waiting<I, O>> = [];
  #running = 0;

  /** `run(items)` does a batch's work; at most `concurrency` run at once, each of at most `maxSize` items. */
  constructor(
    private readonly run: (items: I[]) => Promise<Array<ItemOutcome<O>>>,
    private readonly options: { concurrency: number; maxSize: number },
  ) {
    if (options.concurrency < 1 || options.maxSize < 1) {
      throw new Error("Cannot batch calls: concurrency and maxSize must be at least 1");
    }
  }

  /** `item`'s outcome, from the batch it joined. */
  call(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.#waiting.push({ item, resolve, reject });
      this.#start();
    });
  }

  #start(): void {
    while (this.#running < this.options.concurrency && this.#waiting.length > 0) {
      const batch = this.#waiting.splice(0, this.options.maxSize);
      this.#running++;
      this.#settle(batch).finally(() => {
        this.#running--;
        this.#start();
      });
    }
  }

  async #settle(batch: Array<Waiting<I, O>>): Promise<void> {
    try {
      const outcomes = await this.run(batch.map((waiting) => waiting.item));
      batch.forEach((waiting, i) => {
        const outcome = outcomes[i];
        if (!outcome) {
          waiting.reject(new Error("Cannot finish the call: its batch gave no outcome"));
        } else if (outcome.ok) waiting.resolve(outcome.value);
        else waiting.reject(outcome.error);
      });
    } catch (error) {
      for (const waiting of batch) waiting.reject(error);
    }
  }
}
