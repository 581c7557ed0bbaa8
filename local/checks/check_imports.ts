/**
 * `deno task check` runs this: the import rules of the codebase.
 *
 * 1. **Layers.** `supabase/functions/_shared/` is layered, and every import
 *    points down (or sideways inside one folder):
 *    `lib/` (pure helpers) → `platform/` (factory, context, runtime, auth,
 *    database, jobs, the service clients) → `payproc_webhook/` (the
 *    processor's webhook plumbing) → the feature folders, in the order of
 *    {@linkcode FEATURES} (a feature may use the ones before it, never one
 *    after it or beside it) → a function's own folder
 *    (`supabase/functions/<name>/`), which may use anything below it but not
 *    another function's folder. `shared/` (the frontend's contract) imports
 *    only itself, and nothing deployed imports `local/`, `tests/` or `bench/`.
 * 2. **No cycles**, type-only imports and dynamic imports included.
 * 3. **The rooms of `local/`.** The local stack's files that belong together
 *    live in a folder ({@linkcode LOCAL_ROOMS}: the database pieces in `db/`,
 *    the generators in `generators/`, the checks in `checks/`, …), and a
 *    file whose name says which room it belongs in sits there. A room
 *    imports its own files, the rooms before it and the top-level files of
 *    `local/` that import no room (`paths.ts`, `functions.ts`, …); the
 *    entry points at the top (`start.ts`, `gateway.ts`, …) put rooms together.
 *
 * The imports are read from the source (static `import`/`export … from`
 * statements and `import("…")` with a literal), so the check takes no type
 * information and runs in a blink. See `docs/functions.md#adding-a-function`
 * for where new code goes.
 *
 * Usage: `deno run --allow-read local/checks/check_imports.ts`; exits 1 listing
 * every broken rule.
 *
 * @module
 */
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * The feature folders of `_shared/`, lowest first: each may import the ones
 * before it. Features on one line are independent of each other.
 */
export const FEATURES: readonly (readonly string[])[] = [
  ["email"],
  ["notifications"],
  ["billing"],
  ["connect"],
  ["deals"],
  [
    "documents",
    "handover",
    "price_alerts",
    "sponsored",
    "views",
    "duplicates",
    "analysis",
    "housekeeping",
    "listing_access",
    "conversations",
  ],
  ["daily"],
];

const SHARED = "supabase/functions/_shared/";
/** This script, for messages. */
const SELF = "local/checks/check_imports.ts";

/** Where a file sits: its layer's rank and the folder imports may move sideways in. */
export interface Place {
  /** A name for messages. */
  layer: string;
  /** Higher ranks may import lower ones. */
  rank: number;
  /** Imports inside this folder are sideways (allowed). */
  folder: string;
}

/** The place of repo-relative `path`, or null for code outside the rules (local/, tests/, bench/). */
export function placeOf(path: string): Place | null {
  if (path.startsWith("shared/")) {
    return { layer: "shared (the contract)", rank: 0, folder: "shared/" };
  }
  if (path.startsWith(SHARED)) {
    const top = path.slice(SHARED.length).split("/")[0]!;
    if (top === "lib") return { layer: "lib", rank: 1, folder: `${SHARED}lib/` };
    if (top === "platform") return { layer: "platform", rank: 2, folder: `${SHARED}platform/` };
    if (top === "payproc_webhook") {
      return { layer: "payproc_webhook", rank: 3, folder: `${SHARED}payproc_webhook/` };
    }
    const level = FEATURES.findIndex((line) => line.includes(top));
    if (level < 0) return { layer: `unknown folder _shared/${top}`, rank: -1, folder: "" };
    return { layer: `feature ${top}`, rank: 4 + level, folder: `${SHARED}${top}/` };
  }
  const fn = /^supabase\/functions\/([^/]+)\//.exec(path);
  if (fn) {
    return {
      layer: `function ${fn[1]}`,
      rank: 4 + FEATURES.length,
      folder: `supabase/functions/${fn[1]}/`,
    };
  }
  return null;
}

/** One import: the line it is on and the repo-relative file it names. */
export interface Import {
  line: number;
  target: string;
}

