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
