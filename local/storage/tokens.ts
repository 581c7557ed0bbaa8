/**
 * Signed-URL tokens, as hosted Storage issues them (`signUploadObjectUrl`,
 * `signObjectUrl` and `verifyObjectSignature` in `src/storage/object.ts`):
 * HS256 JWTs signed with the project's JWT secret whose `url` claim is
 * `<bucket>/<name>` and whose `scope` is `upload` (with `owner` and
 * `upsert`) or `download`.
 *
 * @module
 */
import { errors as joseErrors, type JWTPayload, jwtVerify, SignJWT } from "jose";
import { expiredToken, invalidJwt, invalidSignature } from "./errors.ts";

/** Lifetime of a signed upload URL: two hours, as hosted Storage. */
export const UPLOAD_URL_SECONDS = 2 * 60 * 60;

/** What a signed URL allows. */
export type UrlScope = "upload" | "download";

/** The claims of a signed URL's token. */
export interface UrlTokenClaims {
  /** `<bucket>/<name>` of the one object the token is for. */
  url: string;
  scope: UrlScope;
  /** Upload tokens: the user the object will belong to (absent for the service role). */
  owner?: string;
  /** Upload tokens: whether the upload may replace an existing object. */
  upsert?: boolean;
}

/** A verified token's claims with its expiry (epoch seconds). */
export type VerifiedUrlToken = UrlTokenClaims & { exp: number };

/**
 * Signs a signed-URL token for `claims` valid `expiresIn` seconds from now
 * (a negative value makes an already expired token, for tests).
 */
export function signUrlToken(
  secret: string,
  claims: UrlTokenClaims,
  expiresIn: number,
): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const payload: JWTPayload = { url: claims.url, scope: claims.scope };
  if (claims.scope === "upload") {
    if (claims.owner !== undefined) payload.owner = claims.owner;
    payload.upsert = claims.upsert ?? false;
  }
  return new SignJWT(payload)
    .setProtectedHeader({ alg: "HS256", typ: "JWT" })
    .setIssuedAt(now)
    .setExpirationTime(now + Math.floor(expiresIn))
    .sign(new TextEncoder().encode(secret));
}

/**
 * Verifies `token` for `scope` and the object `<bucket>/<name>`: 400
 * `InvalidJWT` when it is not a valid token of this project (signature,
 * format, expiry as the JWT library reports it), `InvalidSignature` when it
 * is for another scope or object, `ExpiredToken` when it has expired.
 */
export async function verifyUrlToken(
  secret: string,
  token: string,
  scope: UrlScope,
  bucket: string,
  name: string,
): Promise<VerifiedUrlToken> {
  let payload: JWTPayload;
  try {
    payload = (await jwtVerify(token, new TextEncoder().encode(secret), {
      algorithms: ["HS256"],
      requiredClaims: ["exp"],
    })).payload;
  } catch (error) {
    throw invalidJwt(error instanceof joseErrors.JOSEError ? error.message : undefined);
  }
  if (!hasScope(payload, scope)) throw invalidSignature(`Token is not scoped for ${scope}`);
  if (payload.url !== `${bucket}/${name}`) throw invalidSignature();
  const exp = payload.exp!;
  if (exp * 1000 < Date.now()) throw expiredToken();
  return {
    url: payload.url,
    scope,
    exp,
    owner: typeof payload.owner === "string" ? payload.owner : undefined,
    upsert: payload.upsert === true,
  };
}

/**
 * Hosted's scope rule: an explicit scope must match; a token without one is
 * an upload token when it carries `upsert` (tokens issued before scopes).
 */
function hasScope(payload: JWTPayload, scope: UrlScope): boolean {
  if (payload.scope !== undefined) return payload.scope === scope;
  return scope === "upload" ? "upsert" in payload : !("upsert" in payload);
}
