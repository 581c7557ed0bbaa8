import assert from "node:assert/strict";
import { createClient } from "@supabase/supabase-js";
import { invoke } from "../../shared/invoke.ts";

/** A supabase-js client whose fetch answers with `answer` and records the requests. */
function clientAnswering(answer: (request: Request) => Response | Promise<Response>) {
  const requests: Request[] = [];
  const client = createClient("http://127.0.0.1:54321", "anon-key", {
    auth: { persistSession: false, autoRefreshToken: false, detectSessionInUrl: false },
    global: {
      fetch: (input: RequestInfo | URL, init?: RequestInit) => {
        const request = new Request(input, init);
        requests.push(request.clone());
        return Promise.resolve(answer(request));
      },
    },
  });
  return { client, requests };
}

function json(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json" },
  });
}

Deno.test("invoke() posts the body to the function and returns its validated answer", async () => {
  const { client, requests } = clientAnswering(() => json({ priceId: "price_123" }));
  const { data, error } = await invoke(client, "get-price-id", { plan: "pro_monthly" });
  assert.equal(error, null);
  assert.deepEqual(data, { priceId: "price_123" });
  const [request] = requests;
  assert.equal(new URL(request!.url).pathname, "/functions/v1/get-price-id");
  assert.equal(request!.method, "POST");
  assert.deepEqual(await request!.json(), { plan: "pro_monthly" });
});

Deno.test("invoke() reads the function's error body into { code, message, details }", async () => {
  const { client } = clientAnswering(() =>
    json({
      error: { code: "invalid_input", message: "Invalid body", details: [{ path: ["plan"] }] },
    }, 400)
  );
  const { data, error } = await invoke(client, "get-price-id", { plan: "" });
  assert.equal(data, null);
  assert.deepEqual(error, {
    status: 400,
    code: "invalid_input",
    message: "Invalid body",
    details: [{ path: ["plan"] }],
  });
});

Deno.test("invoke() reports an answer that breaks the contract", async () => {
  const { client } = clientAnswering(() => json({ url: "not a url" }));
  const { data, error } = await invoke(client, "customer-portal");
  assert.equal(data, null);
  assert.equal(error?.code, "invalid_response");
});

Deno.test("invoke() reports errors without an error body, relay errors and network failures", async () => {
  const plain = clientAnswering(() => new Response("boom", { status: 502 }));
  assert.deepEqual((await invoke(plain.client, "customer-portal")).error?.code, "http_error");

  const relay = clientAnswering(() =>
    new Response("", { status: 500, headers: { "x-relay-error": "true" } })
  );
  assert.equal((await invoke(relay.client, "customer-portal")).error?.code, "relay_error");

  const down = clientAnswering(() => Promise.reject(new TypeError("connection refused")));
  const { error } = await invoke(down.client, "check-subscription");
  assert.equal(error?.code, "network_error");
  assert.equal(error?.status, null);
});

Deno.test("invoke() validates a test-payproc answer against TestPayprocOutput", async () => {
  const answer = {
    ok: false,
    reason: "no price has lookup key pro_yearly",
    mode: "test",
    account: { id: "acct_123", country: "US" },
    webhookSecretSet: true,
    connectWebhookSecretSet: false,
    connectEnabled: null,
    prices: [{ key: "pro_yearly", priceId: null, found: false, active: false }],
    latencyMs: 12,
  };
  const valid = clientAnswering(() => json(answer));
  const { data, error } = await invoke(valid.client, "test-payproc");
  assert.equal(error, null);
  assert.deepEqual(data, answer);

  const invalid = clientAnswering(() => json({ ...answer, mode: "sandbox" }));
  const broken = await invoke(invalid.client, "test-payproc");
  assert.equal(broken.data, null);
  assert.equal(broken.error?.code, "invalid_response");
  assert.equal(broken.error?.status, 200);
});
