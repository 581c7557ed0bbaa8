/**
 * A loader called on first use, its promise then kept: a module or client
 * loaded lazily once per isolate. A failed load is forgotten, so the next
 * call tries again instead of failing for the isolate's lifetime.
 *
 * @module
 */

/** `load`, called on the first call and kept; after a failure, called again. */
export function loadOnce<T>(load: () => Promise<T>): () => Promise<T> {
  let loading: Promise<T> | undefined;
  return () =>
    loading ??= load().catch((error) => {
      loading = undefined;
      throw error;
    });
}
