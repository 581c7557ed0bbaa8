/**
 * What a job run counts while it works: items scanned and changed, named
 * counts, and the items that failed (each with its client-safe error).
 *
 * @module
 */
import type { z } from "zod";
import type { JobFailure } from "../../../../../shared/job_schemas.ts";
import { toHttpError } from "../to_http_error.ts";

/** One failed item. */
export type JobFailureItem = z.infer<typeof JobFailure>;

/** Counts and failures of a run, filled in by the job's work. */
export class JobTally {
  /** Items looked at. */
  scanned = 0;
  /** Items whose stored state changed. */
  changed = 0;
  /** Further counts by name (e.g. `unlinked`, `grants_expired`). */
  readonly counts: Record<string, number> = {};
  /** Failed items. */
  readonly failures: JobFailureItem[] = [];
  /** Ids of the items a run changed, by what it did to them (e.g. `activated`). */
  readonly items: Record<string, string[]> = {};

  /** Adds `n` to the count `name`. */
  count(name: string, n = 1): void {
    this.counts[name] = (this.counts[name] ?? 0) + n;
  }

  /** Lists `id` under `name` in the answer's `items` and counts it there (not in `changed`). */
  list(name: string, id: string): void {
    (this.items[name] ??= []).push(id);
    this.count(name);
  }

  /** Records a failed item; the message is the client-safe one of our error model. */
  fail(item: string, error: unknown): void {
    const httpError = toHttpError(error);
    this.failures.push({ item, code: httpError.code, message: httpError.message });
  }

  /** Runs `work` for `item`, recording a failure instead of throwing. */
  async attempt<T>(item: string, work: () => Promise<T>): Promise<T | undefined> {
    try {
      return await work();
    } catch (error) {
      this.fail(item, error);
      return undefined;
    }
  }
}
