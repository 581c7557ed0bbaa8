import assert from "node:assert/strict";
import { randomHex, sha256Hex, toHex } from "../../../../supabase/functions/_shared/lib/hex.ts";

Deno.test("toHex writes two lower-case digits per byte", () => {
  assert.equal(toHex(new Uint8Array([0, 1, 15, 16, 255])), "00010f10ff");
  assert.equal(toHex(new Uint8Array()), "");
});

Deno.test("sha256Hex matches the FIPS 180-2 vector for strings and bytes", async () => {
  const abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
  assert.equal(await sha256Hex("abc"), abc);
  assert.equal(await sha256Hex(new TextEncoder().encode("abc")), abc);
});

Deno.test("randomHex gives fresh digits of the asked length", () => {
  const a = randomHex(8);
  assert.match(a, /^[0-9a-f]{16}$/);
  assert.notEqual(a, randomHex(8));
});
