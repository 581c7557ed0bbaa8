/**
 * Credential verification. Accepts, as hosted Supabase issues them:
 * HS256 JWTs signed with the project's legacy JWT secret (legacy anon and
 * service-role keys, user tokens of projects still on that secret) — read
 * from `SUPABASE_JWT_SECRET` where the platform provides it (this project's
 * local stack), else from `JWT_SECRET` (hosted reserves `SUPABASE_*` names
 * and does not give functions the secret, so it is set there under this
 * name; self-hosted Supabase passes it so), else from `oct` keys in an inline
 * `SUPABASE_JWKS` (how the Supabase CLI's edge runtime passes it);
 * ES256/RS256 JWTs verified against the project's JWKS (`SUPABASE_JWKS`
 * inline, else fetched from `${SUPABASE_URL}/auth/v1/.well-known/jwks.json`
 * and cached); the project's API keys, matched exactly: publishable keys
 * (`SUPABASE_PUBLISHABLE_KEYS`, or an opaque `SUPABASE_ANON_KEY`) are the
 * anon caller and secret keys (`SUPABASE_SECRET_KEYS`, or an opaque
 * `SUPABASE_SERVICE_ROLE_KEY`) the service caller; and the `SCHEDULER_TOKEN`.
 *
 * The credential is the `Authorization: Bearer` value when that header is
 * present. Without it, an API key in the `apikey` header is accepted: that is
 * how supabase-js sends `sb_publishable_…`/`sb_secret_…` keys to functions
 * when no user is signed in (it never sends them as a bearer token), and
 * where Supabase's documentation tells callers to put them
 * (https://supabase.com/docs/guides/functions/auth-headers). docs/deploying.md
 * lists which variable to set where.
 *
 * @module
 */
import type { JSONWebKeySet, JWTVerifyGetKey } from "jose";
import type { Caller } from "./caller.ts";
import type { Env } from "./env.ts";
import { HttpError } from "./errors.ts";
import {
  base64urlBytes,
  Hs256Error,
  hs256Key,
  type JwtClaims,
  protectedHeader,
  verifyHs256,
} from "./hs256.ts";
import { isUuid } from "../lib/uuid.ts";

/** 401 `unauthorized` with a reason that names no secret. */
export function unauthorized(reason: string): HttpError {
  return new HttpError(401, "unauthorized", `Cannot authenticate the request: ${reason}`);
}

/** How many verified tokens are remembered, and for how long at most. */
const VERIFIED_CACHE_SIZE = 5_000;
const VERIFIED_CACHE_MS = 60_000;

/**
 * Verifies bearer credentials for one configuration; keys are prepared once.
 * HS256 tokens are verified with WebCrypto (`hs256.ts`); `jose` loads with
 * the first ES256/RS256 token, so a cold start does not pay for it.
 * A verified JWT is remembered (by its exact text, so by its signature) until
 * it expires or for a minute, whichever is sooner: the same key on every
 * request is then verified once, not every time.
 */
export class TokenVerifier {
  private readonly verified = new Map<string, { caller: Caller; until: number }>();
  /** HS256 secrets: the configured one, else the `oct` keys of an inline JWKS. */
  private readonly secrets: BufferSource[] = [];
  private hs256Keys?: Promise<CryptoKey[]>;
  /** The inline JWKS (`SUPABASE_JWKS`), or the project's JWKS URL. */
  private readonly jwksSource?: JSONWebKeySet | URL;
  private jwks?: Promise<JWTVerifyGetKey>;
  private readonly opaque: OpaqueKey[] = [];
  private readonly issuer?: string;

