/**
 * HS256 JWT verification with WebCrypto: the legacy anon and service-role
 * keys and the user tokens of projects still on the legacy JWT secret, which
 * is nearly every request. It checks exactly what `jose`'s `jwtVerify` checks
 * with the options this project passes it (`algorithms: ["HS256"]`,
 * `requiredClaims: ["exp"]`, no clock tolerance) — a test compares the two
 * on the same tokens — so `jose` itself loads only for the rare ES256/RS256
 * token (see `tokens.ts`): at cold start it costs more than everything else
 * a function without a body loads (`docs/benchmarks.md`).
 *
 * Stricter than `jose` in one respect: a token whose header has `crit` is
 * refused (none of this project's issuers sets it).
 *
 * @module
 */

/** A JWT's claims. */
export type JwtClaims = Record<string, unknown> & { exp?: number };

/** Why a token was refused. */
export type Hs256Refusal =
  /** Not a JWS of a JSON header and JSON object claims, or a claim of the wrong type. */
  | "invalid"
  /** Signed with another secret (or tampered with). */
  | "signature"
  /** No `exp` claim, or one that is not a number. */
  | "no_expiry"
  /** `exp` is past. */
  | "expired"
  /** `nbf` is in the future. */
  | "not_yet_valid";

/** Thrown when an HS256 token is refused. */
export class Hs256Error extends Error {
  override name = "Hs256Error";
  /** Creates the refusal `reason`. */
  constructor(readonly reason: Hs256Refusal) {
    super(`Cannot verify the HS256 token: ${reason}`);
  }
}

const BASE64URL = /^[A-Za-z0-9_-]*$/;

/** The bytes of base64url text `text` (no padding); throws `invalid` on anything else. */
// The return type is inferred: an ArrayBuffer-backed array, as WebCrypto takes.
export function base64urlBytes(text: string) {
  if (!BASE64URL.test(text) || text.length % 4 === 1) throw new Hs256Error("invalid");
  const binary = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

/** The JSON object encoded in base64url segment `segment`; throws `invalid` otherwise. */
function jsonObject(segment: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(base64urlBytes(segment)));
  } catch {
    throw new Hs256Error("invalid");
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new Hs256Error("invalid");
  }
  return value as Record<string, unknown>;
}

/** The protected header of compact JWS `token` (its `alg`, for dispatch); throws `invalid`. */
export function protectedHeader(token: string): Record<string, unknown> {
  const parts = token.split(".");
  if (parts.length !== 3) throw new Hs256Error("invalid");
  return jsonObject(parts[0]!);
}

/** An HMAC-SHA256 verification key of `secret`. */
export function hs256Key(secret: BufferSource): Promise<CryptoKey> {
  return crypto.subtle.importKey("raw", secret, { name: "HMAC", hash: "SHA-256" }, false, [
    "verify",
  ]);
}

/**
 * The claims of HS256 token `token` when one of `keys` signed it and its
 * claims hold at `now` (ms); throws {@linkcode Hs256Error} otherwise.
 */
export async function verifyHs256(
  token: string,
  keys: readonly CryptoKey[],
  now: number = Date.now(),
): Promise<JwtClaims> {
  const parts = token.split(".");
  if (parts.length !== 3) throw new Hs256Error("invalid");
  const [header, payload, signature] = parts as [string, string, string];
  const protectedHeader = jsonObject(header);
  if (protectedHeader.alg !== "HS256" || "crit" in protectedHeader) {
    throw new Hs256Error("invalid");
  }
  const signatureBytes = base64urlBytes(signature);
  const signed = new TextEncoder().encode(`${header}.${payload}`);
  let verified = false;
  for (const key of keys) {
    if (await crypto.subtle.verify("HMAC", key, signatureBytes, signed)) {
      verified = true;
      break;
    }
  }
  if (!verified) throw new Hs256Error("signature");
  const claims = jsonObject(payload);
  // In jose's order: exp present, then iat, nbf and exp as numeric dates.
  if (!Object.hasOwn(claims, "exp")) throw new Hs256Error("no_expiry");
  const seconds = Math.floor(now / 1000);
  if (claims.iat !== undefined && typeof claims.iat !== "number") throw new Hs256Error("invalid");
  if (claims.nbf !== undefined) {
    if (typeof claims.nbf !== "number") throw new Hs256Error("invalid");
    if (claims.nbf > seconds) throw new Hs256Error("not_yet_valid");
  }
  if (typeof claims.exp !== "number") throw new Hs256Error("no_expiry");
  if (claims.exp <= seconds) throw new Hs256Error("expired");
  return claims as JwtClaims;
}
