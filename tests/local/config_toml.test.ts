import assert from "node:assert/strict";
import { Webhook } from "standardwebhooks";
import { readFunctionConfig, readVerifyJwt } from "../../local/config_toml.ts";
import { loadFunctions } from "../../local/functions.ts";
import { CONFIG_TOML_PATH, REPO_ROOT } from "../../local/paths.ts";
import {
  parseSupabaseEnv,
  readLocalSupabaseEnv,
  readSupabaseEnv,
  SUPABASE_ENV_PATH,
} from "../../local/supabase_env.ts";
import type { Access } from "../../shared/access.ts";
import { type FunctionName, FUNCTIONS } from "../../shared/functions.ts";
import { verifyAuthHook } from "../../supabase/functions/_shared/email/auth_hook.ts";
import { Env } from "../../supabase/functions/_shared/platform/env.ts";

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

/**
 * Access rules whose every hosted caller is a signed-in user, i.e. brings a
 * JWT in `Authorization` — the only thing the platform's verify_jwt check
 * admits (https://supabase.com/docs/guides/functions/auth-headers). Every
 * other rule admits an API key (`public`: the anon key, `system`: the service
 * role — sb_publishable_/sb_secret_ keys, which supabase-js sends in the
 * apikey header), SCHEDULER_TOKEN (`scheduled`, and `admin` functions the
 * scheduler starts) or a signed body (`webhook`), so the check must be off.
 */
const USER_JWT_ONLY: readonly Access[] = [
  "user",
  "seller",
  "deal-participant",
  "deal-participant-or-admin",
  "admin",
];

Deno.test("config.toml has a block for every function, verify_jwt = true only where every caller brings a user JWT", async () => {
  const toml = await Deno.readTextFile(CONFIG_TOML_PATH);
  const flags = readVerifyJwt(toml);
  const configs = readFunctionConfig(toml);
  const functions = await loadFunctions();
  for (const [name, fn] of functions) {
    assert.ok(flags.has(name), `config.toml lacks [functions.${name}]`);
    assert.equal(configs.get(name)?.importMap, "../deno.json", `import_map of ${name}`);
    const { access, scheduler } = fn.definition;
    const userJwtOnly = USER_JWT_ONLY.includes(access) && scheduler !== true;
    assert.equal(flags.get(name), userJwtOnly, `verify_jwt of ${name} (${access})`);
    assert.equal(FUNCTIONS[fn.definition.name as FunctionName].access, access);
  }
  for (const name of flags.keys()) {
    assert.ok(functions.has(name), `config.toml names unknown ${name}`);
  }
  // As the CLI reads the blocks (see "The Supabase CLI's own reading" below):
  // known keys only, a valid slug, import_map relative to supabase/.
  for (const [table, settings] of readToml(toml)) {
    const slug = /^functions\.(.+)$/.exec(table)?.[1];
    if (slug === undefined) continue;
    assert.match(slug, CLI_FUNCTION_SLUG_PATTERN);
    for (const key of settings.keys()) {
      assert.ok(CLI_FUNCTION_KEYS.includes(key), `${table}.${key}`);
    }
    assert.equal(typeof settings.get("verify_jwt"), "boolean", `${table}.verify_jwt`);
    assert.equal(settings.get("import_map"), "../deno.json", `${table}.import_map`);
  }
  await Deno.stat(`${REPO_ROOT}deno.json`);
});

Deno.test("config.toml pins enable_anonymous_sign_ins = false in [auth]", async () => {
  // Anonymous sign-ins are sessions without an account: the database lets
  // them write nothing (is_signed_in_user()) and the functions answer 403,
  // but the project does not issue them at all.
  const auth = readToml(await Deno.readTextFile(CONFIG_TOML_PATH)).get("auth");
  assert.equal(auth?.get("enabled"), true, "the [auth] table was found");
  assert.equal(auth?.get("enable_anonymous_sign_ins"), false);
});

// --- The Supabase CLI's own reading of config.toml ---------------------------
//
// `supabase start`, `db push`, `link`, `functions deploy|serve`, `secrets set`
// all load config.toml first and stop on a validation error. The rules below
// are ported from github.com/supabase/cli at commit
// 1d1e7191268e068fe9cb6aba524d1c619a9c727b, apps/cli-go/pkg/config/:
// - decode_hooks.go: `envPattern = ^env\((.*)\)$`; LoadEnvHook replaces a whole
//   `env(NAME)` string by the variable's value when it is set and non-empty,
//   and otherwise leaves the literal `env(NAME)` in place.
// - config.go, Load → loadNestedEnv → loadDefaultEnv: before reading the file
//   the CLI loads, with godotenv (which never overrides a variable already
//   set), supabase/.env.development.local, supabase/.env.local,
//   supabase/.env.development and supabase/.env, then the same names in the
//   directory above; so the shell wins, then .env.local, then .env.
// - config.go, hookConfig.validate: an enabled hook with an http(s) uri needs
//   `secrets`, each `|`-separated one matching
//   `^v1,whsec_[A-Za-z0-9+/=]{32,88}$` (hookSecretPattern); the literal
//   env(NAME) of an unset variable does not, so the command fails.
// - config.go: `function` struct (enabled, verify_jwt, import_map, entrypoint,
//   static_files; UnmarshalExact refuses any other key) and funcSlugPattern
//   `^[A-Za-z][A-Za-z0-9_-]*$`.
// The same was confirmed with the CLI binary itself (npm supabase@3.1.0) by
// hand: see docs/deploying.md.

