/**
 * `supabase/.env`: the committed local development values the Supabase CLI
 * reads for the `env(NAME)` references in `supabase/config.toml` (it loads
 * the file with godotenv before reading the config:
 * `apps/cli-go/pkg/config/config.go`, `loadNestedEnv`, in
 * github.com/supabase/cli). `deno task start` gives the same values to the
 * functions, so the local stack and the CLI share one value for each (the
 * Send Email Hook secret). The file is kept to plain `NAME=value` lines,
 * which godotenv and this reader parse alike; anything else is refused here
 * (and by the test that reads the committed file). The git-ignored
 * `supabase/.env.local`, where the CLI lets a developer override a value
 * (it loads it first, and godotenv never overrides), wins here too.
 *
 * @module
 */
import { REPO_ROOT } from "./paths.ts";

/** The committed file of local development values. */
export const SUPABASE_ENV_PATH = `${REPO_ROOT}supabase/.env`;

const LINE = /^([A-Za-z_][A-Za-z0-9_]*)=([^\s"'`#]*)$/;

/**
 * The `NAME=value` pairs of `text`; blank lines and `#` comment lines are
 * skipped. `name` is the file named in an error.
 */
export function parseSupabaseEnv(text: string, name = "supabase/.env"): Map<string, string> {
  const values = new Map<string, string>();
  text.split(/\r?\n/).forEach((raw, index) => {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) return;
    const match = LINE.exec(line);
    if (!match) {
      throw new Error(
        `Cannot read ${name}: line ${
          index + 1
        } is not a plain NAME=value line (no quotes, spaces or trailing comments)`,
      );
    }
    if (values.has(match[1]!)) {
      throw new Error(`Cannot read ${name}: ${match[1]} is set twice`);
    }
    values.set(match[1]!, match[2]!);
  });
  return values;
}

/** The values of `supabase/.env` (none when the file is missing). */
export async function readSupabaseEnv(path = SUPABASE_ENV_PATH): Promise<Record<string, string>> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return {};
    throw error;
  }
  return Object.fromEntries(parseSupabaseEnv(text, path.slice(path.lastIndexOf("supabase/"))));
}

/**
 * What `deno task start` gives the functions from `supabase/`: `.env`, with
 * `.env.local` over it, as the Supabase CLI resolves them (the shell wins
 * over both; `start.ts` applies that). So a hook secret overridden in
 * `.env.local` signs (the CLI's Auth) and verifies (our functions) alike.
 */
export async function readLocalSupabaseEnv(
  envPath = SUPABASE_ENV_PATH,
): Promise<Record<string, string>> {
  return { ...(await readSupabaseEnv(envPath)), ...(await readSupabaseEnv(`${envPath}.local`)) };
}
