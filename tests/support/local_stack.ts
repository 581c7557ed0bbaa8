/**
 * Runs the real local stack (`local/start.ts`) as a subprocess for end-to-end
 * tests, and waits for its banner.
 *
 * @module
 */
import { fileURLToPath } from "node:url";

const START = fileURLToPath(new URL("../../local/start.ts", import.meta.url));
const TOKEN = fileURLToPath(new URL("../../local/token.ts", import.meta.url));

/** A running `local/start.ts`. */
export interface LocalStack {
  /** e.g. `http://127.0.0.1:40123` */
  url: string;
  anonKey: string;
  serviceKey: string;
  /** Everything the process printed so far. */
  output(): string;
  /** Sends `signal` and resolves with the exit code. */
  stop(signal?: Deno.Signal): Promise<number>;
  /** Mints a user token with `local/token.ts` against this stack. */
  token(email: string, admin?: boolean): Promise<string>;
}

/** Starts the stack with `env` and waits (up to `timeoutMs`) for it to be ready. */
export async function startLocalStack(
  env: Record<string, string>,
  timeoutMs = 60_000,
): Promise<LocalStack> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", START],
    env,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let text = "";
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    for await (const chunk of stream.pipeThrough(new TextDecoderStream())) text += chunk;
  };
  const pumped = Promise.all([pump(child.stdout), pump(child.stderr)]);
  const deadline = Date.now() + timeoutMs;
  const exited = child.status.then((s) => s.code);
  let exitCode: number | undefined;
  exited.then((code) => (exitCode = code));
  while (!/Press Ctrl-C to stop/.test(text)) {
    if (exitCode !== undefined) {
      await pumped;
      throw new Error(`local stack exited with ${exitCode}:\n${text}`);
    }
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`local stack did not start in time:\n${text}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const grab = (label: string) => new RegExp(`${label}\\s+(\\S+)`).exec(text)?.[1] ?? "";
  const url = grab("Functions").replace(/\/functions\/v1\/<name>$/, "");
  return {
    url,
    anonKey: grab("anon key"),
    serviceKey: grab("service_role key"),
    output: () => text,
    async stop(signal: Deno.Signal = "SIGTERM") {
      if (exitCode === undefined) child.kill(signal);
      const code = await exited;
      await pumped;
      return code;
    },
    async token(email: string, admin = false) {
      const out = await new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", TOKEN, "--email", email, ...(admin ? ["--admin"] : [])],
        env: { ...env, PORT: new URL(url).port },
      }).output();
      if (out.code !== 0) throw new Error(new TextDecoder().decode(out.stderr));
      return new TextDecoder().decode(out.stdout).trim();
    },
  };
}

/** Runs `local/start.ts` to completion (for start-up failures). */
export async function runLocalStackToExit(
  env: Record<string, string>,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", START],
    env,
    stdin: "null",
  }).output();
  return {
    code: out.code,
    stdout: new TextDecoder().decode(out.stdout),
    stderr: new TextDecoder().decode(out.stderr),
  };
}
