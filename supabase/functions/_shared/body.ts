/**
 * Reading request bodies with a size limit.
 *
 * @module
 */
import { readAtMost } from "./bytes.ts";
import { HttpError } from "./errors.ts";

/** The default body limit: 1 MiB. */
export const DEFAULT_BODY_LIMIT = 1024 * 1024;

/** Reads the body as text, answering 413 past `limit` bytes (declared or actual). */
export async function readBodyText(req: Request, limit: number): Promise<string> {
  const declared = Number(req.headers.get("content-length") ?? "0");
  if (declared > limit) throw tooLarge(limit);
  if (!req.body) return "";
  // A declared length within the limit cannot be exceeded (the server
  // enforces Content-Length), so the body is read whole.
  if (req.headers.has("content-length")) return await req.text();
  const { bytes, truncated } = await readAtMost(req.body, limit);
  if (truncated) throw tooLarge(limit);
  return new TextDecoder().decode(bytes);
}

/** Parses a JSON object body; an empty body is `{}`. */
export function parseJsonObject(text: string): Record<string, unknown> {
  if (text.trim() === "") return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new HttpError(400, "invalid_json", "Cannot parse the request body: it is not valid JSON");
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new HttpError(
      400,
      "invalid_json",
      "Cannot parse the request body: expected a JSON object",
    );
  }
  return value as Record<string, unknown>;
}

function tooLarge(limit: number): HttpError {
  return new HttpError(
    413,
    "payload_too_large",
    `Cannot read the request body: it is larger than ${limit} bytes`,
  );
}
