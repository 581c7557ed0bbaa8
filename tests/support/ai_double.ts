/**
 * An AI Messages API (Anthropic) test double: `POST /v1/messages` (JSON or
 * `stream: true` server-sent events) and `POST /v1/messages/count_tokens`,
 * requiring an API key and `anthropic-version` like the API. Replies come
 * from per-model responders ({@linkcode AiDouble.respondWith}); a model can
 * be made to answer 429 (with `retry-after`), 529 or 500
 * ({@linkcode AiDouble.failModel}).
 *
 * What the SDK (@anthropic-ai/sdk@1.12.0) does: it takes `baseURL` in its
 * constructor (falling back to `ANTHROPIC_BASE_URL`), retries 408/409/429/5xx
 * twice by default (so {@linkcode aiClient} passes `maxRetries: 0`), sends
 * `anthropic-version: 2026-10-21`, and sends the `apiKey` as
 * `Authorization: Bearer <key>`, not `x-api-key`; the double accepts either.
 *
 * @module
 */
import Anthropic from "@anthropic-ai/sdk";
import { HttpDouble, jsonResponse, type RecordedRequest } from "./http_double.ts";

/** A Messages API request as the double received it. */
export type AiMessageRequest = Anthropic.MessageCreateParams;

/** A responder's detailed answer: text, or a call of one of the request's tools. */
export interface AiReply {
  /** Text of the answer (default none when `toolInput` is set). */
  text?: string;
  /**
   * Answers with a `tool_use` block carrying this input, for the tool the
   * request forces (`tool_choice: { type: "tool" }`) or else its first tool;
   * the stop reason is then `tool_use`. A request without tools is refused.
   */
  toolInput?: unknown;
  /** Default `end_turn` (`tool_use` with `toolInput`). */
  stopReason?: Anthropic.StopReason;
  /** Default: estimated from the request's text (≈ 4 characters a token). */
  inputTokens?: number;
  /** Default: estimated from `text` and `toolInput`. */
  outputTokens?: number;
}

/** Computes the reply to one request. */
export type AiResponder = (
  request: AiMessageRequest,
) => string | AiReply | Promise<string | AiReply>;

/** The API's error `type`s the double produces. */
export type AiErrorType = Anthropic.ErrorType;

/** A test API key the double accepts. */
export const TEST_AI_KEY = "sk-ant-test-double-0000";

const DEFAULT_REPLY = "This is a reply from the AI test double.";

const ERROR_TYPES: Record<number, { type: AiErrorType; message: string }> = {
  400: { type: "invalid_request_error", message: "Invalid request" },
  401: { type: "authentication_error", message: "invalid x-api-key" },
  403: {
    type: "permission_error",
    message: "Your API key does not have permission to use the specified resource.",
  },
  404: { type: "not_found_error", message: "Not found" },
  429: {
    type: "rate_limit_error",
    message: "Number of request tokens has exceeded your per-minute rate limit.",
  },
  500: { type: "api_error", message: "Internal server error" },
  529: { type: "overloaded_error", message: "Overloaded" },
};

interface ModelFailure {
  status: number;
  remaining: number;
  retryAfterSeconds: number;
  message?: string;
}

class AiApiError extends Error {
  constructor(readonly status: number, readonly type: AiErrorType, message: string) {
    super(message);
  }
}

function errorBody(type: AiErrorType, message: string) {
  return {
    type: "error",
    error: { type, message },
    request_id: `req_${crypto.randomUUID().replaceAll("-", "")}`,
  };
}

/**
 * The API key: `x-api-key`, or `Authorization: Bearer <key>`, which is what
 * the pinned SDK (1.12.0) sends for `apiKey` (its `apiKeyAuth`).
 */
export function apiKeyOf(request: RecordedRequest): string | null {
  const bearer = /^Bearer\s+(\S+)$/i.exec(request.headers.get("authorization") ?? "");
  return request.headers.get("x-api-key") || bearer?.[1] || null;
}

function estimateTokens(text: string): number {
  return Math.max(1, Math.ceil(text.length / 4));
}

function requestText(request: AiMessageRequest): string {
  const system = typeof request.system === "string"
    ? request.system
    : JSON.stringify(request.system ?? "");
  return system +
    request.messages.map((m) =>
      typeof m.content === "string" ? m.content : JSON.stringify(m.content)
    ).join("\n");
}

