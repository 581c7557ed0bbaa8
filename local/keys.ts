/**
 * Local signing keys, as the Supabase CLI sets them up: the anon and
 * service-role keys are HS256 JWTs signed with the JWT secret, and user tokens
 * are ES256 JWTs signed by a local key whose public half is served at
 * `/auth/v1/.well-known/jwks.json`.
 *
 * @module
 */
import { exportJWK, generateKeyPair, importJWK, type JWK, SignJWT } from "jose";
import { dirname } from "node:path";

/** The Supabase CLI's well-known local JWT secret. */
export const LOCAL_JWT_SECRET = "super-secret-jwt-token-with-at-least-32-characters-long";

/**
 * The Supabase CLI's well-known local API keys of the new kind, which its
 * edge runtime gives functions as `SUPABASE_PUBLISHABLE_KEYS` /
 * `SUPABASE_SECRET_KEYS` (`{"default": ...}`): `apps/cli-go/pkg/config/apikeys.go`
 * and `internal/functions/serve/templates/main.ts` in github.com/supabase/cli.
 */
export const LOCAL_PUBLISHABLE_KEY = "sb_publishable_ACJWlzQHlZjBrEguHvfOxg_3BJgxAaH";
export const LOCAL_SECRET_KEY = "sb_secret_N7UND0UgjKTVK-Uodkm0Hg_xSvEMPvz";

/** Expiry of the local anon/service keys (the CLI's: 2032-11-11). */
const PROJECT_KEY_EXP = 1983812996;

/** Signs a project key (`anon` or `service_role`) with the HS256 secret; deterministic. */
export function signProjectKey(role: "anon" | "service_role", secret: string): Promise<string> {
  return new SignJWT({ iss: "supabase-demo", role, exp: PROJECT_KEY_EXP })
    .setProtectedHeader({ alg: "HS256", typ: "JWT" })
    .sign(new TextEncoder().encode(secret));
}

/** An ES256 key pair as JWKs, with its key id. */
export interface SigningKey {
  kid: string;
  privateJwk: JWK;
  publicJwk: JWK;
}

/** Reads the local user-token signing key from `path`, creating it on first use. */
export async function loadOrCreateSigningKey(path: string): Promise<SigningKey> {
  try {
    return JSON.parse(await Deno.readTextFile(path)) as SigningKey;
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  const { privateKey, publicKey } = await generateKeyPair("ES256", { extractable: true });
  const kid = crypto.randomUUID();
  const key: SigningKey = {
    kid,
    privateJwk: { ...(await exportJWK(privateKey)), kid, alg: "ES256", use: "sig" },
    publicJwk: { ...(await exportJWK(publicKey)), kid, alg: "ES256", use: "sig" },
  };
  await Deno.mkdir(dirname(path), { recursive: true });
  await Deno.writeTextFile(path, JSON.stringify(key, null, 2), { mode: 0o600 });
  return key;
}

/** The public JWK set for `key`. */
export function jwksOf(key: SigningKey): { keys: JWK[] } {
  return { keys: [key.publicJwk] };
}

/** Claims of a user token. */
export interface UserTokenClaims {
  sub: string;
  email: string;
  issuer: string;
  /** Lifetime in seconds (default one hour, as Supabase Auth). */
  expiresIn?: number;
}

/** Signs an ES256 user access token like Supabase Auth issues. */
export async function signUserToken(key: SigningKey, claims: UserTokenClaims): Promise<string> {
  const privateKey = await importJWK(key.privateJwk, "ES256");
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({
    email: claims.email,
    role: "authenticated",
    aal: "aal1",
    session_id: crypto.randomUUID(),
    app_metadata: { provider: "email", providers: ["email"] },
    user_metadata: {},
  })
    .setProtectedHeader({ alg: "ES256", kid: key.kid, typ: "JWT" })
    .setSubject(claims.sub)
    .setAudience("authenticated")
    .setIssuer(claims.issuer)
    .setIssuedAt(now)
    .setExpirationTime(now + (claims.expiresIn ?? 3600))
    .sign(privateKey);
}
