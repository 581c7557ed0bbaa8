/**
 * Reading request bodies with a size limit, parsing them as a JSON object,
 * and refusing what PostgreSQL cannot store (NUL, lone surrogates, deep
 * nesting).
 *
 * @module
 */
import { readAtMost } from "../lib/bytes.ts";
import { HttpError } from "./errors.ts";

/** The default body limit: 1 MiB. */
export const DEFAULT_BODY_LIMIT = 1024 * 1024;

/** Reads the body as text, answering 413 past `limit` bytes (declared or actual). */
export async function readBodyText(req: Request, limit: number): Promise<string> {
  const length = req.headers.get("content-length");
  if (Number(length ?? "0") > limit) throw tooLarge(limit);
  // A declared length within the limit cannot be exceeded (the server
  // enforces Content-Length), so the body is read whole (and not through
  // `req.body`, which would turn a body the server already holds into a
  // stream first).
  if (length !== null) return await req.text();
  if (!req.body) return "";
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

/** At most this many problems are listed in `details` (the message names the first). */
const MAX_BODY_ISSUES = 20;

/**
 * How deep a body may nest (the body's own fields are level 1). Our bodies
 * nest a few levels, a processor event about ten; a value nested tens of
 * thousands of levels deep passes zod (a `z.record(z.string(), z.unknown())`
 * does not look inside) and then fails PostgreSQL's `jsonb` parser ("stack
 * depth limit exceeded"), a 500.
 */
export const MAX_BODY_DEPTH = 64;

/** One part of a body that cannot be stored, as `details` lists it. */
export interface BodyIssue {
  /** Where: the field path joined with ".", as zod's issues name it ("" is the body itself). */
  path: string;
  /** `nul_character`, `lone_surrogate` or `too_deep`. */
  code: "nul_character" | "lone_surrogate" | "too_deep";
  /** The rule, never the value. */
  message: string;
}

/**
 * What in `value` cannot be stored by PostgreSQL: every string — values and
 * keys, at any depth — containing U+0000 or a lone UTF-16 surrogate (an
 * unpaired \uD800–\uDFFF, which no UTF-8 text can hold), and any value
 * nested deeper than {@linkcode MAX_BODY_DEPTH}. PostgreSQL refuses such
 * text in `text` and `jsonb` ("invalid byte sequence", "unsupported Unicode
 * escape sequence"), so it would fail the function's first write with a 500
 * — or worse, be half-handled first (an e-mail sent, then its log row
 * refused). A valid pair (an emoji) is fine.
 *
 * The walk uses its own stack, not recursion: a 1 MiB body can nest half a
 * million levels deep. A refused key or a too-deep value is not descended
 * into (a path through a refused key would echo it); at most
 * {@linkcode MAX_BODY_ISSUES} issues are returned.
 */
export function unstorableParts(value: unknown): BodyIssue[] {
  const issues: BodyIssue[] = [];
  // Each node links to its parent, so a path is spelled out only for an issue.
  type Node = { value: unknown; depth: number; parent?: Node; segment?: string };
  const stack: Node[] = [{ value, depth: 0 }];
  while (stack.length > 0 && issues.length < MAX_BODY_ISSUES) {
    const node = stack.pop()!;
    const current = node.value;
    if (typeof current === "string") {
      const rule = textRule(current);
      if (rule) issues.push({ path: pathOf(node), code: rule, message: `Contains ${RULES[rule]}` });
      continue;
    }
    if (typeof current !== "object" || current === null) continue;
    if (node.depth >= MAX_BODY_DEPTH) {
      issues.push({
        path: pathOf(node),
        code: "too_deep",
        message: `Nests deeper than ${MAX_BODY_DEPTH} levels, more than a body may`,
      });
      continue;
    }
    const depth = node.depth + 1;
    if (Array.isArray(current)) {
      for (let i = current.length - 1; i >= 0; i--) {
        stack.push({ value: current[i], depth, parent: node, segment: String(i) });
      }
      continue;
    }
    const entries = Object.entries(current);
    for (let i = entries.length - 1; i >= 0; i--) {
      const [key, child] = entries[i]!;
      const rule = textRule(key);
      if (rule) {
        issues.push({
          path: pathOf(node),
          code: rule,
          message: `Has a key that contains ${RULES[rule]}`,
        });
      } else {
        stack.push({ value: child, depth, parent: node, segment: key });
      }
    }
  }
  return issues;

  function pathOf(node: Node): string {
    const segments: string[] = [];
    for (let at: Node | undefined = node; at?.segment !== undefined; at = at.parent) {
      segments.push(at.segment);
    }
    return segments.reverse().join(".");
  }
}

/**
 * 400 `invalid_input` when `body` holds what PostgreSQL cannot store (see
 * {@linkcode unstorableParts}); `details` lists where and why, as zod's
 * issues are listed, and the message names the first. The factory calls
 * this on every body it validates, before zod runs: one walk covers every
 * function, and no schema has to remember a refinement (a refinement on a
 * shared string schema would miss plain `z.string()`s, keys, and the values
 * of a `z.record(z.string(), z.unknown())`, which reach `jsonb`). The
 * webhooks, whose bodies the factory does not parse, call it themselves.
 */
export function refuseUnstorable(body: unknown): void {
  const issues = unstorableParts(body);
  const first = issues[0];
  if (!first) return;
  const where = first.path === "" ? "the body" : `"${first.path}"`;
  const rule = first.message.charAt(0).toLowerCase() + first.message.slice(1);
  throw new HttpError(
    400,
    "invalid_input",
    `Cannot accept the request body: ${where} ${rule}`,
    issues,
  );
}

const RULES = {
  nul_character: "a NUL character (U+0000), which cannot be stored",
  lone_surrogate:
    "a lone UTF-16 surrogate (an unpaired \\uD800-\\uDFFF), which is not valid Unicode",
} as const;

function textRule(text: string): "nul_character" | "lone_surrogate" | undefined {
  if (text.includes("\u0000")) return "nul_character";
  if (!text.isWellFormed()) return "lone_surrogate";
  return undefined;
}

function tooLarge(limit: number): HttpError {
  return new HttpError(
    413,
    "payload_too_large",
    `Cannot read the request body: it is larger than ${limit} bytes`,
  );
}
