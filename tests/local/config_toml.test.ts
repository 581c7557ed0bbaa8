import assert from "node:assert/strict";
import { readFunctionConfig, readVerifyJwt } from "../../local/config_toml.ts";
import { loadFunctions } from "../../local/functions.ts";
import { CONFIG_TOML_PATH } from "../../local/paths.ts";
import { FUNCTIONS } from "../../shared/functions.ts";

Deno.test("readVerifyJwt() reads [functions.<name>] blocks and ignores the rest", () => {
  const flags = readVerifyJwt(`
[api]
verify_jwt = false # not a function
[functions.a]
verify_jwt = false
[functions."b-c"]
# comment
verify_jwt = true
[functions.d]
`);
  assert.deepEqual([...flags], [["a", false], ["b-c", true], ["d", true]]);
});

Deno.test("config.toml has a block for every function, verify_jwt = false only for non-JWT credentials", async () => {
  const toml = await Deno.readTextFile(CONFIG_TOML_PATH);
  const flags = readVerifyJwt(toml);
  const configs = readFunctionConfig(toml);
  const functions = await loadFunctions();
  for (const [name, fn] of functions) {
    assert.ok(flags.has(name), `config.toml lacks [functions.${name}]`);
    assert.equal(configs.get(name)?.importMap, "../deno.json", `import_map of ${name}`);
    const access = fn.definition.access;
    const needsOwnCredential = access === "webhook" || access === "scheduled";
    assert.equal(flags.get(name), !needsOwnCredential, `verify_jwt of ${name} (${access})`);
    assert.equal(FUNCTIONS[fn.definition.name].access, access);
  }
  for (const name of flags.keys()) {
    assert.ok(functions.has(name), `config.toml names unknown ${name}`);
  }
});

/** The `key = value` lines of the top-level table `[name]` (comments dropped, values as written). */
function tomlTable(toml: string, name: string): Map<string, string> {
  const settings = new Map<string, string>();
  let inside = false;
  for (const raw of toml.split("\n")) {
    const line = raw.replace(/#.*$/, "").trim();
    if (line === "") continue;
    const table = /^\[([^\]]+)\]$/.exec(line);
    if (table) {
      inside = table[1]!.trim() === name;
      continue;
    }
    const setting = /^([\w-]+)\s*=\s*(.+)$/.exec(line);
    if (inside && setting) settings.set(setting[1]!, setting[2]!.trim());
  }
  return settings;
}

Deno.test("config.toml pins enable_anonymous_sign_ins = false in [auth]", async () => {
  // Anonymous sign-ins are sessions without an account: the database lets
  // them write nothing (is_signed_in_user()) and the functions answer 403,
  // but the project does not issue them at all.
  const auth = tomlTable(await Deno.readTextFile(CONFIG_TOML_PATH), "auth");
  assert.equal(auth.get("enabled"), "true", "the [auth] table was found");
  assert.equal(auth.get("enable_anonymous_sign_ins"), "false");
});
