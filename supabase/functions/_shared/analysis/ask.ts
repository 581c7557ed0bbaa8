/**
 * Asking the model for an analysis: the primary model first, the fallback
 * when the primary is busy (429, 529, 5xx, unreachable); the answer must be a
 * call of the analysis tool whose input passes the schema and holds no text
 * PostgreSQL cannot store (NUL, lone surrogates). An invalid answer
 * is asked for once more, telling the model what was wrong; a second invalid
 * answer is 502 `ai_invalid_answer`. Both models busy is 503
 * `ai_unavailable` with `retryAfter` — never a bare 500.
 *
 * The outcome is returned, not thrown, so the caller can record what the
 * attempts cost before it answers.
 *
 * @module
 */
import type Anthropic from "@anthropic-ai/sdk";
import { ProjectAnalysisFields } from "../../../../shared/analysis_schemas.ts";
import { aimodelFailure, aimodelFor, loadAimodelSdk } from "../platform/aimodel.ts";
import { unstorableParts } from "../platform/body.ts";
import type { Context } from "../platform/context.ts";
import { HttpError, retryLater } from "../platform/errors.ts";
import { ANALYSIS_TOOL_NAME, type AnalysisRequest } from "./prompt.ts";

/** Seconds a caller is told to wait when no model said how long. */
export const DEFAULT_RETRY_AFTER_SECONDS = 30;

/** Model answers asked for at most (the first, and one retry after an invalid one). */
export const MAX_ATTEMPTS = 2;

/** Tokens used by every answer of one analysis. */
export interface TokenUsage {
  input: number;
  output: number;
}

/** How asking ended. */
export type AskOutcome =
  | {
    outcome: "succeeded";
    fields: ProjectAnalysisFields;
    model: string;
    usage: TokenUsage;
    attempts: number;
  }
  | {
    outcome: "invalid_answer" | "unavailable" | "rejected";
    error: HttpError;
    /** The last model that answered or was asked; null when none was. */
    model: string | null;
    usage: TokenUsage;
    attempts: number;
  };

/** One model's reply, or why none came. */
type Reply =
  | { kind: "answer"; message: Anthropic.Message; model: string }
  | { kind: "busy"; retryAfterSeconds: number; model: string }
  | { kind: "rejected"; status: number; type: string | null; model: string };

/** Asks for an analysis with `request` (primary, then fallback), validating the answer. */
export async function askForAnalysis(ctx: Context, request: AnalysisRequest): Promise<AskOutcome> {
  const models = [...new Set([ctx.env.values.AIMODEL_PRIMARY, ctx.env.values.AIMODEL_FALLBACK])];
  const usage: TokenUsage = { input: 0, output: 0 };
  let messages = request.messages;
  let lastModel: string | null = null;
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    const reply = await firstAvailable(ctx, models, { ...request, messages });
    lastModel = reply.model;
    if (reply.kind === "busy") {
      return {
        outcome: "unavailable",
        error: aiUnavailable(reply.retryAfterSeconds),
        model: lastModel,
        usage,
        attempts: attempt,
      };
    }
    if (reply.kind === "rejected") {
      return {
        outcome: "rejected",
        error: new HttpError(
          502,
          "upstream_rejected",
          `The AI model provider refused the request (${reply.status})`,
          { model: reply.model, status: reply.status, type: reply.type },
        ),
        model: lastModel,
        usage,
        attempts: attempt,
      };
    }
    usage.input += reply.message.usage.input_tokens;
    usage.output += reply.message.usage.output_tokens;
    const read = readAnswer(reply.message);
    if (read.ok) {
      return {
        outcome: "succeeded",
        fields: read.fields,
        model: reply.model,
        usage,
        attempts: attempt,
      };
    }
    ctx.log.warn("invalid model answer", { model: reply.model, attempt, problem: read.problem });
    messages = [...request.messages, ...correction(reply.message, read.problem)];
  }
  return {
    outcome: "invalid_answer",
    error: new HttpError(
      502,
      "ai_invalid_answer",
      `The AI model did not answer with a valid analysis in ${MAX_ATTEMPTS} attempts`,
      { model: lastModel },
    ),
    model: lastModel,
    usage,
    attempts: MAX_ATTEMPTS,
  };
}

