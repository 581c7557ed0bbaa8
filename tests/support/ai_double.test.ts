import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import { aiClient, AiDouble } from "./ai_double.ts";

const MODEL = "claude-test-model";

Deno.test("ai: messages.create gets the configured reply in the API's shape", async () => {
  await using double = new AiDouble();
  double.respondWith((request) => `You said: ${request.messages.at(-1)?.content}`, MODEL);
  const ai = aiClient(double);

  const message = await ai.messages.create({
    model: MODEL,
    max_tokens: 64,
    system: "Be terse.",
    messages: [{ role: "user", content: "hello" }],
  });

  assert.match(message.id, /^msg_/);
  assert.equal(message.type, "message");
  assert.equal(message.role, "assistant");
  assert.equal(message.model, MODEL);
  assert.equal(message.stop_reason, "end_turn");
  assert.deepEqual(message.content, [{ type: "text", text: "You said: hello", citations: null }]);
  assert.ok(message.usage.input_tokens > 0 && message.usage.output_tokens > 0);
  assert.equal(double.received[0]?.system, "Be terse.");
  assert.equal(double.requests[0]?.headers.get("authorization"), "Bearer sk-ant-test-double-0000");

  const other = await ai.messages.create({
    model: "another-model",
    max_tokens: 8,
    messages: [{ role: "user", content: "hi" }],
  });
  assert.equal(
    (other.content[0] as Anthropic.TextBlock).text,
    "This is a reply from the AI test double.",
  );
});

Deno.test("ai: streaming yields the same text through the SDK's stream helper", async () => {
  await using double = new AiDouble();
  double.respondWith({ text: "A streamed answer that spans several chunks.", outputTokens: 9 });
  const ai = aiClient(double);

  const stream = ai.messages.stream({
    model: MODEL,
    max_tokens: 64,
    messages: [{ role: "user", content: "go" }],
  });
  let streamed = "";
  stream.on("text", (delta) => streamed += delta);
  const final = await stream.finalMessage();

  assert.equal(streamed, "A streamed answer that spans several chunks.");
  assert.equal(final.usage.output_tokens, 9);
  assert.equal(final.stop_reason, "end_turn");
});

Deno.test("ai: a failing model answers 429 with retry-after, then 529, then recovers", async () => {
  await using double = new AiDouble();
  double.failModel(MODEL, 429, 1, { retryAfterSeconds: 7 });
  double.failModel(MODEL, 529);
  const ai = aiClient(double);
  const request = {
    model: MODEL,
    max_tokens: 16,
    messages: [{ role: "user" as const, content: "hi" }],
  };

  await assert.rejects(ai.messages.create(request), (error: unknown) => {
    assert.ok(error instanceof Anthropic.RateLimitError);
    assert.equal(error.status, 429);
    assert.equal(error.headers?.get("retry-after"), "7");
    assert.equal((error.error as { error: { type: string } }).error.type, "rate_limit_error");
    return true;
  });
  await assert.rejects(
    ai.messages.create(request),
    (error: unknown) => error instanceof Anthropic.InternalServerError && error.status === 529,
  );
  assert.equal((await ai.messages.create(request)).type, "message");
  assert.equal(double.received.length, 1);
});

Deno.test("ai: missing key and invalid bodies answer the API's errors", async () => {
  await using double = new AiDouble();
  const noKey = await fetch(`${double.url}/v1/messages`, {
    method: "POST",
    body: "{}",
    headers: { "anthropic-version": "2023-06-01" },
  });
  assert.equal(noKey.status, 401);
  assert.equal((await noKey.json()).error.type, "authentication_error");

  const viaHeader = await fetch(`${double.url}/v1/messages`, {
    method: "POST",
    body: JSON.stringify({
      model: MODEL,
      max_tokens: 8,
      messages: [{ role: "user", content: "hi" }],
    }),
    headers: {
      "x-api-key": "sk-ant-raw",
      "anthropic-version": "2023-06-01",
      "content-type": "application/json",
    },
  });
  assert.equal(viaHeader.status, 200);
  assert.equal((await viaHeader.json()).type, "message");

  await assert.rejects(
    aiClient(double).messages.create({
      model: MODEL,
      max_tokens: 0,
      messages: [{ role: "user", content: "x" }],
    }),
    (error: unknown) =>
      error instanceof Anthropic.BadRequestError && /max_tokens/.test(error.message),
  );
});

Deno.test("ai: a tool reply calls the forced tool with the given input; no tools is a 400", async () => {
  await using double = new AiDouble();
  double.respondWith({ toolInput: { verdict: "ok" } });
  const ai = aiClient(double);
  const tools: Anthropic.Tool[] = [
    { name: "first", input_schema: { type: "object" } },
    { name: "record", input_schema: { type: "object" } },
  ];

  const message = await ai.messages.create({
    model: MODEL,
    max_tokens: 64,
    tools,
    tool_choice: { type: "tool", name: "record" },
    messages: [{ role: "user", content: "judge" }],
  });
  assert.equal(message.stop_reason, "tool_use");
  const [call, ...rest] = message.content;
  assert.equal(rest.length, 0);
  assert.equal(call?.type, "tool_use");
  assert.equal((call as Anthropic.ToolUseBlock).name, "record");
  assert.deepEqual((call as Anthropic.ToolUseBlock).input, { verdict: "ok" });
  assert.match((call as Anthropic.ToolUseBlock).id, /^toolu_/);

  await assert.rejects(
    ai.messages.create({ model: MODEL, max_tokens: 8, messages: [{ role: "user", content: "x" }] }),
    (error: unknown) => error instanceof Anthropic.BadRequestError,
  );
});
