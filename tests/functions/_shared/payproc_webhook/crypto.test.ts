import assert from "node:assert/strict";
import Stripe from "stripe";
import { hmacCryptoProvider } from "../../../../supabase/functions/_shared/payproc_webhook/crypto.ts";

Deno.test("hmacCryptoProvider computes the SDK's documented sample HMACs", async () => {
  // The samples of the SDK's CryptoProvider interface.
  const samples: Array<[string, string]> = [
    ["", "f7f9bd47fb987337b5796fdc1fdb9ba221d0d5396814bfcaf9521f43fd8927fd"],
    ["\ud83d\ude00", "837da296d05c4fe31f61d5d7ead035099d9585a5bcde87de952012a78f0b0c43"],
  ];
  for (const [payload, hex] of samples) {
    assert.equal(hmacCryptoProvider.computeHMACSignature(payload, "test_secret"), hex);
    assert.equal(await hmacCryptoProvider.computeHMACSignatureAsync(payload, "test_secret"), hex);
  }
});

Deno.test("hmacCryptoProvider agrees with the SDK's WebCrypto provider, and the SDK verifies with it", async () => {
  const subtle = Stripe.createSubtleCryptoProvider();
  const payload = JSON.stringify({ id: "evt_1", object: "event", data: { object: { id: "x" } } });
  assert.equal(
    await hmacCryptoProvider.computeHMACSignatureAsync(payload, "whsec_a"),
    await subtle.computeHMACSignatureAsync(payload, "whsec_a"),
  );
  const bytes = new TextEncoder().encode(payload);
  assert.deepEqual(
    await hmacCryptoProvider.computeSHA256Async(bytes),
    await subtle.computeSHA256Async(bytes),
  );
  const header = await Stripe.webhooks.generateTestHeaderStringAsync({
    payload,
    secret: "whsec_a",
  });
  const event = await Stripe.webhooks.constructEventAsync(
    payload,
    header,
    "whsec_a",
    undefined,
    hmacCryptoProvider,
  );
  assert.equal(event.id, "evt_1");
  await assert.rejects(
    Stripe.webhooks.constructEventAsync(payload, header, "whsec_b", undefined, hmacCryptoProvider),
    Stripe.errors.StripeSignatureVerificationError,
  );
});
