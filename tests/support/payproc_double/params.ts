/**
 * Typed readers for bracket-decoded form parameters, failing the way the API
 * does (`parameter_missing`, `parameter_unknown`, invalid integers/booleans).
 *
 * @module
 */
import type { FormObject, FormValue } from "../http_double.ts";
import { invalidRequest, missingParam } from "./errors.ts";

/** The parameter as a string, or undefined; objects/arrays are rejected. */
export function optString(params: FormObject, key: string): string | undefined {
  const value = params[key];
  if (value === undefined) return undefined;
  if (typeof value !== "string") throw invalidRequest(`Invalid string: ${key}`, key);
  return value;
}

/** The parameter as a string; `parameter_missing` when absent or empty. */
export function reqString(params: FormObject, key: string): string {
  const value = optString(params, key);
  if (value === undefined || value === "") throw missingParam(key);
  return value;
}

/** The parameter as an integer, or undefined. */
export function optInt(params: FormObject, key: string): number | undefined {
  const value = optString(params, key);
  if (value === undefined || value === "") return undefined;
  if (!/^-?\d+$/.test(value)) throw invalidRequest(`Invalid integer: ${value}`, key);
  return Number(value);
}

/** The parameter as an integer; `parameter_missing` when absent. */
export function reqInt(params: FormObject, key: string): number {
  const value = optInt(params, key);
  if (value === undefined) throw missingParam(key);
  return value;
}

/** The parameter as a boolean, or undefined. */
export function optBool(params: FormObject, key: string): boolean | undefined {
  const value = optString(params, key);
  if (value === undefined || value === "") return undefined;
  if (value !== "true" && value !== "false") throw invalidRequest(`Invalid boolean: ${value}`, key);
  return value === "true";
}

/** The parameter as a nested object, or undefined. */
export function optObject(params: FormObject, key: string): FormObject | undefined {
  const value = params[key];
  if (value === undefined || value === "") return undefined;
  if (typeof value === "string") throw invalidRequest(`Invalid hash: ${key}`, key);
  if (Array.isArray(value)) return Object.fromEntries(value.entries());
  return value;
}

/** The parameter as an array (indexed or `[]` notation), or undefined. */
export function optArray(params: FormObject, key: string): FormValue[] | undefined {
  const value = params[key];
  if (value === undefined || value === "") return undefined;
  if (Array.isArray(value)) return value.filter((v) => v !== undefined);
  if (typeof value === "string") throw invalidRequest(`Invalid array: ${key}`, key);
  return Object.values(value);
}

/** Each array entry as an object (e.g. `line_items[0][price]`). */
export function objectArray(params: FormObject, key: string): FormObject[] {
  return (optArray(params, key) ?? []).map((entry, i) => {
    if (typeof entry !== "object" || Array.isArray(entry)) {
      throw invalidRequest(`Invalid object: ${key}[${i}]`, `${key}[${i}]`);
    }
    return entry;
  });
}

/** Each array entry as a string (e.g. `lookup_keys[0]`). */
export function stringArray(params: FormObject, key: string): string[] {
  return (optArray(params, key) ?? []).map((entry, i) => {
    if (typeof entry !== "string") throw invalidRequest(`Invalid string: ${key}[${i}]`, key);
    return entry;
  });
}

/** `expand[]` paths. */
export function expandPaths(params: FormObject): string[] {
  return stringArray(params, "expand");
}

/**
 * Applies a `metadata` parameter the way the API does: keys merge, an empty
 * value unsets a key, and `metadata=""` clears everything.
 */
export function applyMetadata(
  current: Record<string, string>,
  params: FormObject,
  key = "metadata",
): Record<string, string> {
  const value = params[key];
  if (value === undefined) return current;
  if (value === "") return {};
  if (typeof value === "string" || Array.isArray(value)) {
    throw invalidRequest(`Invalid hash: ${key}`, key);
  }
  const next = { ...current };
  for (const [k, v] of Object.entries(value)) {
    if (typeof v !== "string") throw invalidRequest(`Invalid string: ${key}[${k}]`, `${key}[${k}]`);
    if (v === "") delete next[k];
    else next[k] = v;
  }
  return next;
}

/** Rejects parameters not in `allowed` (plus `expand`) with `parameter_unknown`. */
export function rejectUnknownParams(params: FormObject, allowed: readonly string[]): void {
  for (const key of Object.keys(params)) {
    if (key !== "expand" && !allowed.includes(key)) {
      throw invalidRequest(`Received unknown parameter: ${key}`, key, "parameter_unknown");
    }
  }
}

/** Rejects a value outside `choices` the way the API does. */
export function requireOneOf<T extends string>(
  value: string,
  choices: readonly T[],
  param: string,
): T {
  if (!(choices as readonly string[]).includes(value)) {
    throw invalidRequest(
      `Invalid ${param}: must be one of ${choices.join(", ")}`,
      param,
    );
  }
  return value as T;
}
