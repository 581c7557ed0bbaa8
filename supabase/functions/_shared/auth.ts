/**
 * Bearer credential verification. Accepts, as hosted Supabase issues them:
 * HS256 JWTs signed with `SUPABASE_JWT_SECRET` (legacy anon/service-role keys,
 * older projects' user tokens), ES256/RS256 JWTs verified against the
 * project's JWKS (`SUPABASE_JWKS` inline, else fetched from
 * `${SUPABASE_URL}/auth/v1/.well-known/jwks.json` and cached), opaque project
 * keys equal to `SUPABASE_ANON_KEY`/`SUPABASE_SERVICE_ROLE_KEY`, and the
 * `SCHEDULER_TOKEN`.
 *
 * @module
 */
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  decodeProtectedHeader,
  errors as joseErrors,
  type JSONWebKeySet,
  type JWTPayload,
  jwtVerify,
  type JWTVerifyGetKey,
} from "jose";
import type { Caller } from "./caller.ts";
import type { Env } from "./env.ts";
import { HttpError } from "./errors.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** 401 `unauthorized` with a reason that names no secret. */
export function unauthorized(reason: string): HttpError {
  return new HttpError(401, "unauthorized", `Cannot authenticate the request: ${reason}`);
}

/** How many verified tokens are remembered, and for how long at most. */
const VERIFIED_CACHE_SIZE = 5_000;
const VERIFIED_CACHE_MS = 60_000;

/**
 * Verifies bearer credentials for one configuration; keys are prepared once.
 * A verified JWT is remembered (by its exact text, so by its signature) until
 * it expires or for a minute, whichever is sooner: the same key on every
 * request is then verified once, not every time.
 */
export class TokenVerifier {
  private readonly verified = new Map<string, { caller: Caller; until: number }>();
  private readonly secret?: Uint8Array;
  private readonly jwks?: JWTVerifyGetKey;
  private readonly opaque: Array<[Uint8Array, Caller]> = [];
  private readonly issuer?: string;

  /** Prepares the keys from `env` (fails at cold start on a malformed SUPABASE_JWKS). */
  constructor(env: Env) {
    const v = env.values;
    if (v.SUPABASE_JWT_SECRET) this.secret = new TextEncoder().encode(v.SUPABASE_JWT_SECRET);
    if (v.SUPABASE_JWKS) {
      let set: JSONWebKeySet;
      try {
        set = JSON.parse(v.SUPABASE_JWKS) as JSONWebKeySet;
      } catch {
        throw new Error('Cannot read configuration: malformed "SUPABASE_JWKS"');
      }
      this.jwks = createLocalJWKSet(set);
    } else if (v.SUPABASE_URL) {
      this.jwks = createRemoteJWKSet(
        new URL("/auth/v1/.well-known/jwks.json", v.SUPABASE_URL),
        { cacheMaxAge: 10 * 60_000, cooldownDuration: 30_000, timeoutDuration: 5_000 },
      );
    }
    // User tokens always carry the issuer; Supabase Auth's is <project URL>/auth/v1.
    this.issuer = v.SUPABASE_JWT_ISSUER ??
      (v.SUPABASE_URL ? `${v.SUPABASE_URL.replace(/\/+$/, "")}/auth/v1` : undefined);
    const encode = (s: string) => new TextEncoder().encode(s);
    if (v.SCHEDULER_TOKEN) this.opaque.push([encode(v.SCHEDULER_TOKEN), { kind: "scheduler" }]);
    if (v.SUPABASE_SERVICE_ROLE_KEY && !looksLikeJwt(v.SUPABASE_SERVICE_ROLE_KEY)) {
      this.opaque.push([encode(v.SUPABASE_SERVICE_ROLE_KEY), { kind: "service" }]);
    }
    if (v.SUPABASE_ANON_KEY && !looksLikeJwt(v.SUPABASE_ANON_KEY)) {
      this.opaque.push([encode(v.SUPABASE_ANON_KEY), { kind: "anon" }]);
    }
  }

  /** The caller behind an `Authorization` header value; throws 401 when it is not valid. */
  async verify(authorization: string | null): Promise<Caller> {
    const token = bearer(authorization);
    const bytes = new TextEncoder().encode(token);
    for (const [expected, caller] of this.opaque) {
      if (constantTimeEqual(bytes, expected)) return caller;
    }
    if (!looksLikeJwt(token)) throw unauthorized("the bearer token is not a valid JWT");
    const now = Date.now();
    const remembered = this.verified.get(token);
    if (remembered && remembered.until > now) return remembered.caller;
    let alg: string | undefined;
    try {
      alg = decodeProtectedHeader(token).alg;
    } catch {
      throw unauthorized("the bearer token is not a valid JWT");
    }
    const payload = await this.verifyJwt(token, alg);
    const caller = callerFrom(payload, this.issuer);
    this.remember(token, caller, payload.exp, now);
    return caller;
  }

