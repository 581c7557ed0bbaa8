/**
 * Adding a function is its folder and its test, and nothing else kept by
 * hand (`docs/functions.md#adding-a-function`): in a copy of the repository,
 * a new folder with a `handler.ts` (the catalog entry declared with the
 * handler) and an `index.ts` becomes, after `deno task catalog`, a catalog
 * entry the frontend's contract exports, a `config.toml` block, a function
 * the local stack serves, and a function the repository's own structure
 * tests (catalog, interface, config.toml, import rules) accept.
 */
import assert from "node:assert/strict";
import { cp, symlink } from "node:fs/promises";
import { fileURLToPath } from "node:url";

const repo = fileURLToPath(new URL("../../", import.meta.url));
const decoder = new TextDecoder();

const HANDLER = `/**
 * \`say-hello\` (public): the security headers, said by a new function.
 *
 * @module
 */
import { defineFunction } from "../_shared/platform/function.ts";

export default defineFunction({
  name: "say-hello",
  access: "public",
  group: "utilities",
  summary: "Says which security headers a response carries",
  beyondInterface: "it shows that a function is its folder",
  input: () => import("../../../shared/notification_schemas.ts").then((schemas) => schemas.ListingIdInput),
  output: "SecurityHeadersOutput",
  handle({ ctx }) {
    return { headers: { ...ctx.runtime.securityHeaders } };
  },
});
`;

/** Runs `deno <args>` in `cwd`; answers its exit code and output. */
async function deno(cwd: string, ...args: string[]) {
  const out = await new Deno.Command(Deno.execPath(), {
    args,
    cwd,
    stdout: "piped",
    stderr: "piped",
  })
    .output();
  return { code: out.code, text: decoder.decode(out.stdout) + decoder.decode(out.stderr) };
}

Deno.test({
  name: "a new function is its folder and its test: `deno task catalog` does the rest",
  // The copy's checks run in child processes; this test only waits for them.
  sanitizeResources: false,
  async fn() {
    const copy = await Deno.makeTempDir({ prefix: "add-function-" });
    try {
      for (
        const part of [
          "supabase/functions",
          "supabase/config.toml",
          "supabase/.env",
          "shared",
          "local",
          "tests",
          "bench",
          "deno.json",
          ".gitignore",
        ]
      ) {
        await cp(`${repo}${part}`, `${copy}/${part}`, { recursive: true });
      }
      try {
        await cp(`${repo}deno.lock`, `${copy}/deno.lock`);
      } catch { /* no lock file */ }
      await symlink(`${repo}node_modules`, `${copy}/node_modules`);
      // A repository of its own, for the tests that ask git what it ignores.
      const init = await new Deno.Command("git", { args: ["init", "-q"], cwd: copy }).output();
      assert.ok(init.success, "git init");

      // The whole change: a folder with its handler and entry point.
      await Deno.mkdir(`${copy}/supabase/functions/say-hello`);
      await Deno.writeTextFile(`${copy}/supabase/functions/say-hello/handler.ts`, HANDLER);
      await Deno.writeTextFile(
        `${copy}/supabase/functions/say-hello/index.ts`,
        `import handler from "./handler.ts";\nDeno.serve(handler);\n`,
      );

      const stale = await deno(copy, "run", "-A", "local/generators/catalog.ts", "--check");
      assert.equal(stale.code, 1, "before `deno task catalog`, the check names the stale files");
      assert.match(stale.text, /shared\/catalog\.ts.*Run `deno task catalog`/s);

      const written = await deno(copy, "run", "-A", "local/generators/catalog.ts");
      assert.equal(written.code, 0, written.text);
      const catalog = await Deno.readTextFile(`${copy}/shared/catalog.ts`);
      assert.match(catalog, /"say-hello": \{\n\s+access: "public",\n\s+group: "utilities",/);
      assert.match(
        catalog,
        /"say-hello": \{[^}]*input: ListingIdInput,\n\s+output: SecurityHeadersOutput,/,
      );
      const config = await Deno.readTextFile(`${copy}/supabase/config.toml`);
      assert.match(
        config,
        /\[functions\.say-hello\]\nverify_jwt = false\nimport_map = "\.\.\/deno\.json"/,
      );

      // The structure tests of the copy accept it, the import rules hold, and
      // the check that CI runs is clean.
      const tests = await deno(
        copy,
        "test",
        "-A",
        "tests/shared/contract.test.ts",
        "tests/shared/functions.test.ts",
        "tests/local/config_toml.test.ts",
      );
      assert.equal(tests.code, 0, tests.text);
      assert.equal(
        (await deno(copy, "run", "-A", "local/generators/catalog.ts", "--check")).code,
        0,
      );
      const imports = await deno(copy, "run", "--allow-read", "local/checks/check_imports.ts");
      assert.equal(imports.code, 0, imports.text);

      // The local stack serves it: the same loader `deno task start` uses.
      const served = await deno(
        copy,
        "eval",
        `import { loadFunctions } from "./local/functions.ts";
         import { Runtime } from "./supabase/functions/_shared/platform/runtime.ts";
         import { signProjectKey, LOCAL_JWT_SECRET } from "./local/keys.ts";
         const fn = (await loadFunctions()).get("say-hello");
         const runtime = new Runtime({ SUPABASE_JWT_SECRET: LOCAL_JWT_SECRET, LOG_LEVEL: "silent" });
         const anon = await signProjectKey("anon", LOCAL_JWT_SECRET);
         const call = (body) => fn.with(runtime)(new Request("http://127.0.0.1/say-hello", {
           method: "POST", headers: { authorization: "Bearer " + anon }, body: JSON.stringify(body),
         }));
         const ok = await call({ listingId: crypto.randomUUID() });
         const headers = Object.keys((await ok.json()).headers).length > 0;
         const bad = await call({ listingId: "not a uuid" });
         console.log(ok.status, headers, bad.status, (await bad.json()).error.code);`,
      );
      assert.equal(
        served.text.trim().split("\n").at(-1),
        "200 true 400 invalid_input",
        served.text,
      );
    } finally {
      await Deno.remove(copy, { recursive: true });
    }
  },
});
