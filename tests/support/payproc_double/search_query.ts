/**
 * The API's search query language, enough for tests: clauses such as
 * `email:'a@b.c'`, `metadata['user_id']:'u1'`, `name~'ali'`, `created>1700000000`,
 * `-status:'canceled'`, joined by `AND` or by `OR` (not mixed).
 *
 * @module
 */
import { invalidRequest } from "./errors.ts";

/** Reads a searchable field (`metadata` with `key`) of one object. */
export type SearchField = (field: string, key?: string) => string | number | null | undefined;

interface Clause {
  negated: boolean;
  field: string;
  key?: string;
  operator: string;
  value: string;
}

const CLAUSE =
  /^(-?)([a-z_]+)(?:\[['"]([^'"]*)['"]\])?\s*(:|~|>=|<=|>|<)\s*('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|\S+)$/;

function parseClause(text: string): Clause {
  const m = CLAUSE.exec(text.trim());
  if (!m) throw invalidRequest(`Invalid search query: could not parse '${text.trim()}'`, "query");
  const [, negation, field = "", key, operator = ":", raw = ""] = m;
  const quoted = raw.startsWith("'") || raw.startsWith('"');
  const value = quoted ? raw.slice(1, -1).replace(/\\(.)/g, "$1") : raw;
  return { negated: negation === "-", field, key, operator, value };
}

function clauseMatches(clause: Clause, read: SearchField): boolean {
  const actual = read(clause.field, clause.key);
  let result: boolean;
  if (actual === null || actual === undefined) {
    result = false;
  } else if (clause.operator === ":") {
    result = String(actual).toLowerCase() === clause.value.toLowerCase();
  } else if (clause.operator === "~") {
    result = String(actual).toLowerCase().includes(clause.value.toLowerCase());
  } else {
    const [a, b] = [Number(actual), Number(clause.value)];
    result = clause.operator === ">"
      ? a > b
      : clause.operator === ">="
      ? a >= b
      : clause.operator === "<"
      ? a < b
      : a <= b;
  }
  return clause.negated ? !result : result;
}

/** Compiles `query` into a predicate over objects read through `read`. */
export function compileSearch(query: string): (read: SearchField) => boolean {
  const hasAnd = /\sAND\s/.test(query);
  const hasOr = /\sOR\s/.test(query);
  if (hasAnd && hasOr) {
    throw invalidRequest("Invalid search query: AND and OR cannot be mixed.", "query");
  }
  const clauses = query.split(hasOr ? /\s+OR\s+/ : /\s+AND\s+/).map(parseClause);
  return (read) =>
    hasOr
      ? clauses.some((c) => clauseMatches(c, read))
      : clauses.every((c) => clauseMatches(c, read));
}
