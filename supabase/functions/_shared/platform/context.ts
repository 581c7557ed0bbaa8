/**
 * What a handler receives as `ctx`: dependencies for one request.
 *
 * @module
 */
import type { Db } from "./db.ts";
import { Outbox } from "./outbox.ts";
import type { Env } from "./env.ts";
import type { Logger } from "./log.ts";
import type { Runtime } from "./runtime.ts";

/** Per-request dependencies; each is built on first use, so unused ones cost nothing. */
export class Context {
  #outbox?: Outbox;
  readonly #afterwards: Array<() => Promise<unknown>> = [];

  /** Creates the context of one request. */
  constructor(
    readonly runtime: Runtime,
    /** The request id, also sent as `X-Request-Id`. */
    readonly requestId: string,
    /** A logger bound to the function and request id. */
    readonly log: Logger,
  ) {}

  /** Validated configuration. */
  get env(): Env {
    return this.runtime.env;
  }

  /** The database (service connection; `asUser` for RLS). */
  get db(): Db {
    return this.runtime.database;
  }

  /** The current time by the runtime's clock (jobs and deadlines use it; tests inject it). */
  now(): Date {
    return this.runtime.now();
  }

  /** Deliveries (e-mails) written in this request's transactions, made after the handler. */
  get outbox(): Outbox {
    this.#outbox ??= new Outbox(this.log);
    return this.#outbox;
  }

  /**
   * Runs `task` once the handler is done (answered or failed), before the
   * outbox is delivered: for processor calls that follow a committed
   * transaction (e.g. refunding a stray payment the webhook just recorded).
   * A task re-reads what it acts on, since the transaction that queued it may
   * have rolled back; its failure is logged, never thrown, and whatever it
   * leaves undone is a job's to finish.
   */
  afterwards(task: () => Promise<unknown>): void {
    this.#afterwards.push(task);
  }

  /** Finishes what the request left for after its handler: queued tasks, then the outbox. */
  async settle(): Promise<void> {
    if (this.#afterwards.length > 0) await this.#runAfterwards();
    if (this.#outbox && this.#outbox.size > 0) await this.#outbox.flush();
  }

  async #runAfterwards(): Promise<void> {
    for (const task of this.#afterwards.splice(0)) {
      try {
        await task();
      } catch (error) {
        this.log.error("a task left for after the request failed; its job will retry it", {
          error: String(error),
        });
      }
    }
  }
}
