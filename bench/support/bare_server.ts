/**
 * The benchmark baseline: a bare `Deno.serve` serving the same exchange as
 * `security-headers` through the local server — it reads the request's body
 * and answers the same JSON with the same headers (content type, security
 * headers, CORS, a request id) — with no gateway, factory, auth or logging.
 * What the local server spends beyond this is ours. Usage:
 * `deno run -A bench/support/bare_server.ts <port>`.
 *
 * @module
 */
import { CorsPolicy, securityHeaders } from "../../supabase/functions/_shared/platform/headers.ts";

const body = JSON.stringify({ headers: securityHeaders() });
// One `Headers`, copied into each answer: the cheapest way to send the same
// set (pairs are checked again on every answer).
const headers = new Headers([
  ["content-type", "application/json"],
  ...Object.entries(securityHeaders()),
  ...new CorsPolicy([]).headersFor(null),
  ["x-request-id", ""],
]);
const port = Number(Deno.args[0]);
Deno.serve(
  { hostname: "127.0.0.1", port, onListen: () => console.log("ready") },
  async (request) => {
    await request.text();
    headers.set("x-request-id", crypto.randomUUID());
    return new Response(body, { headers });
  },
);
