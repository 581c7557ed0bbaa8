/**
 * `test-env` (admin): which configuration variables are set — as booleans,
 * never values — and whether the database answers.
 *
 * @module
 */
import { ENV_NAMES } from "../_shared/platform/env.ts";
import { defineFunction } from "../_shared/platform/function.ts";

/** Variables with a default are always "set"; report only those that can be missing. */
const REPORTED = ENV_NAMES;

export default defineFunction({
  name: "test-env",
  access: "admin",
  group: "utilities",
  summary: "Reports which configuration is set",
  output: "TestEnvOutput",
  async handle({ ctx }) {
    const variables = Object.fromEntries(REPORTED.map((name) => [name, ctx.env.has(name)]));
    const started = performance.now();
    let database: { ok: boolean; latency_ms: number; error?: string };
    try {
      await ctx.db.query("select 1");
      database = { ok: true, latency_ms: Math.round(performance.now() - started) };
    } catch {
      database = {
        ok: false,
        latency_ms: Math.round(performance.now() - started),
        error: "no answer",
      };
    }
    return { variables, database, runtime: { deno: Deno.version.deno } };
  },
});