function validate(body: unknown): AiMessageRequest {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new AiApiError(400, "invalid_request_error", "Request body must be a JSON object.");
  }
  const request = body as Record<string, unknown>;
  if (typeof request.model !== "string" || request.model === "") {
    throw new AiApiError(400, "invalid_request_error", "model: Field required");
  }
  if (!Number.isInteger(request.max_tokens) || (request.max_tokens as number) < 1) {
    throw new AiApiError(
      400,
      "invalid_request_error",
      "max_tokens: Field required (a positive integer)",
    );
  }
  const messages = request.messages;
  if (!Array.isArray(messages) || messages.length === 0) {
    throw new AiApiError(
      400,
      "invalid_request_error",
      "messages: at least one message is required",
    );
  }
  messages.forEach((m, i) => {
    const role = (m as Record<string, unknown>)?.role;
    if (role !== "user" && role !== "assistant") {
      throw new AiApiError(
        400,
        "invalid_request_error",
        `messages.${i}.role: Input should be 'user' or 'assistant'`,
      );
    }
  });
  return body as AiMessageRequest;
}

/** The AI API double; start it with `new AiDouble()`. */
export class AiDouble extends HttpDouble {
  /** Messages requests that passed validation, oldest first. */
  readonly received: AiMessageRequest[] = [];
  readonly #responders = new Map<string | undefined, AiResponder>();
  #failures: (ModelFailure & { model: string })[] = [];

  /** Sets the reply (fixed or computed) for `model`, or for every model without its own responder when omitted. */
  respondWith(reply: AiResponder | AiReply | string, model?: string): void {
    this.#responders.set(model, typeof reply === "function" ? reply : () => reply);
  }

  /**
   * Makes the next `times` requests for `model` fail with `status`
   * (429 `rate_limit_error` with `retry-after`, 529 `overloaded_error`, 500 `api_error`, …).
   */
  failModel(
    model: string,
    status: number,
    times = 1,
    options: { retryAfterSeconds?: number; message?: string } = {},
  ): void {
    this.#failures.push({
      model,
      status,
      remaining: times,
      retryAfterSeconds: options.retryAfterSeconds ?? 1,
      message: options.message,
    });
  }

  /** Forgets recorded requests, failure rules, responders and received messages. */
  override reset(): void {
    super.reset();
    this.received.length = 0;
    this.#responders.clear();
    this.#failures = [];
  }

  /** Errors have the API's `{ type: "error", error: { type, message } }` shape. */
  protected override failureBody(status: number): unknown {
    const known = ERROR_TYPES[status] ??
      { type: "api_error" as const, message: `Injected ${status} failure` };
    return errorBody(known.type, known.message);
  }

  /** Routes `/v1/messages` and `/v1/messages/count_tokens`. */
  protected override async handle(request: RecordedRequest): Promise<Response> {
    try {
      if (
        request.method !== "POST" ||
        (request.path !== "/v1/messages" && request.path !== "/v1/messages/count_tokens")
      ) {
        throw new AiApiError(404, "not_found_error", `${request.method} ${request.path} not found`);
      }
      if (!apiKeyOf(request)) {
        throw new AiApiError(401, "authentication_error", "x-api-key header is required");
      }
      if (!request.headers.get("anthropic-version")) {
        throw new AiApiError(400, "invalid_request_error", "anthropic-version: header is required");
      }
      if (request.path === "/v1/messages/count_tokens") {
        const body = request.body as AiMessageRequest;
        return jsonResponse(200, {
          input_tokens: estimateTokens(requestText({ ...body, max_tokens: 1 })),
        });
      }
      const body = validate(request.body);
      const failure = this.#takeFailure(body.model);
      if (failure) return this.#failureResponse(failure);
      this.received.push(body);
      const message = await this.#reply(body);
      const headers = { "request-id": `req_${crypto.randomUUID().replaceAll("-", "")}` };
      return body.stream ? streamResponse(message, headers) : jsonResponse(200, message, headers);
    } catch (error) {
      if (!(error instanceof AiApiError)) throw error;
      return jsonResponse(error.status, errorBody(error.type, error.message));
    }
  }

  #takeFailure(model: string): ModelFailure | undefined {
    const failure = this.#failures.find((f) => f.model === model);
    if (!failure) return undefined;
    failure.remaining -= 1;
    if (failure.remaining <= 0) this.#failures = this.#failures.filter((f) => f !== failure);
    return failure;
  }

  #failureResponse(failure: ModelFailure): Response {
    const known = ERROR_TYPES[failure.status] ??
      { type: "api_error" as const, message: "Internal server error" };
    const headers: Record<string, string> = failure.status === 429
      ? { "retry-after": String(failure.retryAfterSeconds) }
      : {};
    return jsonResponse(
      failure.status,
      errorBody(known.type, failure.message ?? known.message),
      headers,
    );
  }

  async #reply(request: AiMessageRequest): Promise<Anthropic.Message> {
    const responder = this.#responders.get(request.model) ?? this.#responders.get(undefined) ??
      (() => DEFAULT_REPLY);
    const answer = await responder(request);
    const reply: AiReply = typeof answer === "string" ? { text: answer } : answer;
    const content: Anthropic.ContentBlock[] = [];
    if (reply.text !== undefined || reply.toolInput === undefined) {
      content.push({ type: "text", text: reply.text ?? "", citations: null });
    }
    if (reply.toolInput !== undefined) content.push(toolUse(request, reply.toolInput));
    const answered = (reply.text ?? "") +
      (reply.toolInput === undefined ? "" : JSON.stringify(reply.toolInput));
    return {
      id: `msg_${crypto.randomUUID().replaceAll("-", "").slice(0, 24)}`,
      type: "message",
      role: "assistant",
      model: request.model,
      content,
      container: null,
      diagnostics: null,
      stop_details: null,
      stop_reason: reply.stopReason ?? (reply.toolInput === undefined ? "end_turn" : "tool_use"),
      stop_sequence: null,
      usage: {
        cache_creation: null,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
        inference_geo: null,
        input_tokens: reply.inputTokens ?? estimateTokens(requestText(request)),
        output_tokens: reply.outputTokens ?? estimateTokens(answered),
        output_tokens_details: null,
        server_tool_use: null,
        service_tier: "standard",
        speed: null,
      },
    };
  }
}

