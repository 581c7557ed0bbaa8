/**
 * What the generators (`deno task catalog`, `openapi`, `types`) write is
 * formatted by `deno fmt` itself, with the repository's configuration, so
 * `deno task check` accepts a generated file exactly as written.
 *
 * @module
 */
import { REPO_ROOT } from "../paths.ts";

/** `text` as `deno fmt` writes a `.ts` or `.json` file under `root` (default: this repository). */
export async function denoFmt(
  text: string,
  ext: "ts" | "json",
  root: string = REPO_ROOT,
): Promise<string> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["fmt", `--config=${root}deno.json`, `--ext=${ext}`, "-"],
    cwd: root,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(text));
  await writer.close();
  const out = await child.output();
  if (!out.success) {
    throw new Error(`deno fmt failed: ${new TextDecoder().decode(out.stderr).trim()}`);
  }
  return new TextDecoder().decode(out.stdout);
}
