/**
 * One cold start, run in a fresh process by `bench/cold_start.ts`: imports a
 * function's `handler.ts` (or, for `bare`, nothing but a handler answering
 * the same JSON as `security-headers`), serves it with `Deno.serve` on an
 * ephemeral 127.0.0.1 port, answers one POST sent to itself, and exits.
 * Prints `<status> <ms from start to answer>`. Usage:
 * `deno run -A bench/support/cold_start_child.ts <handler.ts path | bare> <bearer token>`.
 *
 * @module
 */
const started = performance.now();
const [target, token] = Deno.args;
let handler: (request: Request) => Response | Promise<Response>;
if (target === "bare") {
  const body = JSON.stringify({ headers: { "X-Frame-Options": "DENY" } });
  handler = () => new Response(body, { headers: { "content-type": "application/json" } });
} else {
  handler = (await import(new URL(target!, `file://${Deno.cwd()}/`).href)).default;
}
const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, handler);
const res = await fetch(`http://127.0.0.1:${server.addr.port}/`, {
  method: "POST",
  headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
  body: "{}",
});
await res.arrayBuffer();
console.log(`${res.status} ${(performance.now() - started).toFixed(1)}`);
await server.shutdown();