  /** Prepares the keys from `env` (fails at cold start on a malformed SUPABASE_JWKS). */
  constructor(env: Env) {
    const v = env.values;
    // The platform's own name first: where it exists (locally) it is the
    // project's secret; JWT_SECRET is the fallback an operator sets where
    // the platform does not provide the secret (hosted).
    const secret = v.SUPABASE_JWT_SECRET ?? v.JWT_SECRET;
    if (secret) this.secrets.push(new TextEncoder().encode(secret));
    if (v.SUPABASE_JWKS) {
      let set: JSONWebKeySet;
      // The Supabase CLI's edge runtime passes the legacy secret only as an
      // `oct` key here (apps/cli-go/pkg/config/config.go in
      // github.com/supabase/cli, ResolveJWKS); it counts when no secret is set.
      const symmetric: Array<ReturnType<typeof base64urlBytes>> = [];
      try {
        set = JSON.parse(v.SUPABASE_JWKS) as JSONWebKeySet;
        if (!Array.isArray(set?.keys)) throw new Error("no keys");
        for (const key of set.keys) {
          if (key.kty === "oct") symmetric.push(base64urlBytes(String(key.k ?? "")));
        }
      } catch {
        throw new Error('Cannot read configuration: malformed "SUPABASE_JWKS"');
      }
      this.jwksSource = set;
      if (this.secrets.length === 0) this.secrets.push(...symmetric.filter((k) => k.length > 0));
    } else if (v.SUPABASE_URL) {
      this.jwksSource = new URL("/auth/v1/.well-known/jwks.json", v.SUPABASE_URL);
    }
    // User tokens always carry the issuer; Supabase Auth's is <project URL>/auth/v1.
    this.issuer = v.SUPABASE_JWT_ISSUER ??
      (v.SUPABASE_URL ? `${v.SUPABASE_URL.replace(/\/+$/, "")}/auth/v1` : undefined);
    const add = (value: string | undefined, caller: Caller, apiKey: boolean) => {
      // A JWT-shaped API key (the legacy anon/service-role keys) verifies by
      // its signature; the scheduler token is matched whatever its shape.
      if (value && !(apiKey && looksLikeJwt(value))) {
        this.opaque.push({ bytes: new TextEncoder().encode(value), caller, apiKey });
      }
    };
    add(v.SCHEDULER_TOKEN, { kind: "scheduler" }, false);
    for (const key of Object.values(v.SUPABASE_SECRET_KEYS ?? {})) add(key, SERVICE, true);
    add(v.SUPABASE_SERVICE_ROLE_KEY, SERVICE, true);
    for (const key of Object.values(v.SUPABASE_PUBLISHABLE_KEYS ?? {})) add(key, ANON, true);
    add(v.SUPABASE_ANON_KEY, ANON, true);
  }

  /**
   * The caller behind a request's credential: the `Authorization` header's
   * bearer token when that header is present, else a project API key in the
   * `apikey` header; throws 401 when neither is valid.
   */
  async verify(authorization: string | null, apikey: string | null = null): Promise<Caller> {
    if (authorization === null && apikey !== null) return this.apiKeyCaller(apikey);
    const token = bearer(authorization);
    // A remembered token verified as a JWT, so it matched no opaque key
    // (they are compared first, and never change): it is looked up first.
    const now = Date.now();
    const remembered = this.verified.get(token);
    if (remembered && remembered.until > now) return remembered.caller;
    const bytes = ENCODER.encode(token);
    for (const key of this.opaque) {
      if (constantTimeEqual(bytes, key.bytes)) return key.caller;
    }
    if (!looksLikeJwt(token)) throw unauthorized("the bearer token is not a valid JWT");
    let alg: unknown;
    try {
      alg = protectedHeader(token).alg;
    } catch {
      throw unauthorized("the bearer token is not a valid JWT");
    }
    const payload = await this.verifyJwt(token, alg);
    const caller = callerFrom(payload, this.issuer);
    this.remember(token, caller, payload.exp, now);
    return caller;
  }

  /** The caller of an `apikey` header sent without `Authorization`: a publishable or secret key. */
  private apiKeyCaller(apikey: string): Caller {
    const bytes = ENCODER.encode(apikey.trim());
    for (const key of this.opaque) {
      if (key.apiKey && constantTimeEqual(bytes, key.bytes)) return key.caller;
    }
    throw unauthorized(
      "the apikey header is not an API key of this project (a user's token goes in Authorization: Bearer)",
    );
  }

  private remember(token: string, caller: Caller, exp: number | undefined, now: number): void {
    const until = Math.min(now + VERIFIED_CACHE_MS, exp === undefined ? Infinity : exp * 1000);
    if (this.verified.size >= VERIFIED_CACHE_SIZE) {
      const oldest = this.verified.keys().next();
      if (!oldest.done) this.verified.delete(oldest.value);
    }
    this.verified.set(token, { caller, until });
  }

