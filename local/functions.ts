/**
 * Finds and loads every function under `supabase/functions/` (a folder with a
 * `handler.ts`; `_shared` is not a function).
 *
 * @module
 */
import { fileURLToPath } from "node:url";
import type { EdgeFunction } from "../supabase/functions/_shared/platform/function.ts";

/** Folder of the functions. */
export const FUNCTIONS_DIR = new URL("../supabase/functions/", import.meta.url);

/** Imports every function's handler under `dir` (default: this repository's), by folder name. */
export async function loadFunctions(
  dir: URL = FUNCTIONS_DIR,
): Promise<Map<string, EdgeFunction>> {
  const names: string[] = [];
  for (const entry of Deno.readDirSync(fileURLToPath(dir))) {
    if (!entry.isDirectory || entry.name.startsWith("_")) continue;
    names.push(entry.name);
  }
  names.sort();
  const loaded = await Promise.all(names.map(async (name) => {
    const module = await import(new URL(`${name}/handler.ts`, dir).href) as {
      default: EdgeFunction;
    };
    if (module.default?.definition?.name !== name) {
      throw new Error(`Cannot load function "${name}": its handler declares another name`);
    }
    return [name, module.default] as const;
  }));
  return new Map(loaded);
}