/** 503 `ai_unavailable`: every model is busy; `retryAfter` seconds (also as `Retry-After`). */
function aiUnavailable(retryAfterSeconds: number): HttpError {
  return retryLater(
    503,
    "ai_unavailable",
    (retryAfter) => `The AI models are busy; retry in ${retryAfter} s`,
    retryAfterSeconds,
  );
}

/**
 * Tries each model in order until one answers. A busy model passes the
 * request on; a refusal stops (the next model would refuse the same request).
 * When all are busy, the wait is the shortest any of them asked for.
 */
async function firstAvailable(
  ctx: Context,
  models: readonly string[],
  request: AnalysisRequest,
): Promise<Reply> {
  const client = await aimodelFor(ctx);
  const sdk = await loadAimodelSdk();
  const waits: number[] = [];
  let model = models[0]!;
  for (model of models) {
    try {
      const message = await client.messages.create({ ...request, model });
      return { kind: "answer", message, model };
    } catch (error) {
      const failure = aimodelFailure(sdk, error);
      if (!failure) throw error;
      ctx.log.warn("model call failed", { model, ...failure });
      if (failure.kind === "rejected") {
        return { kind: "rejected", status: failure.status, type: failure.type, model };
      }
      if (failure.retryAfterSeconds !== null) waits.push(failure.retryAfterSeconds);
    }
  }
  return {
    kind: "busy",
    retryAfterSeconds: waits.length > 0 ? Math.min(...waits) : DEFAULT_RETRY_AFTER_SECONDS,
    model,
  };
}

/** The analysis in a reply, or what is wrong with the reply. */
function readAnswer(
  message: Anthropic.Message,
): { ok: true; fields: ProjectAnalysisFields } | { ok: false; problem: string } {
  if (message.stop_reason === "max_tokens") {
    return { ok: false, problem: "The answer was cut off at the output token limit." };
  }
  const call = toolCall(message);
  if (!call) return { ok: false, problem: `The answer did not call ${ANALYSIS_TOOL_NAME}.` };
  const parsed = ProjectAnalysisFields.safeParse(call.input);
  if (parsed.success) {
    // The answer is stored (the cache is jsonb): text PostgreSQL cannot
    // store makes it as invalid as a schema miss, not a 500 at the write.
    const unstorable = unstorableParts(parsed.data).slice(0, 10).map((issue) =>
      `${issue.path || "(input)"}: ${issue.message}`
    );
    if (unstorable.length === 0) return { ok: true, fields: parsed.data };
    return {
      ok: false,
      problem: `The tool input holds text that cannot be stored: ${unstorable.join("; ")}.`,
    };
  }
  const issues = parsed.error.issues.slice(0, 10).map((issue) =>
    `${issue.path.join(".") || "(input)"}: ${issue.message}`
  );
  return { ok: false, problem: `The tool input did not match its schema: ${issues.join("; ")}.` };
}

function toolCall(message: Anthropic.Message): Anthropic.ToolUseBlock | undefined {
  return message.content.find((block): block is Anthropic.ToolUseBlock =>
    block.type === "tool_use" && block.name === ANALYSIS_TOOL_NAME
  );
}

/**
 * The turns that tell the model what was wrong: its own answer, then (for a
 * tool call) the tool's error result, or a plain reminder.
 */
function correction(message: Anthropic.Message, problem: string): Anthropic.MessageParam[] {
  const call = toolCall(message);
  const again = `${problem} Call ${ANALYSIS_TOOL_NAME} again with a corrected, complete input.`;
  if (!call) {
    const said = message.content.flatMap((block) => block.type === "text" ? [block.text] : [])
      .join("\n").trim();
    return said === ""
      ? [{ role: "user", content: again }]
      : [{ role: "assistant", content: said }, { role: "user", content: again }];
  }
  return [
    {
      role: "assistant",
      content: [{ type: "tool_use", id: call.id, name: call.name, input: call.input }],
    },
    {
      role: "user",
      content: [{ type: "tool_result", tool_use_id: call.id, is_error: true, content: again }],
    },
  ];
}