const STATIC =
  /^[ \t]*(?:import|export)\b[^;"'`]*?\bfrom\s*["']([^"']+)["']|^[ \t]*import\s*["']([^"']+)["']/gm;
const DYNAMIC = /\bimport\(\s*["']([^"']+)["']\s*\)/g;

/** The relative imports of `source` (repo-relative path `from`), as repo-relative paths. */
export function importsOf(from: string, source: string): Import[] {
  const found: Import[] = [];
  const lineAt = (index: number) => source.slice(0, index).split("\n").length;
  for (const pattern of [STATIC, DYNAMIC]) {
    for (const match of source.matchAll(pattern)) {
      const specifier = match[1] ?? match[2]!;
      if (!specifier.startsWith(".")) continue;
      // A dynamic import in a comment (a doc example) is not an import.
      const lineStart = source.lastIndexOf("\n", match.index) + 1;
      const prefix = source.slice(lineStart, match.index).trimStart();
      if (pattern === DYNAMIC && (prefix.startsWith("*") || prefix.startsWith("//"))) continue;
      found.push({ line: lineAt(match.index), target: join(dirname(from), specifier) });
    }
  }
  return found;
}

/** A broken rule, for people. */
export type Problem = string;

/** The layer problems of the import graph `graph` (file → its imports). */
export function layerProblems(graph: ReadonlyMap<string, readonly Import[]>): Problem[] {
  const problems: Problem[] = [];
  for (const [from, imports] of graph) {
    const here = placeOf(from);
    for (const { line, target } of imports) {
      const there = placeOf(target);
      const deployed = from.startsWith("supabase/") || from.startsWith("shared/");
      if (deployed && there === null) {
        problems.push(
          `${from}:${line}: imports ${target}, which is not deployed (local/, tests/, bench/)`,
        );
        continue;
      }
      if (!here || !there) continue;
      if (here.rank < 0) {
        problems.push(
          `${from}: _shared/ has no such layer; add the folder to FEATURES in ${SELF}`,
        );
        continue;
      }
      if (target.startsWith(here.folder)) continue; // sideways within a folder
      if (there.rank < here.rank && there.rank >= 0) continue; // down
      problems.push(
        `${from}:${line}: ${here.layer} imports ${target} (${there.layer}), ` +
          (there.rank === here.rank
            ? "a folder beside it: move what both need down a layer, or into one folder"
            : "a layer above it: move what it needs down, or hand it in from above"),
      );
    }
  }
  return problems;
}

/** The rooms of `local/`, lowest first: each may import the ones before it. */
export const LOCAL_ROOMS: readonly (readonly string[])[] = [
  ["db", "storage"],
  ["generators", "checks", "console"],
];

/** The room a file of `local/` belongs in, by its name. */
const ROOM_BY_NAME: ReadonlyArray<readonly [RegExp, string]> = [
  [/^(postgres|pg_\w+|migrate|platform\w*|sql_statements|seed|db_reset)\.(ts|sql)$/, "db"],
  [/^(catalog|openapi\w*|db_types|deno_fmt)\.ts$/, "generators"],
  [/^check_\w+\.ts$/, "checks"],
];

/** The problems of `local/`'s rooms in `graph` (rule 3). */
export function localRoomProblems(graph: ReadonlyMap<string, readonly Import[]>): Problem[] {
  const roomOf = (path: string) => /^local\/([^/]+)\//.exec(path)?.[1] ?? null;
  const inLocal = (path: string) => path.startsWith("local/");
  const rank = (room: string) => LOCAL_ROOMS.findIndex((line) => line.includes(room));
  /** Top-level files of local/ that import no room: any room may use them. */
  const leaves = new Set(
    [...graph].filter(([file, imports]) =>
      inLocal(file) && roomOf(file) === null &&
      !imports.some(({ target }) => inLocal(target) && roomOf(target) !== null)
    ).map(([file]) => file),
  );
  const problems: Problem[] = [];
  for (const [from, imports] of graph) {
    if (!inLocal(from)) continue;
    const room = roomOf(from);
    const name = from.slice(from.lastIndexOf("/") + 1);
    const belongs = ROOM_BY_NAME.find(([pattern]) => pattern.test(name))?.[1];
    if (belongs !== undefined && room !== belongs) {
      problems.push(`${from}: belongs in local/${belongs}/ with the rest of its room`);
    }
    if (room === null) continue;
    if (rank(room) < 0) {
      problems.push(`${from}: local/ has no such room; add it to LOCAL_ROOMS in ${SELF}`);
      continue;
    }
    for (const { line, target } of imports) {
      if (!inLocal(target)) continue;
      const there = roomOf(target);
      if (there === room) continue;
      if (there === null ? leaves.has(target) : rank(there) >= 0 && rank(there) < rank(room)) {
        continue;
      }
      problems.push(
        `${from}:${line}: room ${room} imports ${target}, ` +
          (there === null
            ? "a top-level file that puts rooms together: hand in what it needs from there"
            : `room ${there}, not below it: move what both need into a lower room`),
      );
    }
  }
  return problems;
}

/** The import cycles of `graph` (its strongly connected components of more than one file, or a self-import). */
export function cycles(graph: ReadonlyMap<string, readonly Import[]>): string[][] {
  // Tarjan's algorithm, iterative so deep graphs do not overflow the stack.
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const found: string[][] = [];
  let next = 0;
  const targets = (node: string) =>
    (graph.get(node) ?? []).map((i) => i.target).filter((t) => graph.has(t));
  for (const root of graph.keys()) {
    if (index.has(root)) continue;
    const work: Array<{ node: string; edges: string[]; i: number }> = [];
    const open = (node: string) => {
      index.set(node, next);
      low.set(node, next);
      next++;
      stack.push(node);
      onStack.add(node);
      work.push({ node, edges: targets(node), i: 0 });
    };
    open(root);
    while (work.length > 0) {
      const frame = work[work.length - 1]!;
      if (frame.i < frame.edges.length) {
        const to = frame.edges[frame.i++]!;
        if (!index.has(to)) open(to);
        else if (onStack.has(to)) {
          low.set(frame.node, Math.min(low.get(frame.node)!, index.get(to)!));
        }
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) low.set(parent.node, Math.min(low.get(parent.node)!, low.get(frame.node)!));
      if (low.get(frame.node) === index.get(frame.node)) {
        const component: string[] = [];
        let member: string;
        do {
          member = stack.pop()!;
          onStack.delete(member);
          component.push(member);
        } while (member !== frame.node);
        const selfImport = targets(frame.node).includes(frame.node);
        if (component.length > 1 || selfImport) found.push(component.sort());
      }
    }
  }
  return found;
}

/** Every .ts file under `dirs` of `root`, repo-relative. */
export function sourceFiles(root: string, dirs: readonly string[]): string[] {
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const entry of Deno.readDirSync(join(root, dir))) {
      if (entry.name === "node_modules" || entry.name.startsWith(".")) continue;
      const path = join(dir, entry.name);
      if (entry.isDirectory) walk(path);
      else if (entry.isFile && /\.(ts|tsx)$/.test(entry.name)) files.push(path);
    }
  };
  for (const dir of dirs) walk(dir);
  return files.sort();
}

/** The import graph of the repository at `root`. */
export function importGraph(root: string): Map<string, Import[]> {
  const graph = new Map<string, Import[]>();
  for (
    const file of sourceFiles(root, ["supabase/functions", "shared", "local", "tests", "bench"])
  ) {
    graph.set(file, importsOf(file, Deno.readTextFileSync(join(root, file))));
  }
  return graph;
}

if (import.meta.main) {
  const root = resolve(fileURLToPath(new URL("../..", import.meta.url)));
  const graph = importGraph(root);
  const problems = [...layerProblems(graph), ...localRoomProblems(graph)];
  for (const cycle of cycles(graph)) problems.push(`import cycle: ${cycle.join(" ↔ ")}`);
  if (problems.length > 0) {
    console.error(`Import rules broken (${problems.length}); see ${SELF}:\n`);
    for (const problem of problems) console.error(`  ${problem}`);
    Deno.exit(1);
  }
  const files = [...graph.keys()].filter((f) => placeOf(f) !== null).length;
  console.log(
    `Imports: ${files} files keep the layers of _shared/, local/ keeps its rooms, and there is no import cycle.`,
  );
}
