/**
 * Configuration: read from the environment once, each variable by a small
 * parser of its kind (text, URL, flag, list, number…). A value that is
 * present but malformed fails at cold start; a missing service secret fails
 * only the call that needs it, with 503 `not_configured`.
 *
 * Plain TypeScript, no zod: every function reads its configuration at cold
 * start, and one that takes no body loads no schema library at all
 * (`bench/cold_start.ts`).
 *
 * @module
 */
import { isLoopbackHost } from "../lib/loopback.ts";
import { HttpError } from "./errors.ts";

/**
 * The local stack's scheduler token (`deno task start` gives it to its
 * scheduler and prints it). It is public, so only a loopback `SUPABASE_URL`
 * accepts it (see {@linkcode ConfigurationError}).
 */
export const LOCAL_SCHEDULER_TOKEN = "local-scheduler-token-for-development-only-0000";

/**
 * The configuration cannot be served: a variable is malformed, or a
 * local-only switch is set where `SUPABASE_URL` is not a loopback address
 * (`LOCAL_DEV=true`, which opens scheduled functions to the anon key and
 * captures e-mail; or `SCHEDULER_TOKEN` set to the well-known
 * {@linkcode LOCAL_SCHEDULER_TOKEN}). Every request of a function is then
 * answered 500 `misconfigured` with this message, which names the variables
 * and never their values.
 */
export class ConfigurationError extends Error {
  override name = "ConfigurationError";

  /** `variables`: the names at fault. */
  constructor(message: string, readonly variables: readonly string[]) {
    super(message);
  }
}

/** Thrown by a parser: the variable is set but malformed (named by {@linkcode Env}, never shown). */
class Malformed extends Error {}

/** Reads one variable from its raw value (`undefined`: unset); throws {@linkcode Malformed}. */
type Parser<T> = (raw: string | undefined) => T;

function refuse(): never {
  throw new Malformed();
}

/** Text of at least one character once trimmed; trimmed. */
const text: Parser<string | undefined> = (raw) =>
  raw === undefined ? undefined : raw.trim() || refuse();

/** A secret of at least `length` characters, as given (not trimmed). */
const secret = (length: number): Parser<string | undefined> => (raw) =>
  raw === undefined || raw.length >= length ? raw : refuse();

/** A non-empty name, as given, or `fallback` when unset. */
const nonEmpty = (fallback: string): Parser<string> => (raw) =>
  raw === undefined ? fallback : raw || refuse();

/** A URL the WHATWG parser accepts, trimmed, its tabs and line breaks dropped as the parser does. */
const url: Parser<string | undefined> = (raw) => {
  if (raw === undefined) return undefined;
  const trimmed = raw.trim();
  return URL.canParse(trimmed) ? trimmed.replace(/[\t\n\r]/g, "") : refuse();
};

/** `true`/`1` or `false`/`0` exactly; unset is false. */
const flag: Parser<boolean> = (raw) => {
  if (raw === undefined || raw === "false" || raw === "0") return false;
  return raw === "true" || raw === "1" || refuse();
};

/** Comma-separated items, trimmed, empty ones dropped; unset is empty. */
const list: Parser<string[]> = (raw) =>
  (raw ?? "").split(",").map((s) => s.trim()).filter((s) => s.length > 0);

/** One of `choices` exactly, or `fallback` when unset. */
const oneOf = <const C extends string>(choices: readonly C[], fallback: C): Parser<C> => (raw) =>
  raw === undefined ? fallback : choices.find((choice) => choice === raw) ?? refuse();

/** A whole number from `min` to `max` as `Number()` reads it ("  5", "1e2"), or `fallback` when unset. */
const wholeNumber = (min: number, max: number, fallback: number): Parser<number> => (raw) => {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  return Number.isInteger(n) && n >= min && n <= max ? n : refuse();
};