const CLI_ENV_PATTERN = /^env\((.*)\)$/;
const CLI_HOOK_SECRET_PATTERN = /^v1,whsec_[A-Za-z0-9+/=]{32,88}$/;
const CLI_FUNCTION_SLUG_PATTERN = /^[A-Za-z][A-Za-z0-9_-]*$/;
const CLI_FUNCTION_KEYS = ["enabled", "verify_jwt", "import_map", "entrypoint", "static_files"];

type TomlValue = string | number | boolean | string[];

/**
 * The tables of config.toml with their `key = value` settings. It reads the
 * subset of TOML the file uses (strings without escapes, booleans, integers,
 * arrays of strings) and refuses any other line, so that nothing the CLI
 * would read escapes the checks below.
 */
function readToml(toml: string): Map<string, Map<string, TomlValue>> {
  const tables = new Map<string, Map<string, TomlValue>>([["", new Map()]]);
  let current = tables.get("")!;
  toml.split("\n").forEach((raw, index) => {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) return;
    const table = /^\[([\w.-]+)\]\s*(?:#.*)?$/.exec(line);
    if (table) {
      assert.ok(!tables.has(table[1]!), `config.toml line ${index + 1}: [${table[1]}] twice`);
      current = new Map();
      tables.set(table[1]!, current);
      return;
    }
    const setting = /^([\w-]+)\s*=\s*("[^"\\]*"|true|false|-?\d+|\[[^\]]*\])\s*(?:#.*)?$/.exec(
      line,
    );
    assert.ok(
      setting,
      `config.toml line ${index + 1} is outside the TOML this test reads: ${line}`,
    );
    const [, key, text] = setting;
    const value: TomlValue = text!.startsWith("[")
      ? JSON.parse(text!) as string[]
      : text!.startsWith('"')
      ? text!.slice(1, -1)
      : text === "true" || text === "false"
      ? text === "true"
      : Number(text);
    assert.ok(!current.has(key!), `config.toml line ${index + 1}: ${key} twice`);
    current.set(key!, value);
  });
  return tables;
}

/** LoadEnvHook: `env(NAME)` becomes the value of NAME when it is set and non-empty. */
function cliResolve(value: TomlValue, env: Record<string, string | undefined>): TomlValue {
  if (typeof value !== "string") return value;
  const name = CLI_ENV_PATTERN.exec(value)?.[1];
  const resolved = name === undefined ? undefined : env[name];
  return resolved ? resolved : value;
}

/** hookConfig.validate for every `[auth.hook.<type>]`, as the CLI runs it (auth enabled). */
function cliValidateHooks(
  config: Map<string, Map<string, TomlValue>>,
  env: Record<string, string | undefined>,
): number {
  let checked = 0;
  for (const [table, settings] of config) {
    const hookType = /^auth\.hook\.(\w+)$/.exec(table)?.[1];
    if (!hookType || settings.get("enabled") !== true) continue;
    const uri = String(cliResolve(settings.get("uri") ?? "", env));
    const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(uri)?.[1]?.toLowerCase();
    const secrets = String(cliResolve(settings.get("secrets") ?? "", env));
    if (scheme === "http" || scheme === "https") {
      if (secrets === "") throw new Error(`auth.hook.${hookType}.secrets is missing`);
      for (const secret of secrets.split("|")) {
        if (!CLI_HOOK_SECRET_PATTERN.test(secret)) {
          throw new Error(
            `Invalid hook config: auth.hook.${hookType}.secrets must be formatted as "v1,whsec_<base64_encoded_secret>"`,
          );
        }
      }
    } else if (scheme === "pg-functions") {
      if (secrets !== "") throw new Error(`auth.hook.${hookType}.secrets is unsupported here`);
    } else {
      throw new Error(`auth.hook.${hookType}.uri should be a HTTP, HTTPS, or pg-functions URI`);
    }
    checked++;
  }
  return checked;
}

