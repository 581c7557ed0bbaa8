/**
 * Reads the per-function `verify_jwt` flags from `supabase/config.toml`
 * (only the `[functions.<name>]` tables; the rest is the Supabase CLI's).
 *
 * @module
 */

/** Settings of one `[functions.<name>]` block. */
export interface FunctionConfig {
  verifyJwt: boolean;
  importMap?: string;
}

/** `verify_jwt` by function name; functions without a block default to true, as on hosted. */
export function readVerifyJwt(toml: string): Map<string, boolean> {
  return new Map([...readFunctionConfig(toml)].map(([name, c]) => [name, c.verifyJwt]));
}

/** Every `[functions.<name>]` block's settings. */
export function readFunctionConfig(toml: string): Map<string, FunctionConfig> {
  const flags = new Map<string, FunctionConfig>();
  let current: string | null = null;
  for (const raw of toml.split("\n")) {
    const line = raw.replace(/#.*$/, "").trim();
    if (line === "") continue;
    const table = /^\[([^\]]+)\]$/.exec(line);
    if (table) {
      const match = /^functions\.("?)([\w-]+)\1$/.exec(table[1]!.trim());
      current = match ? match[2]! : null;
      if (current) flags.set(current, { verifyJwt: true });
      continue;
    }
    if (!current) continue;
    const config = flags.get(current)!;
    const setting = /^verify_jwt\s*=\s*(true|false)$/.exec(line);
    if (setting) config.verifyJwt = setting[1] === "true";
    const importMap = /^import_map\s*=\s*"([^"]+)"$/.exec(line);
    if (importMap) config.importMap = importMap[1];
  }
  return flags;
}