/**
 * A JSON object of named API keys, as hosted Supabase gives functions the
 * new keys: `SUPABASE_PUBLISHABLE_KEYS` / `SUPABASE_SECRET_KEYS`, e.g.
 * `{"default":"sb_publishable_..."}` (https://supabase.com/docs/guides/functions/secrets).
 * Unset or blank is undefined; anything but an object of non-empty strings is malformed.
 */
const keyMap: Parser<Readonly<Record<string, string>> | undefined> = (raw) => {
  if (raw === undefined || raw.trim() === "") return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    refuse();
  }
  const entries = parsed !== null && typeof parsed === "object" && !Array.isArray(parsed)
    ? Object.entries(parsed)
    : [];
  if (entries.length === 0 || entries.some(([, key]) => typeof key !== "string" || key === "")) {
    refuse();
  }
  return Object.freeze(Object.fromEntries(entries)) as Readonly<Record<string, string>>;
};

/** One entry of `RATE_LIMITS`: function `name` allows `limit` calls per `windowSeconds`. */
export interface RateLimitOverride {
  readonly name: string;
  readonly limit: number;
  readonly windowSeconds: number;
}

/** The largest limit or window `RATE_LIMITS` takes: the database counts in 32-bit integers. */
const MAX_RATE_LIMIT_VALUE = 2_147_483_647;
const RATE_LIMIT_ENTRY = /^([a-z0-9][a-z0-9-]*)\s*=\s*(\d+)\s*\/\s*(\d+)$/;

/**
 * `RATE_LIMITS`: overrides of the limits functions declare, comma-separated
 * `name=limit/windowSeconds` (e.g. `create-checkout=20/60,payment-status=120/60`),
 * each a whole number from 1; a function named twice is malformed. Whether
 * each name is a function that declares a limit is checked by the factory
 * when it builds (`function.ts`).
 */
const rateLimits: Parser<readonly RateLimitOverride[]> = (raw) => {
  const overrides: RateLimitOverride[] = [];
  for (const entry of list(raw)) {
    const [, name, limit, windowSeconds] = RATE_LIMIT_ENTRY.exec(entry) ?? [];
    const numbers = [Number(limit), Number(windowSeconds)];
    if (!name || numbers.some((n) => !Number.isInteger(n) || n < 1 || n > MAX_RATE_LIMIT_VALUE)) {
      refuse();
    }
    if (overrides.some((o) => o.name === name)) refuse();
    overrides.push(Object.freeze({ name, limit: numbers[0]!, windowSeconds: numbers[1]! }));
  }
  return Object.freeze(overrides);
};

/** Every environment variable the functions read, each with its parser. */
const PARSERS = {
  SUPABASE_URL: url,
  SUPABASE_DB_URL: text,
  SUPABASE_JWT_SECRET: secret(32),
  /** The legacy HS256 secret under a name hosted projects may set (`SUPABASE_*` is reserved). */
  JWT_SECRET: secret(32),
  SUPABASE_JWKS: text,
  SUPABASE_JWT_ISSUER: text,
  SUPABASE_ANON_KEY: text,
  SUPABASE_SERVICE_ROLE_KEY: text,
  SUPABASE_PUBLISHABLE_KEYS: keyMap,
  SUPABASE_SECRET_KEYS: keyMap,
  SCHEDULER_TOKEN: secret(32),
  LOCAL_DEV: flag,
  LOG_LEVEL: oneOf(["debug", "info", "warn", "error", "silent"], "info"),
  DB_POOL_MAX: wholeNumber(1, 100, 5),
  SITE_URL: url,
  ALLOWED_ORIGINS: list,
  ALLOWED_REDIRECT_ORIGINS: list,
  PAYPROC_SECRET_KEY: text,
  PAYPROC_WEBHOOK_SECRET: text,
  PAYPROC_CONNECT_WEBHOOK_SECRET: text,
  PAYPROC_API_BASE: url,
  PAYPROC_TIMEOUT_MS: wholeNumber(100, 60_000, 10_000),
  RESEND_API_KEY: text,
  RESEND_BASE_URL: url,
  EMAIL_FROM: text,
  EMAIL_TIMEOUT_MS: wholeNumber(100, 60_000, 10_000),
  SEND_EMAIL_HOOK_SECRET: text,
  HANDOVER_INSPECTION_DAYS: wholeNumber(1, 60, 7),
  /** Days a deal's money may sit in escrow before admins are warned (the processor holds 90). */
  ESCROW_ALERT_DAYS: wholeNumber(1, 89, 75),
  AIMODEL_API_KEY: text,
  AIMODEL_BASE_URL: url,
  AIMODEL_PRIMARY: nonEmpty("claude-haiku-4-5"),
  AIMODEL_FALLBACK: nonEmpty("claude-sonnet-4-5"),
  AIMODEL_TIMEOUT_MS: wholeNumber(1000, 120_000, 30_000),
  ANALYZE_RATE_PER_HOUR: wholeNumber(1, 10_000, 10),
  RATE_LIMITS: rateLimits,
} satisfies Record<string, Parser<unknown>>;

