/**
 * A small in-isolate cache whose entries expire after a time to live.
 *
 * @module
 */

/** Key/value cache with per-entry expiry and a size bound. */
export class TtlCache<V> {
  private readonly entries = new Map<string, { value: V; expires: number }>();

  /** Creates a cache keeping entries `ttlMs` and at most `maxEntries` of them. */
  constructor(private readonly ttlMs: number, private readonly maxEntries = 1000) {}

  /** The live value for `key`, if any. */
  get(key: string): V | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (entry.expires <= Date.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return entry.value;
  }

  /** Stores `value` under `key`, evicting the oldest entry when full. */
  set(key: string, value: V): void {
    this.entries.delete(key);
    if (this.entries.size >= this.maxEntries) {
      const oldest = this.entries.keys().next();
      if (!oldest.done) this.entries.delete(oldest.value);
    }
    this.entries.set(key, { value, expires: Date.now() + this.ttlMs });
  }

  /** Drops every entry. */
  clear(): void {
    this.entries.clear();
  }
}
