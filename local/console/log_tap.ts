/**
 * What the console's Requests page reads: the local stack's log lines, kept
 * in memory as they are written. The runtime writes one JSON line per event
 * (`platform/log.ts`); every request a function or the gateway answers ends
 * with a line whose `msg` is `"request"` (function, status, duration, caller
 * kind, request id), and every line of that request carries the same
 * `request_id`. The tap keeps the newest {@linkcode REQUEST_LIMIT} requests
 * and the lines of each, and passes every line on to the next sink
 * unchanged, so the terminal still shows them.
 *
 * @module
 */
import type { LogLevel, LogSink } from "../../supabase/functions/_shared/platform/log.ts";

/** The most requests kept (the newest). */
export const REQUEST_LIMIT = 500;
/** The most log lines kept per request. */
export const LINES_PER_REQUEST = 200;

/** One served request, from its closing `request` log line. */
export interface RequestRecord {
  requestId: string;
  /** When its `request` line was written (ISO). */
  at: string;
  /** The function, or `gateway` for what the gateway answered itself (a 404, a 401). */
  function: string;
  method: string;
  path: string | null;
  status: number;
  durationMs: number | null;
  /** The caller's kind as the factory resolved it (`none` before a token was read). */
  caller: string;
  /** The error code of a failure. */
  code: string | null;
}

/** One log line of a request. */
export interface LogLine {
  level: LogLevel;
  /** The line as written (JSON). */
  line: string;
}

interface Entry {
  lines: LogLine[];
  record?: RequestRecord;
}

/** Keeps the newest requests and their log lines; see the module doc. */
export class LogTap {
  /** By request id, in the order each was first seen (a Map keeps insertion order). */
  readonly #entries = new Map<string, Entry>();

  /** A sink that records each line and then hands it to `next`. */
  constructor(private readonly next: LogSink) {}

  /** The sink to give the runtime (`new Runtime(env, { logSink })`). */
  readonly sink: LogSink = (level, line) => {
    this.next(level, line);
    this.record(level, line);
  };

  /** The requests seen, newest first; `status` keeps one status class (`4` = 4xx) or code. */
  requests(filter: { status?: number | null; limit?: number } = {}): RequestRecord[] {
    const out: RequestRecord[] = [];
    const limit = filter.limit ?? REQUEST_LIMIT;
    for (const entry of [...this.#entries.values()].reverse()) {
      const record = entry.record;
      if (!record || !matchesStatus(record.status, filter.status ?? null)) continue;
      out.push(record);
      if (out.length >= limit) break;
    }
    return out;
  }

  /** One request and its lines, in the order written; null when unknown (or dropped). */
  request(requestId: string): { record: RequestRecord | null; lines: LogLine[] } | null {
    const entry = this.#entries.get(requestId);
    return entry ? { record: entry.record ?? null, lines: [...entry.lines] } : null;
  }

  private record(level: LogLevel, line: string): void {
    let fields: Record<string, unknown>;
    try {
      const parsed: unknown = JSON.parse(line);
      if (typeof parsed !== "object" || parsed === null) return;
      fields = parsed as Record<string, unknown>;
    } catch {
      return;
    }
    const requestId = fields.request_id;
    if (typeof requestId !== "string" || requestId === "") return;
    let entry = this.#entries.get(requestId);
    if (!entry) {
      entry = { lines: [] };
      this.#entries.set(requestId, entry);
      if (this.#entries.size > REQUEST_LIMIT) {
        this.#entries.delete(this.#entries.keys().next().value!);
      }
    }
    if (entry.lines.length < LINES_PER_REQUEST) entry.lines.push({ level, line });
    if (fields.msg === "request" && typeof fields.status === "number") {
      entry.record = {
        requestId,
        at: typeof fields.time === "string" ? fields.time : new Date().toISOString(),
        function: typeof fields.function === "string"
          ? fields.function
          : typeof fields.component === "string"
          ? fields.component
          : "unknown",
        method: typeof fields.method === "string" ? fields.method : "",
        path: typeof fields.path === "string" ? fields.path : null,
        status: fields.status,
        durationMs: typeof fields.duration_ms === "number" ? fields.duration_ms : null,
        caller: typeof fields.caller === "string" ? fields.caller : "none",
        code: typeof fields.code === "string" ? fields.code : null,
      };
    }
  }
}

/** Whether `status` passes `filter`: null passes all, 1–5 a class (4: 400–499), else one code. */
function matchesStatus(status: number, filter: number | null): boolean {
  if (filter === null) return true;
  if (filter >= 1 && filter <= 5) return Math.floor(status / 100) === filter;
  return status === filter;
}
