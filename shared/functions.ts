/**
 * The catalog of every server function: its name, who may call it, its
 * group, and the zod schemas of its request and answer. Each function
 * declares its own entry, with its handler, in
 * `supabase/functions/<name>/handler.ts`; `deno task catalog` gathers the
 * declarations into `catalog.ts` (and `function_names.ts`), which this module
 * types and exports. The frontend's typed `invoke` reads both schemas, tests
 * check every answer against `output`, and `deno task check` fails when the
 * generated files are stale. See `docs/functions.md#adding-a-function`.
 *
 * @module
 */
import type { z } from "zod";
import type { Access } from "./access.ts";
import { CATALOG } from "./catalog.ts";
import type { FunctionGroup } from "./function_groups.ts";

export { FUNCTION_GROUPS, type FunctionGroup } from "./function_groups.ts";

/** A catalog entry. */
export interface FunctionEntry {
  /** Who may call it (see `access.ts`). */
  access: Access;
  /**
   * An admin function the schedule starts as well: the scheduler's
   * credentials (the service-role key or `SCHEDULER_TOKEN`) are accepted
   * besides an admin's token; the anon key never is.
   */
  scheduler?: true;
  /** Its group. */
  group: FunctionGroup;
  /** One line on what it does. */
  summary: string;
  /** Why the team added it, for a function beyond the interface's 46. */
  beyondInterface?: string;
  /** Schema of the JSON body; absent: the function takes no body (`{}` or nothing). */
  input?: z.ZodType;
  /** Schema of the JSON answer. */
  output: z.ZodType;
}

/** Every function, by name. */
export const FUNCTIONS = CATALOG satisfies Record<string, FunctionEntry>;

/** The name of a server function. */
export type FunctionName = keyof typeof FUNCTIONS;

/** Every function name. */
export const FUNCTION_NAMES = Object.keys(FUNCTIONS) as FunctionName[];

/** The catalog entry of function `N`, with its literal access rule and schemas. */
export type FunctionEntryOf<N extends FunctionName> = (typeof FUNCTIONS)[N];

/** The validated request body function `N` receives (undefined when it takes none). */
export type FunctionInput<N extends FunctionName> = FunctionEntryOf<N> extends
  { input: infer S extends z.ZodType } ? z.output<S> : undefined;

/** The request body a caller of function `N` sends (before defaults are applied). */
export type FunctionRequest<N extends FunctionName> = FunctionEntryOf<N> extends
  { input: infer S extends z.ZodType } ? z.input<S> : undefined;

/** The answer of function `N`. */
export type FunctionOutput<N extends FunctionName> = z.output<FunctionEntryOf<N>["output"]>;
