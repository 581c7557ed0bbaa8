/**
 * Bytes as lower-case hex: SHA-256 digests (content hashes, idempotency
 * keys) and random ids.
 *
 * @module
 */

/** `bytes` as lower-case hex, two digits per byte. */
export function toHex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** The SHA-256 of `data` (a string is hashed as UTF-8) as 64 hex digits. */
export async function sha256Hex(data: string | Uint8Array): Promise<string> {
  const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data.slice();
  return toHex(new Uint8Array(await crypto.subtle.digest("SHA-256", bytes)));
}

/** `byteCount` random bytes as hex (`2 × byteCount` digits). */
export function randomHex(byteCount: number): string {
  return toHex(crypto.getRandomValues(new Uint8Array(byteCount)));
}
