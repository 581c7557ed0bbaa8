/**
 * What the local pages (the console, the mail viewer) share: they answer
 * only to a loopback `Host` — a page on another name that resolves to
 * 127.0.0.1 (DNS rebinding) reads nothing — and carry the runtime's headers
 * without CORS (a page on another origin must not read them), with their own
 * CSP, framing and referrer rules, never cached.
 *
 * @module
 */
import type { HeaderPairs } from "../supabase/functions/_shared/platform/headers.ts";
import type { Runtime } from "../supabase/functions/_shared/platform/runtime.ts";

/** Whether `hostname` (a URL's, so IPv6 in brackets) names this machine's loopback. */
export function isLoopbackHost(hostname: string): boolean {
  return hostname === "localhost" || hostname.endsWith(".localhost") ||
    hostname === "[::1]" || /^127(\.\d{1,3}){3}$/.test(hostname);
}

/** A local page's own rules, replacing the runtime's. */
export interface PageRules {
  csp: string;
  frameOptions: "DENY" | "SAMEORIGIN";
  referrerPolicy: "no-referrer" | "same-origin";
}

/** Headers of the runtime's set a local page replaces or drops. */
const REPLACED = new Set(["content-security-policy", "x-frame-options", "referrer-policy"]);

/** The headers of a local page's answer to `req`. */
export function localPageHeaders(
  runtime: Runtime,
  req: Request,
  requestId: string,
  rules: PageRules,
  contentType: string,
): HeaderPairs {
  return [
    ...runtime.responseHeaders(req.headers.get("origin"), requestId).filter(([name]) => {
      const lower = name.toLowerCase();
      return !REPLACED.has(lower) && !lower.startsWith("access-control-");
    }),
    ["Content-Security-Policy", rules.csp],
    ["X-Frame-Options", rules.frameOptions],
    ["Referrer-Policy", rules.referrerPolicy],
    ["Cache-Control", "no-store"],
    ["Content-Type", contentType],
  ];
}
