/**
 * Loopback names: what the local stack answers to, and how deployed code
 * tells a local `SUPABASE_URL` from a project's.
 *
 * @module
 */

/** Whether `hostname` (a URL's, so IPv6 in brackets) names this machine's loopback. */
export function isLoopbackHost(hostname: string): boolean {
  return hostname === "localhost" || hostname.endsWith(".localhost") ||
    hostname === "[::1]" || /^127(\.\d{1,3}){3}$/.test(hostname);
}
