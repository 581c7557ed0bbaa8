/**
 * A typed `invoke(supabase, name, body)` over `supabase.functions.invoke`:
 * the body is typed from the function's schema, the answer is validated
 * against its response schema, and failures come back as one error shape
 * read from the `{ error: { code, message, details? } }` body every function
 * answers with.
 *
 * The client is typed structurally, so `shared/` does not load supabase-js.
 *
 * @module
 */
import type { z } from "zod";
import {
  type FunctionName,
  type FunctionOutput,
  type FunctionRequest,
  FUNCTIONS,
} from "./functions.ts";
import { ErrorBody } from "./schemas.ts";

/** The part of a supabase-js client that {@linkcode invoke} uses. */
export interface FunctionsInvoker {
  functions: {
    invoke(
      functionName: string,
      options?: { body?: Record<string, unknown>; headers?: Record<string, string> },
    ): Promise<{ data: unknown; error: unknown }>;
  };
}

/** The request body of function `N`: its catalog schema's input; undefined when it takes none. */
export type InvokeInput<N extends FunctionName> = FunctionRequest<N>;

/** The answer of function `N`: its catalog schema's output. */
export type InvokeOutput<N extends FunctionName> = FunctionOutput<N>;

/** Why an invocation failed. */
export interface InvokeError {
  /** HTTP status; null when no response arrived. */
  status: number | null;
  /** The function's error code (`unauthorized`, `invalid_input`, ...), or `network_error`, `relay_error`, `http_error`, `invalid_response`. */
  code: string;
  /** A sentence for people. */
  message: string;
  /** Structured detail (e.g. zod issues), when the function sent some. */
  details?: unknown;
}

/** `{ data, error }`: exactly one of them is set. */
export type InvokeResult<T> = { data: T; error: null } | { data: null; error: InvokeError };

/** The body argument: optional when the function takes none or accepts `{}`. */
export type InvokeBodyArgs<N extends FunctionName> = undefined extends InvokeInput<N>
  ? [body?: InvokeInput<N>]
  : Record<string, never> extends InvokeInput<N> ? [body?: InvokeInput<N>]
  : [body: InvokeInput<N>];

/**
 * Calls function `name` with `body` through the client's `functions.invoke`
 * (which attaches the signed-in user's token) and returns `{ data, error }`.
 */
export async function invoke<N extends FunctionName>(
  client: FunctionsInvoker,
  name: N,
  ...[body]: InvokeBodyArgs<N>
): Promise<InvokeResult<InvokeOutput<N>>> {
  let result: { data: unknown; error: unknown };
  try {
    result = await client.functions.invoke(
      name,
      body === undefined ? undefined : { body: body as Record<string, unknown> },
    );
  } catch (error: unknown) {
    return { data: null, error: await invokeError(error) };
  }
  if (result.error) return { data: null, error: await invokeError(result.error) };

  const output: z.ZodType = FUNCTIONS[name].output;
  const parsed = output.safeParse(result.data);
  if (!parsed.success) {
    return {
      data: null,
      error: {
        status: 200,
        code: "invalid_response",
        message: `Cannot read the answer of "${name}": it does not match the contract`,
        details: parsed.error.issues,
      },
    };
  }
  return { data: parsed.data as InvokeOutput<N>, error: null };
}

/** Turns a supabase-js functions error (or anything thrown) into an {@linkcode InvokeError}. */
async function invokeError(error: unknown): Promise<InvokeError> {
  const name = error instanceof Error ? error.name : "";
  const context = (error as { context?: unknown } | null)?.context;
  const response = context instanceof Response ? context : undefined;
  if (name === "FunctionsHttpError" && response) {
    const body: unknown = await response.clone().json().catch(() => undefined);
    const parsed = ErrorBody.safeParse(body);
    if (parsed.success) {
      const { code, message, details } = parsed.data.error;
      return details === undefined
        ? { status: response.status, code, message }
        : { status: response.status, code, message, details };
    }
    return {
      status: response.status,
      code: "http_error",
      message: `The function answered ${response.status} without an error body`,
    };
  }
  if (name === "FunctionsRelayError") {
    return {
      status: response?.status ?? null,
      code: "relay_error",
      message: "The functions gateway could not reach the function",
    };
  }
  return {
    status: null,
    code: "network_error",
    message: error instanceof Error ? error.message : String(error),
  };
}
