/**
 * Local-only switches cannot reach production: `LOCAL_DEV=true` and the local
 * stack's well-known `SCHEDULER_TOKEN` are refused where `SUPABASE_URL` is
 * not a loopback address, and a deployed function then answers every request
 * 500 `misconfigured`, naming the variable and never its value.
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import {
  ConfigurationError,
  Env,
  LOCAL_SCHEDULER_TOKEN,
} from "../../../../supabase/functions/_shared/platform/env.ts";

const HOSTED = "https://abcdefghijklmnop.supabase.co";
const SCHEDULER = "a-scheduler-token-of-a-real-project-0123456789";

function refusal(source: Record<string, string>): ConfigurationError {
  try {
    new Env(source);
  } catch (error) {
    assert.ok(error instanceof ConfigurationError, String(error));
    return error;
  }
  assert.fail(`accepted ${JSON.stringify(source)}`);
}

Deno.test("LOCAL_DEV=true with a project's SUPABASE_URL is refused, naming LOCAL_DEV", () => {
  for (const flag of ["true", "1"]) {
    const error = refusal({ SUPABASE_URL: HOSTED, LOCAL_DEV: flag });
    assert.deepEqual(error.variables, ["LOCAL_DEV"]);
    assert.match(error.message, /LOCAL_DEV must not be set where SUPABASE_URL is not a loopback/);
  }
  for (const url of ["http://10.0.0.5:8000", "http://kong:8000", "https://127.0.0.1.nip.io"]) {
    assert.deepEqual(refusal({ SUPABASE_URL: url, LOCAL_DEV: "true" }).variables, ["LOCAL_DEV"]);
  }
});

Deno.test("the local scheduler token with a project's SUPABASE_URL is refused, never shown", () => {
  const error = refusal({ SUPABASE_URL: HOSTED, SCHEDULER_TOKEN: LOCAL_SCHEDULER_TOKEN });
  assert.deepEqual(error.variables, ["SCHEDULER_TOKEN"]);
  assert.doesNotMatch(error.message, new RegExp(LOCAL_SCHEDULER_TOKEN));
  const both = refusal({
    SUPABASE_URL: HOSTED,
    LOCAL_DEV: "true",
    SCHEDULER_TOKEN: LOCAL_SCHEDULER_TOKEN,
  });
  assert.deepEqual(both.variables, ["LOCAL_DEV", "SCHEDULER_TOKEN"]);
});

Deno.test("the local switches stay open on a loopback SUPABASE_URL, and a project's own token passes", () => {
  for (const url of ["http://127.0.0.1:54321", "http://localhost:54321", "http://[::1]:54321"]) {
    const env = new Env({
      SUPABASE_URL: url,
      LOCAL_DEV: "true",
      SCHEDULER_TOKEN: LOCAL_SCHEDULER_TOKEN,
    });
    assert.equal(env.values.LOCAL_DEV, true, url);
  }
  const hosted = new Env({ SUPABASE_URL: HOSTED, LOCAL_DEV: "false", SCHEDULER_TOKEN: SCHEDULER });
  assert.equal(hosted.values.SCHEDULER_TOKEN, SCHEDULER);
});

Deno.test("a malformed variable is a ConfigurationError naming it", () => {
  const error = refusal({ SUPABASE_URL: HOSTED, LOG_LEVEL: "loud", DB_POOL_MAX: "0" });
  assert.deepEqual(error.variables, ["LOG_LEVEL", "DB_POOL_MAX"]);
  assert.equal(error.message, 'Cannot read configuration: malformed "LOG_LEVEL", "DB_POOL_MAX"');
});

/** Serves one request with a deployed function's default export, in a process of `env`. */
async function deployedAnswer(
  env: Record<string, string>,
): Promise<{ status: number; body: unknown; stderr: string }> {
  const handler = fileURLToPath(
    new URL("../../../../supabase/functions/test-env/handler.ts", import.meta.url),
  );
  const script = `
    const { default: handler } = await import(${JSON.stringify(handler)});
    for (let i = 0; i < 2; i++) {
      const res = await handler(new Request("http://127.0.0.1/test-env", { method: "POST", body: "{}" }));
      console.log("answer " + JSON.stringify({ status: res.status, body: await res.json() }));
    }`;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--quiet", script],
    clearEnv: true,
    env: { PATH: Deno.env.get("PATH") ?? "", HOME: Deno.env.get("HOME") ?? "", ...env },
    stdout: "piped",
    stderr: "piped",
  }).output();
  // The function's own log lines go to stdout too.
  const lines = new TextDecoder().decode(out.stdout).split("\n")
    .filter((line) => line.startsWith("answer ")).map((line) => line.slice("answer ".length));
  assert.equal(lines.length, 2, new TextDecoder().decode(out.stderr));
  assert.equal(lines[0], lines[1], "every request gets the same answer");
  return { ...JSON.parse(lines[0]!), stderr: new TextDecoder().decode(out.stderr) };
}

Deno.test("a deployed function with LOCAL_DEV=true on a project's URL answers 500 misconfigured", async () => {
  const answer = await deployedAnswer({
    SUPABASE_URL: HOSTED,
    LOCAL_DEV: "true",
    SCHEDULER_TOKEN: LOCAL_SCHEDULER_TOKEN,
  });
  assert.equal(answer.status, 500);
  assert.deepEqual(answer.body, {
    error: {
      code: "misconfigured",
      message: "Cannot serve: LOCAL_DEV and SCHEDULER_TOKEN must not be set where SUPABASE_URL " +
        "is not a loopback address (LOCAL_DEV=true, and SCHEDULER_TOKEN set to the local " +
        "stack's well-known token, are for the local stack only)",
      details: { variables: ["LOCAL_DEV", "SCHEDULER_TOKEN"] },
    },
  });
  assert.doesNotMatch(answer.stderr, new RegExp(LOCAL_SCHEDULER_TOKEN));
  assert.equal(answer.stderr.match(/"misconfigured"/g)?.length, 1, "logged once per isolate");
});

Deno.test("a deployed function on a loopback URL with LOCAL_DEV=true serves", async () => {
  const answer = await deployedAnswer({
    SUPABASE_URL: "http://127.0.0.1:54321",
    LOCAL_DEV: "true",
  });
  assert.notEqual(answer.status, 500, JSON.stringify(answer.body));
});
