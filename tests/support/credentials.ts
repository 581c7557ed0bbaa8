/**
 * Real signed credentials for tests: HS256 project keys, ES256 user tokens
 * from a test key whose JWKS the runtime trusts, and broken ones.
 *
 * @module
 */
import { exportJWK, generateKeyPair, type JWK, SignJWT } from "jose";
import { type SigningKey, signProjectKey, signUserToken } from "../../local/keys.ts";

/** The HS256 secret of the test project. */
export const TEST_JWT_SECRET = "test-jwt-secret-that-is-at-least-32-characters";
/** The test project's URL (never contacted: its JWKS is given inline). */
export const TEST_SUPABASE_URL = "http://127.0.0.1:9";
/** The issuer of the test project's user tokens, as Supabase Auth sets it. */
export const TEST_ISSUER = `${TEST_SUPABASE_URL}/auth/v1`;

/** The scheduler token of the test project. */
export const TEST_SCHEDULER_TOKEN = "test-scheduler-token-0123456789abcdefghijklmnop";

/** Credentials of one test project. */
export interface TestCredentials {
  anonKey: string;
  serviceKey: string;
  schedulerToken: string;
  signingKey: SigningKey;
  jwks: { keys: JWK[] };
  /** An ES256 user access token. */
  userToken(user: { id: string; email: string }, expiresIn?: number): Promise<string>;
  /** An HS256 user access token (older projects sign user tokens this way). */
  hsUserToken(user: { id: string; email: string }): Promise<string>;
}

/** Makes a fresh ES256 key pair as a {@linkcode SigningKey}. */
export async function newSigningKey(): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair("ES256", { extractable: true });
  const kid = crypto.randomUUID();
  return {
    kid,
    privateJwk: { ...(await exportJWK(privateKey)), kid, alg: "ES256" },
    publicJwk: { ...(await exportJWK(publicKey)), kid, alg: "ES256" },
  };
}

let cached: Promise<TestCredentials> | undefined;

/** The test project's credentials (one key pair per test process). */
export function testCredentials(): Promise<TestCredentials> {
  cached ??= (async () => {
    const signingKey = await newSigningKey();
    return {
      anonKey: await signProjectKey("anon", TEST_JWT_SECRET),
      serviceKey: await signProjectKey("service_role", TEST_JWT_SECRET),
      schedulerToken: TEST_SCHEDULER_TOKEN,
      signingKey,
      jwks: { keys: [signingKey.publicJwk] },
      userToken: (user, expiresIn) =>
        signUserToken(signingKey, {
          sub: user.id,
          email: user.email,
          issuer: TEST_ISSUER,
          expiresIn,
        }),
      hsUserToken: (user) =>
        new SignJWT({ role: "authenticated", email: user.email })
          .setProtectedHeader({ alg: "HS256", typ: "JWT" })
          .setSubject(user.id)
          .setAudience("authenticated")
          .setIssuer(TEST_ISSUER)
          .setIssuedAt()
          .setExpirationTime("1h")
          .sign(new TextEncoder().encode(TEST_JWT_SECRET)),
    };
  })();
  return cached;
}