Deno.test("the CLI's rules accept config.toml with only the committed supabase/.env (a fresh machine)", async () => {
  const config = readToml(await Deno.readTextFile(CONFIG_TOML_PATH));
  // Without the file, the literal env(SEND_EMAIL_HOOK_SECRET) stays and fails the format.
  assert.throws(() => cliValidateHooks(config, {}), /auth\.hook\.send_email\.secrets must be/);
  const env = await readSupabaseEnv();
  assert.equal(cliValidateHooks(config, env), 1, "the send_email hook was checked");
  // Every env(NAME) anywhere in the file resolves, so no literal reaches a service.
  for (const [table, settings] of config) {
    for (const [key, value] of settings) {
      const name = typeof value === "string" ? CLI_ENV_PATTERN.exec(value)?.[1] : undefined;
      if (name !== undefined) {
        assert.ok(env[name], `${table}.${key}: ${name} is not in supabase/.env`);
      }
    }
  }
  // A variable in the shell wins over the file, as godotenv does not override it.
  assert.throws(
    () => cliValidateHooks(config, { ...env, SEND_EMAIL_HOOK_SECRET: "not-a-hook-secret" }),
    /must be formatted/,
  );
});

Deno.test("supabase/.env is committed with plain lines and a clearly local hook secret the local hook accepts", async () => {
  const text = await Deno.readTextFile(SUPABASE_ENV_PATH);
  const env = Object.fromEntries(parseSupabaseEnv(text));
  const secret = env.SEND_EMAIL_HOOK_SECRET ?? "";
  assert.match(secret, CLI_HOOK_SECRET_PATTERN);
  assert.match(secret, /LocalDevelopmentOnly/, "never a real (hosted) secret");
  // Signed as Supabase Auth signs hook requests (Standard Webhooks, the
  // whsec_ part base64-decoded), it verifies with auth-email-webhook's check.
  const body = JSON.stringify({
    user: { id: crypto.randomUUID(), email: "fresh@example.test" },
    email_data: { email_action_type: "signup", token: "123456", token_hash: "abc" },
  });
  const id = `msg_${crypto.randomUUID()}`;
  const now = new Date();
  const signature = new Webhook(secret.replace(/^v1,whsec_/, "")).sign(id, now, body);
  const headers = new Headers({
    "webhook-id": id,
    "webhook-timestamp": String(Math.floor(now.getTime() / 1000)),
    "webhook-signature": signature,
  });
  const verified = await verifyAuthHook(
    new Env({ SEND_EMAIL_HOOK_SECRET: secret }),
    headers,
    body,
  );
  assert.equal(verified.webhookId, id);
  // Committed, and the places for real values are ignored by git.
  const ignored = async (path: string) =>
    (await new Deno.Command("git", {
      args: ["check-ignore", "--no-index", "-q", path],
      cwd: REPO_ROOT,
    }).output()).code;
  assert.equal(await ignored("supabase/.env"), 1, "supabase/.env must not be git-ignored");
  assert.equal(await ignored("supabase/.env.local"), 0);
  assert.equal(await ignored("supabase/.env.production.local"), 0);
});

Deno.test("parseSupabaseEnv reads NAME=value lines and refuses what godotenv would read differently", () => {
  assert.deepEqual(
    [...parseSupabaseEnv("# c\n\nA=1\r\nB_2=v1,whsec_x+/=\n")],
    [["A", "1"], ["B_2", "v1,whsec_x+/="]],
  );
  for (const bad of ['A="quoted"', "A=1 # trailing", "export A=1", "A = 1", "A=1\nA=2"]) {
    assert.throws(() => parseSupabaseEnv(bad), /Cannot read supabase\/\.env/, bad);
  }
});

Deno.test("deno task start reads supabase/.env.local over supabase/.env, as the CLI does", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const envPath = `${dir}/supabase/.env`;
    await Deno.mkdir(`${dir}/supabase`);
    await Deno.writeTextFile(envPath, "SEND_EMAIL_HOOK_SECRET=committed\nONLY_COMMITTED=1\n");
    assert.deepEqual(await readLocalSupabaseEnv(envPath), {
      SEND_EMAIL_HOOK_SECRET: "committed",
      ONLY_COMMITTED: "1",
    });
    await Deno.writeTextFile(`${envPath}.local`, "SEND_EMAIL_HOOK_SECRET=overridden\n");
    assert.deepEqual(await readLocalSupabaseEnv(envPath), {
      SEND_EMAIL_HOOK_SECRET: "overridden",
      ONLY_COMMITTED: "1",
    });
    await Deno.writeTextFile(`${envPath}.local`, 'SEND_EMAIL_HOOK_SECRET="quoted"\n');
    await assert.rejects(
      readLocalSupabaseEnv(envPath),
      /Cannot read supabase\/\.env\.local: line 1/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
