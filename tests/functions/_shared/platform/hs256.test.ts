/**
 * `hs256.ts` verifies HS256 tokens without `jose` (so a cold start does not
 * load it): here both verify the same crafted tokens — every header, claims
 * and key combination below — and must agree on each one, down to why a
 * token is refused. The one intended difference (a `crit` header, which
 * `jose` may accept and `hs256.ts` refuses) is checked apart.
 */
import assert from "node:assert/strict";
import { errors, jwtVerify } from "jose";
import {
  Hs256Error,
  hs256Key,
  protectedHeader,
  verifyHs256,
} from "../../../../supabase/functions/_shared/platform/hs256.ts";

const secret = new TextEncoder().encode("test-jwt-secret-that-is-at-least-32-characters");
const otherSecret = new TextEncoder().encode("another-secret-that-is-also-32-characters-long");
const NOW = Date.UTC(2026, 10, 26, 12, 0, 0);
const seconds = Math.floor(NOW / 1000);

const base64url = (bytes: Uint8Array) =>
  btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
const text = (value: string) => base64url(new TextEncoder().encode(value));

/** A compact JWS of the raw header and payload texts, signed with `key`. */
async function sign(header: string, payload: string, key: BufferSource): Promise<string> {
  const signingInput = `${text(header)}.${text(payload)}`;
  const hmac = await crypto.subtle.importKey(
    "raw",
    key,
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  const signature = new Uint8Array(
    await crypto.subtle.sign("HMAC", hmac, new TextEncoder().encode(signingInput)),
  );
  return `${signingInput}.${base64url(signature)}`;
}

/** Why `jose` refuses a token, in `hs256.ts`'s words; "ok" when it accepts it. */
async function joseOutcome(token: string): Promise<string> {
  try {
    await jwtVerify(token, secret, {
      algorithms: ["HS256"],
      requiredClaims: ["exp"],
      currentDate: new Date(NOW),
    });
    return "ok";
  } catch (error) {
    if (error instanceof errors.JWSSignatureVerificationFailed) return "signature";
    if (error instanceof errors.JWTExpired) return "expired";
    if (error instanceof errors.JWTClaimValidationFailed) {
      if (error.claim === "exp") return "no_expiry";
      if (error.claim === "nbf" && error.reason === "check_failed") return "not_yet_valid";
      return "invalid";
    }
    if (error instanceof errors.JOSEError) return "invalid";
    throw error;
  }
}

/** Why `hs256.ts` refuses a token; "ok" when it accepts it. */
async function ownOutcome(token: string): Promise<string> {
  try {
    await verifyHs256(token, [await hs256Key(secret)], NOW);
    return "ok";
  } catch (error) {
    if (error instanceof Hs256Error) return error.reason;
    throw error;
  }
}

const HEADERS = [
  `{"alg":"HS256"}`,
  `{"alg":"HS256","typ":"JWT"}`,
  `{"alg":"HS256","b64":false}`,
  `{"alg":"none"}`,
  `{"alg":"HS384"}`,
  `{"typ":"JWT"}`,
  `["HS256"]`,
  `{"alg":"HS256"`,
];
const CLAIMS = [
  `{"role":"anon","exp":${seconds + 60}}`,
  `{"role":"anon","exp":${seconds}}`,
  `{"role":"anon","exp":${seconds - 1}}`,
  `{"role":"anon","exp":${seconds + 0.5}}`,
  `{"role":"anon"}`,
  `{"role":"anon","iat":"today"}`,
  `{"role":"anon","nbf":${seconds + 10}}`,
  `{"role":"anon","exp":"${seconds + 60}"}`,
  `{"role":"anon","exp":null}`,
  `{"role":"anon","exp":${seconds + 60},"nbf":${seconds + 10}}`,
  `{"role":"anon","exp":${seconds + 60},"nbf":${seconds}}`,
  `{"role":"anon","exp":${seconds + 60},"nbf":"soon"}`,
  `{"role":"anon","exp":${seconds + 60},"iat":"today"}`,
  `{"role":"anon","exp":${seconds + 60},"iat":${seconds + 3600}}`,
  `{"role":"anon","exp":${seconds - 1},"nbf":${seconds + 10}}`,
  `{"exp":${seconds + 60},"iat":"x","nbf":${seconds + 10}}`,
  `[{"exp":${seconds + 60}}]`,
  `"a string"`,
  `{"exp":`,
];

Deno.test("hs256.ts and jose agree on every crafted token, and on why they refuse it", async () => {
  let compared = 0;
  for (const header of HEADERS) {
    for (const claims of CLAIMS) {
      for (const key of [secret, otherSecret]) {
        const token = await sign(header, claims, key);
        const [own, jose] = [await ownOutcome(token), await joseOutcome(token)];
        assert.equal(own, jose, `${header} ${claims} (${key === secret ? "right" : "other"} key)`);
        compared++;
      }
    }
  }
  assert.equal(compared, HEADERS.length * CLAIMS.length * 2);
});

Deno.test("hs256.ts and jose agree on tampered, truncated and malformed tokens", async () => {
  const good = await sign(`{"alg":"HS256"}`, `{"role":"anon","exp":${seconds + 60}}`, secret);
  const [header, payload, signature] = good.split(".") as [string, string, string];
  const forged = text(`{"role":"service_role","exp":${seconds + 60}}`);
  const cases = {
    good,
    "payload swapped": `${header}.${forged}.${signature}`,
    "signature cut": `${header}.${payload}.${signature.slice(0, -2)}`,
    "signature one character short of a byte": `${header}.${payload}.${signature.slice(0, -1)}`,
    "no signature": `${header}.${payload}.`,
    "two parts": `${header}.${payload}`,
    "four parts": `${good}.${signature}`,
    "not base64url": `${header}.${payload}.${signature.replace(/.$/, "+")}`,
  };
  for (const [label, token] of Object.entries(cases)) {
    assert.equal(await ownOutcome(token), await joseOutcome(token), label);
  }
  assert.equal(await ownOutcome(good), "ok");
});

Deno.test("hs256.ts refuses a crit header, which jose accepts when it knows the extension", async () => {
  const token = await sign(
    `{"alg":"HS256","crit":["b64"],"b64":true}`,
    `{"role":"anon","exp":${seconds + 60}}`,
    secret,
  );
  assert.equal(await joseOutcome(token), "ok");
  assert.equal(await ownOutcome(token), "invalid");
});

Deno.test("protectedHeader() reads a token's header, and refuses what is not a JWS", () => {
  assert.deepEqual(protectedHeader(`${text(`{"alg":"ES256","kid":"k"}`)}.e30.sig`), {
    alg: "ES256",
    kid: "k",
  });
  for (const token of ["a.b", `${text("[1]")}.e30.sig`, `${text("{")}.e30.sig`, "!.e30.sig"]) {
    assert.throws(() => protectedHeader(token), Hs256Error, token);
  }
});
