/**
 * Configuration: read from the environment once, validated with zod. A value
 * that is present but malformed fails at cold start; a missing service secret
 * fails only the call that needs it, with 503 `not_configured`.
 *
 * @module
 */
import { z } from "zod";
import { HttpError } from "./errors.ts";

const optionalText = z.string().trim().min(1).optional();
const optionalUrl = z.url().optional();
const flag = z.enum(["true", "false", "1", "0"]).optional().transform((v) =>
  v === "true" || v === "1"
);
const list = z.string().optional().transform((v) =>
  (v ?? "").split(",").map((s) => s.trim()).filter((s) => s.length > 0)
);

/**
 * A JSON object of named API keys, as hosted Supabase gives functions the
 * new keys: `SUPABASE_PUBLISHABLE_KEYS` / `SUPABASE_SECRET_KEYS`, e.g.
 * `{"default":"sb_publishable_..."}` (https://supabase.com/docs/guides/functions/secrets).
 */
const keyMap = z.string().optional().transform((value, ctx) => {
  if (value === undefined || value.trim() === "") return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    parsed = undefined;
  }
  const entries = parsed !== null && typeof parsed === "object" && !Array.isArray(parsed)
    ? Object.entries(parsed)
    : [];
  if (entries.length === 0 || entries.some(([, key]) => typeof key !== "string" || key === "")) {
    ctx.addIssue({ code: "custom", message: "expected a JSON object of named keys" });
    return z.NEVER;
  }
  return Object.freeze(Object.fromEntries(entries)) as Readonly<Record<string, string>>;
});

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
const rateLimits = z.string().optional().transform((value, ctx) => {
  const overrides: RateLimitOverride[] = [];
  for (const entry of (value ?? "").split(",").map((s) => s.trim()).filter((s) => s !== "")) {
    const [, name, limit, windowSeconds] = RATE_LIMIT_ENTRY.exec(entry) ?? [];
    const numbers = [Number(limit), Number(windowSeconds)];
    if (!name || numbers.some((n) => !Number.isInteger(n) || n < 1 || n > MAX_RATE_LIMIT_VALUE)) {
      ctx.addIssue({
        code: "custom",
        message: `"${entry}" is not name=limit/windowSeconds with whole numbers from 1`,
      });
      return z.NEVER;
    }
    if (overrides.some((o) => o.name === name)) {
      ctx.addIssue({ code: "custom", message: `"${name}" is named twice` });
      return z.NEVER;
    }
    overrides.push(Object.freeze({ name, limit: numbers[0]!, windowSeconds: numbers[1]! }));
  }
  return Object.freeze(overrides) as readonly RateLimitOverride[];
});

/** Every environment variable the functions read. */
export const EnvSchema = z.object({
  SUPABASE_URL: optionalUrl,
  SUPABASE_DB_URL: optionalText,
  SUPABASE_JWT_SECRET: z.string().min(32).optional(),
  /** The legacy HS256 secret under a name hosted projects may set (`SUPABASE_*` is reserved). */
  JWT_SECRET: z.string().min(32).optional(),
  SUPABASE_JWKS: optionalText,
  SUPABASE_JWT_ISSUER: optionalText,
  SUPABASE_ANON_KEY: optionalText,
  SUPABASE_SERVICE_ROLE_KEY: optionalText,
  SUPABASE_PUBLISHABLE_KEYS: keyMap,
  SUPABASE_SECRET_KEYS: keyMap,
  SCHEDULER_TOKEN: z.string().min(32).optional(),
  LOCAL_DEV: flag,
  LOG_LEVEL: z.enum(["debug", "info", "warn", "error", "silent"]).default("info"),
  DB_POOL_MAX: z.coerce.number().int().min(1).max(100).default(5),
  SITE_URL: optionalUrl,
  ALLOWED_ORIGINS: list,
  ALLOWED_REDIRECT_ORIGINS: list,
  PAYPROC_SECRET_KEY: optionalText,
  PAYPROC_WEBHOOK_SECRET: optionalText,
  PAYPROC_CONNECT_WEBHOOK_SECRET: optionalText,
  PAYPROC_API_BASE: optionalUrl,
  PAYPROC_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(10_000),
  RESEND_API_KEY: optionalText,
  RESEND_BASE_URL: optionalUrl,
  EMAIL_FROM: optionalText,
  EMAIL_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(10_000),
  SEND_EMAIL_HOOK_SECRET: optionalText,
  HANDOVER_INSPECTION_DAYS: z.coerce.number().int().min(1).max(60).default(7),
  /** Days a deal's money may sit in escrow before admins are warned (the processor holds 90). */
  ESCROW_ALERT_DAYS: z.coerce.number().int().min(1).max(89).default(75),
  AIMODEL_API_KEY: optionalText,
  AIMODEL_BASE_URL: optionalUrl,
  AIMODEL_PRIMARY: z.string().min(1).default("claude-haiku-4-5"),
  AIMODEL_FALLBACK: z.string().min(1).default("claude-sonnet-4-5"),
  AIMODEL_TIMEOUT_MS: z.coerce.number().int().min(1000).max(120_000).default(30_000),
  ANALYZE_RATE_PER_HOUR: z.coerce.number().int().min(1).max(10_000).default(10),
  RATE_LIMITS: rateLimits,
});

/** Validated configuration values. */
export type EnvValues = z.infer<typeof EnvSchema>;

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
    const parsed = EnvSchema.safeParse(source);
    if (!parsed.success) {
      const names = parsed.error.issues.map((issue) => `"${String(issue.path[0])}"`);
      throw new Error(`Cannot read configuration: malformed ${names.join(", ")}`);
    }
    this.values = parsed.data;
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
