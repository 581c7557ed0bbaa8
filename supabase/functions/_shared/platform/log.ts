/**
 * Structured JSON logs, one line per event, never carrying secrets.
 *
 * @module
 */

/** Log levels in increasing severity. */
export type LogLevel = "debug" | "info" | "warn" | "error" | "silent";

const rank: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 99 };

/** Fields attached to a log line. */
export type LogFields = Record<string, unknown>;

/** Where log lines go: stdout/stderr by default. */
export type LogSink = (level: LogLevel, line: string) => void;

/** The default sink: warnings and errors to stderr, the rest to stdout. */
export const consoleSink: LogSink = (level, line) => {
  if (level === "error" || level === "warn") console.error(line);
  else console.log(line);
};

/** Writes JSON log lines at or above a level, with fields bound to it. */
export class Logger {
  /** Creates a logger; `bound` fields go on every line. */
  constructor(
    readonly level: LogLevel = "info",
    private readonly bound: LogFields = {},
    private readonly sink: LogSink = consoleSink,
  ) {}

  /** A logger that adds `fields` to every line. */
  with(fields: LogFields): Logger {
    return new Logger(this.level, { ...this.bound, ...fields }, this.sink);
  }

  /** Whether a line at `level` is written (callers skip building fields that would be dropped). */
  enabled(level: LogLevel): boolean {
    return rank[level] >= rank[this.level];
  }

  /** Logs at debug level. */
  debug(msg: string, fields?: LogFields): void {
    this.write("debug", msg, fields);
  }
  /** Logs at info level. */
  info(msg: string, fields?: LogFields): void {
    this.write("info", msg, fields);
  }
  /** Logs at warn level. */
  warn(msg: string, fields?: LogFields): void {
    this.write("warn", msg, fields);
  }
  /** Logs at error level. */
  error(msg: string, fields?: LogFields): void {
    this.write("error", msg, fields);
  }

  private write(level: LogLevel, msg: string, fields?: LogFields): void {
    if (rank[level] < rank[this.level]) return;
    const line = JSON.stringify({
      level,
      time: new Date().toISOString(),
      msg,
      ...this.bound,
      ...fields,
    });
    this.sink(level, line);
  }
}

/** A loggable description of an unknown thrown value (name, message, stack). */
export function describeError(error: unknown): LogFields {
  if (error instanceof Error) {
    return { error: error.name, error_message: error.message, stack: error.stack };
  }
  return { error: String(error) };
}
