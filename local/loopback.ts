/**
 * The local pages (the console, the mail viewer) answer only to a loopback
 * `Host`: a page on another name that resolves to 127.0.0.1 (DNS
 * rebinding) reads nothing.
 *
 * @module
 */

/** Whether `hostname` (a URL's, so IPv6 in brackets) names this machine's loopback. */
export function isLoopbackHost(hostname: string): boolean {
  return hostname === "localhost" || hostname.endsWith(".localhost") ||
    hostname === "[::1]" || /^127(\.\d{1,3}){3}$/.test(hostname);
}
