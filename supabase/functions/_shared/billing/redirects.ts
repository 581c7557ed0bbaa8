/**
 * Redirect targets of hosted processor pages: only our site's origin
 * (`SITE_URL`) or one listed in `ALLOWED_REDIRECT_ORIGINS` — no open redirects.
 *
 * @module
 */
import type { Env } from "../platform/env.ts";
import { invalidInput } from "../platform/errors.ts";

/** The origins redirects may go to; 503 `not_configured` without `SITE_URL`. */
export function allowedRedirectOrigins(env: Env): Set<string> {
  const origins = new Set([new URL(env.require("SITE_URL")).origin]);
  for (const entry of env.values.ALLOWED_REDIRECT_ORIGINS) {
    try {
      origins.add(new URL(entry).origin);
    } catch {
      // Not a URL: it can never match an origin, so it allows nothing.
    }
  }
  return origins;
}

/** `url` if its origin is allowed; else 400 `invalid_input` naming `field`. */
export function checkRedirect(
  url: string,
  field: string,
  allowed: ReadonlySet<string>,
  action: string,
): string {
  let origin: string;
  try {
    const parsed = new URL(url);
    origin = parsed.protocol === "https:" || parsed.protocol === "http:" ? parsed.origin : "";
  } catch {
    origin = "";
  }
  if (!allowed.has(origin)) {
    throw invalidInput(
      `Cannot ${action}: ${field} "${url}" does not go to an allowed origin`,
      { field, allowed: [...allowed] },
    );
  }
  return url;
}

/** `path` under `SITE_URL` (a trailing slash on the site is kept once). */
export function siteUrl(env: Env, path: string): string {
  const base = env.require("SITE_URL").replace(/\/+$/, "");
  return `${base}${path}`;
}
