/**
 * How the console's actions (call it, replay, run now) reach a function:
 * one POST through the gateway, with a request id of the console's, so the
 * call is checked, logged and listed on the Requests page as any other.
 *
 * @module
 */
import { prettyJson } from "./layout.ts";
import type { ConsoleContext } from "./types.ts";

/** What came back from {@linkcode sendThrough}. */
export interface Sent {
  /** The request id it was sent with (its Requests page). */
  requestId: string;
  status: number;
  ok: boolean;
  /** How long the answer took, in whole milliseconds. */
  ms: number;
  /** The body parsed, or its text when it is not JSON. */
  body: unknown;
  /** The body for a `<pre>`: pretty JSON, or the text as it came. */
  shown: string;
}

/** POSTs `body` to function `name` through the gateway with `headers`. */
export async function sendThrough(
  context: ConsoleContext,
  origin: string,
  name: string,
  headers: Record<string, string>,
  body: string,
): Promise<Sent> {
  const requestId = crypto.randomUUID();
  const started = performance.now();
  const response = await context.gateway(
    new Request(`${origin}/functions/v1/${name}`, {
      method: "POST",
      headers: { ...headers, "x-request-id": requestId },
      body,
    }),
  );
  const text = await response.text();
  const ms = Math.round(performance.now() - started);
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // Not JSON: kept as it came.
  }
  return {
    requestId,
    status: response.status,
    ok: response.ok,
    ms,
    body: parsed,
    shown: typeof parsed === "string" ? parsed : prettyJson(parsed),
  };
}