  /** HS256 against each secret (a JWKS may hold several `oct` keys). */
  private async verifyHs256(token: string): Promise<JwtClaims> {
    if (this.secrets.length === 0) {
      throw unauthorized("HS256 tokens are not accepted by this project");
    }
    this.hs256Keys ??= Promise.all(this.secrets.map(hs256Key));
    try {
      return await verifyHs256(token, await this.hs256Keys);
    } catch (error) {
      if (!(error instanceof Hs256Error)) throw error;
      if (error.reason === "expired") throw unauthorized("the token has expired");
      if (error.reason === "no_expiry") throw unauthorized("the token has no expiry (exp)");
      throw unauthorized("the token's signature or claims are invalid");
    }
  }

  /** The project's JWKS, built (and `jose` loaded) with the first asymmetric token. */
  private keySet(): Promise<JWTVerifyGetKey> | undefined {
    const source = this.jwksSource;
    if (!source) return undefined;
    this.jwks ??= import("jose").then((jose) =>
      source instanceof URL
        ? jose.createRemoteJWKSet(source, {
          cacheMaxAge: 10 * 60_000,
          cooldownDuration: 30_000,
          timeoutDuration: 5_000,
        })
        : jose.createLocalJWKSet(source)
    );
    return this.jwks;
  }

  private async verifyJwt(token: string, alg: unknown): Promise<JwtClaims> {
    if (alg === "HS256") return await this.verifyHs256(token);
    if (alg !== "ES256" && alg !== "RS256") {
      throw unauthorized(`algorithm "${typeof alg === "string" ? alg : "none"}" is not accepted`);
    }
    const keySet = this.keySet();
    if (!keySet) throw unauthorized(`${alg} tokens are not accepted by this project`);
    const jose = await import("jose");
    try {
      const options = alg === "ES256" ? VERIFY_ES256 : VERIFY_RS256;
      return (await jose.jwtVerify(token, await keySet, options)).payload as JwtClaims;
    } catch (error) {
      const errors = jose.errors;
      if (error instanceof errors.JWTExpired) throw unauthorized("the token has expired");
      if (error instanceof errors.JWTClaimValidationFailed && error.claim === "exp") {
        throw unauthorized("the token has no expiry (exp)");
      }
      if (
        error instanceof errors.JWKSTimeout || error instanceof errors.JOSEError &&
          error.code === "ERR_JWKS_NO_MATCHING_KEY"
      ) {
        throw unauthorized("no key of this project matches the token");
      }
      if (error instanceof errors.JOSEError) {
        throw unauthorized("the token's signature or claims are invalid");
      }
      throw unauthorized("the project's signing keys could not be loaded");
    }
  }
}

/** A key matched by value: the scheduler token, or an API key (also accepted as `apikey`). */
interface OpaqueKey {
  bytes: Uint8Array;
  caller: Caller;
  /** A project API key (publishable or secret), which may come in the `apikey` header. */
  apiKey: boolean;
}

const ENCODER = new TextEncoder();
const ANON: Caller = { kind: "anon" };
const SERVICE: Caller = { kind: "service" };

/** Verification options of asymmetric tokens: every token must carry an expiry (HS256: `hs256.ts`). */
const VERIFY_ES256 = { algorithms: ["ES256"], requiredClaims: ["exp"] };
const VERIFY_RS256 = { algorithms: ["RS256"], requiredClaims: ["exp"] };

/** The token of a `Bearer` authorization header; 401 when absent. */
function bearer(authorization: string | null): string {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? "");
  if (!match) {
    throw unauthorized(
      authorization === null
        ? "no credential: send Authorization: Bearer <token>, or an API key in the apikey header"
        : "the Authorization header is not Bearer <token>",
    );
  }
  return match[1]!;
}

/** Maps verified claims to a caller by their `role`. */
function callerFrom(payload: JwtClaims, issuer: string | undefined): Caller {
  const role = payload.role;
  if (role === "anon") return { kind: "anon" };
  if (role === "service_role") return { kind: "service" };
  if (role !== "authenticated") throw unauthorized(`role "${String(role)}" is not accepted`);
  if (!isUuid(payload.sub)) {
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