/** A `tool_use` block for the tool `request` forces, else its first tool. */
function toolUse(request: AiMessageRequest, input: unknown): Anthropic.ToolUseBlock {
  const forced = request.tool_choice?.type === "tool" ? request.tool_choice.name : undefined;
  const names = (request.tools ?? []).flatMap((tool) => "name" in tool ? [tool.name] : []);
  const name = forced ?? names[0];
  if (name === undefined || !names.includes(name)) {
    throw new AiApiError(
      400,
      "invalid_request_error",
      forced ? `tool_choice: no tool named ${forced}` : "tools: the reply calls a tool, none given",
    );
  }
  return {
    type: "tool_use",
    id: `toolu_${crypto.randomUUID().replaceAll("-", "").slice(0, 24)}`,
    name,
    input,
    caller: { type: "direct" },
  };
}

/** The message as the API's server-sent event sequence (`message_start` … `message_stop`). */
function streamResponse(message: Anthropic.Message, headers: Record<string, string>): Response {
  const text = message.content.map((block) => block.type === "text" ? block.text : "").join("");
  const chunks = text.match(/[\s\S]{1,16}/g) ?? [];
  const events: Anthropic.RawMessageStreamEvent[] = [
    {
      type: "message_start",
      message: {
        ...message,
        content: [],
        stop_reason: null,
        usage: { ...message.usage, output_tokens: 1 },
      },
    },
    {
      type: "content_block_start",
      index: 0,
      content_block: { type: "text", text: "", citations: null },
    },
    ...chunks.map((chunk): Anthropic.RawMessageStreamEvent => ({
      type: "content_block_delta",
      index: 0,
      delta: { type: "text_delta", text: chunk },
    })),
    { type: "content_block_stop", index: 0 },
    {
      type: "message_delta",
      delta: {
        container: null,
        stop_details: null,
        stop_reason: message.stop_reason,
        stop_sequence: null,
      },
      usage: {
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
        input_tokens: message.usage.input_tokens,
        output_tokens: message.usage.output_tokens,
        output_tokens_details: null,
        server_tool_use: null,
      },
    },
    { type: "message_stop" },
  ];
  const body = events.map((event) => `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`)
    .join("");
  return new Response(body, {
    headers: { "content-type": "text/event-stream", "cache-control": "no-cache", ...headers },
  });
}

/** The real SDK pointed at the double (`baseURL`, no retries). */
export function aiClient(double: { url: string }, apiKey: string = TEST_AI_KEY): Anthropic {
  return new Anthropic({ apiKey, baseURL: double.url, maxRetries: 0 });
}
