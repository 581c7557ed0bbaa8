/**
 * Reads the per-function `verify_jwt` flags from `supabase/config.toml`
 * (only the `[functions.<name>]` tables; the rest is the Supabase CLI's).
 *
 * @module
 */

/** `verify_jwt` by function name; functions without a block default to true, as on hosted. */
export function readVerifyJwt(toml: string): Map<string, boolean> {
  const flags = new Map<string, boolean>();
  let current: string | null = null;
  for (const raw of toml.split("\n")) {
    const line = raw.replace(/#.*$/, "").trim();
    if (line === "") continue;
    const table = /^\[([^\]]+)\]$/.exec(line);
    if (table) {
      const match = /^functions\.("?)([\w-]+)\1$/.exec(table[1]!.trim());
      current = match ? match[2]! : null;
      if (current) flags.set(current, true);
      continue;
    }
    const setting = /^verify_jwt\s*=\s*(true|false)$/.exec(line);
    if (current && setting) flags.set(current, setting[1] === "true");
  }
  return flags;
}
