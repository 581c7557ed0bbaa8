/**
 * `expand[]` handling: replaces id strings at dotted paths (`customer`,
 * `data.latest_invoice`, `items.data.price.product`) with the stored objects.
 *
 * @module
 */
import { invalidRequest } from "./errors.ts";

/** Looks up any object by id and returns a fresh copy (or undefined). */
export type Resolver = (id: string) => unknown;

/** Expands every path in `paths` on `root` (a fresh copy; mutated in place). */
export function expand(root: unknown, paths: readonly string[], resolve: Resolver): unknown {
  for (const path of paths) {
    if (path === "total_count") continue;
    expandPath(root, path.split("."), path, resolve);
  }
  return root;
}

function expandPath(node: unknown, segments: string[], path: string, resolve: Resolver): void {
  if (Array.isArray(node)) {
    for (const entry of node) expandPath(entry, segments, path, resolve);
    return;
  }
  if (node === null || typeof node !== "object") return;
  const record = node as Record<string, unknown>;
  const [key = "", ...rest] = segments;
  if (!(key in record)) {
    throw invalidRequest(`This property cannot be expanded (${path}).`, "expand");
  }
  let child = record[key];
  if (typeof child === "string") {
    const found = resolve(child);
    if (found !== undefined) record[key] = child = found;
  }
  if (rest.length > 0) expandPath(child, rest, path, resolve);
}
