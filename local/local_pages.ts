/**
 * What the local pages (the console, the mail viewer) share: behind the
 * gateway, which answers only a loopback `Host` (`local/gateway.ts`), they
 * carry the runtime's headers
 * without CORS (a page on another origin must not read them), with their own
 * CSP, framing and referrer rules, never cached.
 *
 * @module
 */
import type { HeaderPairs } from "../supabase/functions/_shared/platform/headers.ts";
import type { Runtime } from "../supabase/functions/_shared/platform/runtime.ts";

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