/** Validated configuration values. */
export type EnvValues = { [K in keyof typeof PARSERS]: ReturnType<(typeof PARSERS)[K]> };

/** The name of every variable the functions read, in the order above. */
export const ENV_NAMES = Object.freeze(Object.keys(PARSERS)) as readonly (keyof EnvValues)[];

/** Names of the variables that may be unset until a call needs them. */
export type OptionalEnvName = {
  [K in keyof EnvValues]-?: undefined extends EnvValues[K] ? K : never;
}[keyof EnvValues];

/** Validated configuration with {@linkcode Env.require} for secrets a call needs. */
export class Env {
  /** The validated values. */
  readonly values: EnvValues;

  /** Validates `source`; throws naming every malformed variable. */
  constructor(source: Record<string, string | undefined>) {
    const values: Record<string, unknown> = {};
    const malformed: string[] = [];
    for (const [name, parse] of Object.entries(PARSERS)) {
      try {
        values[name] = (parse as Parser<unknown>)(source[name]);
      } catch (error) {
        if (!(error instanceof Malformed)) throw error;
        malformed.push(name);
      }
    }
    if (malformed.length > 0) {
      throw new ConfigurationError(
        `Cannot read configuration: malformed ${malformed.map((name) => `"${name}"`).join(", ")}`,
        malformed,
      );
    }
    this.values = values as EnvValues;
    const localOnly = localOnlySettings(this.values);
    if (localOnly.length > 0) {
      throw new ConfigurationError(
        `Cannot serve: ${localOnly.join(" and ")} must not be set where SUPABASE_URL is not a ` +
          `loopback address (LOCAL_DEV=true, and SCHEDULER_TOKEN set to the local stack's ` +
          `well-known token, are for the local stack only)`,
        localOnly,
      );
    }
  }

  /** The value of `name`, or a 503 `not_configured` naming the variable. */
  require<K extends OptionalEnvName>(name: K): NonNullable<EnvValues[K]> {
    const value = this.values[name];
    if (value === undefined || value === null) {
      throw new HttpError(
        503,
        "not_configured",
        `Cannot serve this request: ${name} is not configured`,
        { variable: name },
      );
    }
    return value as NonNullable<EnvValues[K]>;
  }

  /** Whether `name` has a value; for reports that must never show values. */
  has(name: keyof EnvValues): boolean {
    const value = this.values[name];
    return value !== undefined && !(Array.isArray(value) && value.length === 0);
  }
}

/**
 * The variables `values` sets to a local-only value while its `SUPABASE_URL`
 * is set and not loopback (hosted always sets it to the project's URL); none
 * when the URL is loopback or unset.
 */
function localOnlySettings(values: EnvValues): string[] {
  if (values.SUPABASE_URL === undefined) return [];
  if (isLoopbackHost(new URL(values.SUPABASE_URL).hostname)) return [];
  const set: string[] = [];
  if (values.LOCAL_DEV) set.push("LOCAL_DEV");
  if (values.SCHEDULER_TOKEN === LOCAL_SCHEDULER_TOKEN) set.push("SCHEDULER_TOKEN");
  return set;
}
