/**
 * In-memory state of the payment-processor double: objects by kind in
 * creation order, id generation, the clock and idempotency records.
 *
 * @module
 */
import type Stripe from "stripe";
import type { FormObject } from "../http_double.ts";
import { resourceMissing } from "./errors.ts";
import type { Kind, KindMap, LinkKind, NewRefundStatus, StoredObject, Wire } from "./types.ts";

/** A response remembered for an `Idempotency-Key`. */
export interface IdempotentResponse {
  readonly method: string;
  readonly path: string;
  readonly bodyText: string;
  readonly status: number;
  readonly body: unknown;
  readonly requestId: string;
}

const ID_LENGTH: Record<string, number> = {
  acct_: 16,
  cus_: 14,
  prod_: 14,
  si_: 14,
  req_: 14,
  cs_test_: 58,
};
const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/** Random Stripe-looking id such as `cus_NffrFeUfNV2Hib`. */
export function randomId(prefix: string, length = ID_LENGTH[prefix] ?? 24): string {
  const bytes = crypto.getRandomValues(new Uint8Array(length));
  return prefix + Array.from(bytes, (b) => ALPHABET[b % ALPHABET.length]).join("");
}

/** The double's state; every handler and helper works on one of these. */
export class PayprocStore {
  /** Account links created, oldest first (they have no id). */
  readonly accountLinks: Wire<Stripe.AccountLink>[] = [];
  /** Login links created, oldest first (they have no id). */
  readonly loginLinks: Wire<Stripe.LoginLink>[] = [];
  /** Responses by `Idempotency-Key`. */
  readonly idempotency = new Map<string, IdempotentResponse>();
  /** Ids of deleted customers (kept so retrieval answers `deleted: true`). */
  readonly deletedCustomers = new Set<string>();
  /** Creation parameters of checkout sessions (used at completion), by session id. */
  readonly checkoutParams = new Map<string, FormObject>();
  /** Line items of checkout sessions, by session id. */
  readonly checkoutLineItems = new Map<string, Wire<Stripe.LineItem>[]>();
  /** When each object becomes visible to search (epoch ms), by id. */
  readonly indexedAt = new Map<string, number>();
  /** How long new objects stay invisible to search (the API's index lag). */
  searchDelayMs = 0;
  /** The status new refunds start in (`succeeded`, as card refunds usually do). */
  newRefundStatus: NewRefundStatus = "succeeded";
  readonly #objects = new Map<Kind, Map<string, StoredObject>>();
  readonly #order = new Map<string, number>();
  #sequence = 0;

  /** `now` returns the current Unix time in seconds; `baseUrl` prefixes hosted-page links. */
  constructor(readonly now: () => number, readonly baseUrl: string) {}

  /** A new unique id with the given prefix. */
  newId(prefix: string): string {
    let id = randomId(prefix);
    while (this.#order.has(id)) id = randomId(prefix);
    return id;
  }

  /** Stores (or replaces) an object and returns it. */
  put<K extends Kind>(kind: K, object: KindMap[K]): KindMap[K] {
    let byId = this.#objects.get(kind);
    if (!byId) this.#objects.set(kind, byId = new Map());
    byId.set(object.id, object);
    if (!this.#order.has(object.id)) {
      this.#order.set(object.id, ++this.#sequence);
      this.indexedAt.set(object.id, Date.now() + this.searchDelayMs);
    }
    return object;
  }

  /** The stored object, or undefined. */
  get<K extends Kind>(kind: K, id: string): KindMap[K] | undefined {
    return this.#objects.get(kind)?.get(id) as KindMap[K] | undefined;
  }

  /**
   * The stored object, or throws `resource_missing`: 404 for an id in the path
   * (`param` "id"), 400 for one given as a parameter.
   */
  require<K extends Kind>(kind: K, id: string, param = "id"): KindMap[K] {
    const found = this.get(kind, id);
    if (!found) throw resourceMissing(kind, id, param);
    return found;
  }

  /** All objects of a kind, newest first (by `created`, then creation order). */
  all<K extends Kind>(kind: K): KindMap[K][] {
    const items = [...(this.#objects.get(kind)?.values() ?? [])] as KindMap[K][];
    return items.sort((a, b) =>
      createdOf(b) - createdOf(a) || this.#order.get(b.id)! - this.#order.get(a.id)!
    );
  }

  /** Forgets an object, as if the processor never had it; whether it was there. */
  remove(kind: Kind, id: string): boolean {
    return this.#objects.get(kind)?.delete(id) ?? false;
  }

  /** Any stored object by id, whatever its kind. */
  find(id: string): StoredObject | undefined {
    for (const byId of this.#objects.values()) {
      const found = byId.get(id);
      if (found) return found;
    }
    return undefined;
  }

  /** Whether search can see the object yet (see {@linkcode searchDelayMs}). */
  searchable(id: string): boolean {
    return (this.indexedAt.get(id) ?? 0) <= Date.now();
  }

  /** How many objects of a kind were created (including deleted customers). */
  count(kind: Kind | LinkKind): number {
    if (kind === "account_link") return this.accountLinks.length;
    if (kind === "login_link") return this.loginLinks.length;
    return this.#objects.get(kind)?.size ?? 0;
  }

  /** Forgets everything. */
  clear(): void {
    this.#objects.clear();
    this.#order.clear();
    this.accountLinks.length = 0;
    this.loginLinks.length = 0;
    this.idempotency.clear();
    this.deletedCustomers.clear();
    this.checkoutLineItems.clear();
    this.checkoutParams.clear();
    this.indexedAt.clear();
    this.newRefundStatus = "succeeded";
  }
}

function createdOf(object: StoredObject): number {
  return "created" in object && typeof object.created === "number" ? object.created : 0;
}
