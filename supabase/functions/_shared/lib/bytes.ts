/**
 * Byte helpers shared by the body readers (requests, fetched pages, local
 * Storage uploads).
 *
 * @module
 */

/** `parts` joined into one array (`size`, their total length, when the caller already knows it). */
export function concatBytes(
  parts: readonly Uint8Array[],
  size: number = parts.reduce((total, part) => total + part.byteLength, 0),
): Uint8Array {
  const out = new Uint8Array(size);
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.byteLength;
  }
  return out;
}

/** What {@linkcode readAtMost} read. */
export interface CappedRead {
  /** The stream's bytes, at most the limit. */
  bytes: Uint8Array;
  /** Whether the stream had more than the limit (the rest is unread). */
  truncated: boolean;
}

/**
 * Reads `stream` to its end, or until it has yielded more than `limit`
 * bytes: then answers the first `limit` with `truncated`, and the rest is
 * cancelled, or left unread when `cancelRest` is false (a server that must
 * still answer the request). Read errors are thrown as they are.
 */
export async function readAtMost(
  stream: ReadableStream<Uint8Array>,
  limit: number,
  { cancelRest = true }: { cancelRest?: boolean } = {},
): Promise<CappedRead> {
  const reader = stream.getReader();
  const parts: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return { bytes: concatBytes(parts, size), truncated: false };
      if (size + value.byteLength > limit) {
        parts.push(value.subarray(0, limit - size));
        if (cancelRest) reader.cancel().catch(() => {});
        return { bytes: concatBytes(parts, limit), truncated: true };
      }
      parts.push(value);
      size += value.byteLength;
    }
  } finally {
    reader.releaseLock();
  }
}
