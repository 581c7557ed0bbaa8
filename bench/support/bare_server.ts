/**
 * The benchmark baseline: a bare `Deno.serve` answering the same JSON as
 * `security-headers`, with no factory, auth or gateway. Usage:
 * `deno run -A bench/support/bare_server.ts <port>`.
 *
 * @module
 */
import { securityHeaders } from "../../supabase/functions/_shared/platform/headers.ts";

const body = JSON.stringify({ headers: securityHeaders() });
const port = Number(Deno.args[0]);
Deno.serve(
  { hostname: "127.0.0.1", port, onListen: () => console.log("ready") },
  () => new Response(body, { headers: { "content-type": "application/json" } }),
);
