/**
 * Response headers every function sends: the security header set (also what
 * the frontend host should serve, see the `security-headers` function) and
 * CORS. Computed once per runtime.
 *
 * @module
 */

/** Options for {@linkcode securityHeaders}. */
export interface SecurityHeaderOptions {
  /** The Supabase project URL, allowed for `connect-src` (REST, Realtime websockets). */
  supabaseUrl?: string;
}

/** The security header set: CSP, HSTS, frame, sniffing, referrer and permissions policies. */
export function securityHeaders(options: SecurityHeaderOptions = {}): Record<string, string> {
  const connect = ["'self'", "https://api.stripe.com"];
  if (options.supabaseUrl) {
    const url = new URL(options.supabaseUrl);
    connect.push(url.origin, `${url.protocol === "https:" ? "wss:" : "ws:"}//${url.host}`);
  }
  const csp = [
    "default-src 'self'",
    "script-src 'self' https://js.stripe.com",
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data: blob: https:",
    "font-src 'self' data:",
    `connect-src ${connect.join(" ")}`,
    "frame-src https://js.stripe.com https://hooks.stripe.com",
    "object-src 'none'",
    "base-uri 'self'",
    "form-action 'self'",
    "frame-ancestors 'none'",
    "upgrade-insecure-requests",
  ].join("; ");
  return {
    "Content-Security-Policy": csp,
    "Strict-Transport-Security": "max-age=63072000; includeSubDomains; preload",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "strict-origin-when-cross-origin",
    "Permissions-Policy":
      'camera=(), microphone=(), geolocation=(), payment=(self "https://js.stripe.com")',
  };
}

/** Request headers supabase-js and browsers send that CORS must allow. */
const ALLOWED_REQUEST_HEADERS =
  "authorization, x-client-info, apikey, content-type, x-upsert, cache-control, x-metadata";

/** A port number of an origin. */
const PORT = /^[0-9]{1,5}$/;

/** A list of response header name/value pairs. */
export type HeaderPairs = Array<[string, string]>;

const EXPOSE: [string, string] = [
  "Access-Control-Expose-Headers",
  "X-Request-Id, Retry-After",
];

/**
 * CORS policy: `*` when no origins are configured, else an allow-list. An
 * entry is an origin (`https://app.example.com`) or an origin whose port is
 * `*` (`http://localhost:*`: that host on any port, or on none), which is how
 * the local stack allows every loopback page and nothing else.
 */
export class CorsPolicy {
  private readonly anyOrigin: HeaderPairs = [EXPOSE, ["Access-Control-Allow-Origin", "*"]];
  private readonly unlisted: HeaderPairs = [EXPOSE, ["Vary", "Origin"]];
  private readonly exact: ReadonlySet<string>;
  /** Entries with port `*`, each without its `:*`. */
  private readonly anyPort: readonly string[];

  /** Creates the policy; an empty list allows every origin. */
  constructor(private readonly origins: readonly string[]) {
    this.exact = new Set(origins.filter((origin) => !origin.endsWith(":*")));
    this.anyPort = origins.filter((origin) => origin.endsWith(":*")).map((o) => o.slice(0, -2));
  }

  /** Whether a page at `origin` may call: always with no list, else when the list names it. */
  admits(origin: string): boolean {
    return this.origins.length === 0 || this.listed(origin);
  }

  /** Headers for a response to a request from `origin`. */
  headersFor(origin: string | null): HeaderPairs {
    if (this.origins.length === 0) return this.anyOrigin;
    if (!origin || !this.listed(origin)) return this.unlisted;
    return [...this.unlisted, ["Access-Control-Allow-Origin", origin]];
  }

  /** `origin` when answers to it name it in `Access-Control-Allow-Origin`, else null. */
  allowedOrigin(origin: string | null): string | null {
    return origin !== null && this.origins.length > 0 && this.listed(origin) ? origin : null;
  }

  private listed(origin: string): boolean {
    if (this.exact.has(origin)) return true;
    return this.anyPort.some((base) =>
      origin === base || (origin.startsWith(`${base}:`) && PORT.test(origin.slice(base.length + 1)))
    );
  }

  /** Extra headers for an OPTIONS preflight answer. */
  preflightHeaders(): Record<string, string> {
    return {
      "Access-Control-Allow-Methods": "POST, OPTIONS",
      "Access-Control-Allow-Headers": ALLOWED_REQUEST_HEADERS,
      "Access-Control-Max-Age": "86400",
    };
  }
}

/** The request id of a request: the caller's `X-Request-Id` (at most 100 characters), else a new one. */
export function requestIdOf(request: Request): string {
  return request.headers.get("x-request-id")?.slice(0, 100) || crypto.randomUUID();
}