  private remember(token: string, caller: Caller, exp: number | undefined, now: number): void {
    const until = Math.min(now + VERIFIED_CACHE_MS, exp === undefined ? Infinity : exp * 1000);
    if (this.verified.size >= VERIFIED_CACHE_SIZE) {
      const oldest = this.verified.keys().next();
      if (!oldest.done) this.verified.delete(oldest.value);
    }
    this.verified.set(token, { caller, until });
  }

  private async verifyJwt(token: string, alg: string | undefined): Promise<JWTPayload> {
    try {
      if (alg === "HS256") {
        if (!this.secret) throw unauthorized("HS256 tokens are not accepted by this project");
        return (await jwtVerify(token, this.secret, VERIFY_HS256)).payload;
      }
      if (alg === "ES256" || alg === "RS256") {
        if (!this.jwks) throw unauthorized(`${alg} tokens are not accepted by this project`);
        return (await jwtVerify(token, this.jwks, alg === "ES256" ? VERIFY_ES256 : VERIFY_RS256))
          .payload;
      }
      throw unauthorized(`algorithm "${alg ?? "none"}" is not accepted`);
    } catch (error) {
      if (error instanceof HttpError) throw error;
      if (error instanceof joseErrors.JWTExpired) throw unauthorized("the token has expired");
      if (error instanceof joseErrors.JWTClaimValidationFailed && error.claim === "exp") {
        throw unauthorized("the token has no expiry (exp)");
      }
      if (
        error instanceof joseErrors.JWKSTimeout || error instanceof joseErrors.JOSEError &&
          error.code === "ERR_JWKS_NO_MATCHING_KEY"
      ) {
        throw unauthorized("no key of this project matches the token");
      }
      if (error instanceof joseErrors.JOSEError) {
        throw unauthorized("the token's signature or claims are invalid");
      }
      throw unauthorized("the project's signing keys could not be loaded");
    }
  }
}

/** Verification options: every token must carry an expiry. */
const VERIFY_HS256 = { algorithms: ["HS256"], requiredClaims: ["exp"] };
const VERIFY_ES256 = { algorithms: ["ES256"], requiredClaims: ["exp"] };
const VERIFY_RS256 = { algorithms: ["RS256"], requiredClaims: ["exp"] };

/** The token of a `Bearer` authorization header; 401 when absent. */
function bearer(authorization: string | null): string {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? "");
  if (!match) throw unauthorized("missing bearer token in the Authorization header");
  return match[1]!;
}

/** Maps verified claims to a caller by their `role`. */
function callerFrom(payload: JWTPayload, issuer: string | undefined): Caller {
  const role = payload.role;
  if (role === "anon") return { kind: "anon" };
  if (role === "service_role") return { kind: "service" };
  if (role !== "authenticated") throw unauthorized(`role "${String(role)}" is not accepted`);
  if (typeof payload.sub !== "string" || !UUID.test(payload.sub)) {
    throw unauthorized("the token names no user");
  }
  const aud = Array.isArray(payload.aud) ? payload.aud : [payload.aud];
  if (!aud.includes("authenticated")) throw unauthorized("the token's audience is not accepted");
  if (issuer === undefined) {
    throw new HttpError(
      503,
      "not_configured",
      "Cannot verify user tokens: SUPABASE_URL (or SUPABASE_JWT_ISSUER) is not configured",
      { variable: "SUPABASE_URL" },
    );
  }
  if (payload.iss !== issuer) throw unauthorized("the token's issuer is not accepted");
  return {
    kind: "user",
    id: payload.sub,
    email: typeof payload.email === "string" ? payload.email : null,
    anonymous: payload.is_anonymous === true,
    claims: { ...payload },
  };
}

function looksLikeJwt(value: string): boolean {
  return /^[\w-]+\.[\w-]+\.[\w-]*$/.test(value);
}

/** Compares two byte strings in time that depends only on their lengths. */
export function constantTimeEqual(a: Uint8Array, b: Uint8Array): boolean {
  let diff = a.length ^ b.length;
  const n = Math.max(a.length, b.length);
  for (let i = 0; i < n; i++) diff |= (a[i] ?? 0) ^ (b[i] ?? 0);
  return diff === 0;
}
