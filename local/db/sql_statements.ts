/**
 * Splits a migration's SQL into its top-level statements, as PostgreSQL's
 * lexer sees them: `--` and nested `/* … *\/` comments, '…' strings (E'…'
 * with backslash escapes), "…" identifiers and $tag$…$tag$ bodies are kept
 * whole, so a `;` inside them ends nothing. Each statement comes with its
 * exact text (so running the pieces in order runs the file) and its tokens
 * without comments (so a statement can be recognised by its first words).
 *
 * A `BEGIN ATOMIC … END` function body is one statement: as psql does, in a
 * CREATE FUNCTION or PROCEDURE each BEGIN or CASE opens a block that END
 * closes, and a `;` inside a block ends nothing.
 *
 * Used by the migration runner (`migrate.ts`, which runs a file statement by
 * statement and has the policy statements of supautils' policy_grants run as
 * the superuser) and by `check_migrations.ts` (statements that need ownership
 * of platform tables).
 *
 * @module
 */

/** A token of a statement (comments and whitespace are not tokens). */
export interface SqlToken {
  /** word: keyword or unquoted identifier (lower-cased); ident: "quoted"; string: any literal body. */
  kind: "word" | "ident" | "string" | "number" | "symbol";
  /** The word lower-cased, the quoted identifier unescaped, or the raw text. */
  value: string;
}

/** One top-level statement of a file. */
export interface SqlStatement {
  /** The exact text, from after the previous statement's `;` to this one's `;` (included). */
  text: string;
  /** Offset of `text` in the file. */
  start: number;
  /** The tokens, without comments; the final `;` excluded. */
  tokens: SqlToken[];
  /** 1-based line of the statement's first token. */
  line: number;
}

const IDENT_START = /[A-Za-z_\u0080-\uffff]/;
const IDENT_CHAR = /[A-Za-z0-9_$\u0080-\uffff]/;
const DOLLAR_TAG = /^\$(?:[A-Za-z_\u0080-\uffff][A-Za-z0-9_\u0080-\uffff]*)?\$/;
const OPERATOR_CHAR = /[+\-*/<>=~!@#%^&|`?]/;

/** The file's statements in order; text between statements (comments, blanks) belongs to the next one. */
export function splitStatements(sql: string): SqlStatement[] {
  const statements: SqlStatement[] = [];
  let start = 0;
  let tokens: SqlToken[] = [];
  let firstTokenAt = -1;
  let blocks = 0;
  let i = 0;
  const push = (token: SqlToken, at: number) => {
    if (firstTokenAt < 0) firstTokenAt = at;
    tokens.push(token);
    if (token.kind === "word" && isRoutineDefinition(tokens)) {
      if (token.value === "begin" || token.value === "case") blocks++;
      else if (token.value === "end" && blocks > 0) blocks--;
    }
  };
  const finish = (end: number) => {
    if (tokens.length > 0) {
      statements.push({
        text: sql.slice(start, end),
        start,
        tokens,
        line: lineOf(sql, firstTokenAt),
      });
    } else if (statements.length > 0) {
      // Comments or blanks only: they belong to the previous statement's text.
      const last = statements[statements.length - 1]!;
      last.text = sql.slice(last.start, end);
    }
    start = end;
    tokens = [];
    firstTokenAt = -1;
    blocks = 0;
  };

  while (i < sql.length) {
    const c = sql[i]!;
    const next = sql[i + 1];
    if (/\s/.test(c)) {
      i++;
    } else if (c === "-" && next === "-") {
      const end = sql.indexOf("\n", i);
      i = end < 0 ? sql.length : end + 1;
    } else if (c === "/" && next === "*") {
      let depth = 1;
      i += 2;
      while (i < sql.length && depth > 0) {
        if (sql[i] === "/" && sql[i + 1] === "*") {
          depth++;
          i += 2;
        } else if (sql[i] === "*" && sql[i + 1] === "/") {
          depth--;
          i += 2;
        } else {
          i++;
        }
      }
    } else if (c === "'") {
      const escapes = /[eE]/.test(sql[i - 1] ?? "") && !IDENT_CHAR.test(sql[i - 2] ?? "");
      const at = i;
      i = endOfQuoted(sql, i, "'", escapes);
      push({ kind: "string", value: sql.slice(at, i) }, at);
    } else if (c === '"') {
      const at = i;
      i = endOfQuoted(sql, i, '"', false);
      push({ kind: "ident", value: sql.slice(at + 1, i - 1).replaceAll('""', '"') }, at);
    } else if (c === "$" && !IDENT_CHAR.test(sql[i - 1] ?? "") && DOLLAR_TAG.test(sql.slice(i))) {
      const tag = DOLLAR_TAG.exec(sql.slice(i))![0];
      const close = sql.indexOf(tag, i + tag.length);
      const at = i;
      i = close < 0 ? sql.length : close + tag.length;
      push({ kind: "string", value: sql.slice(at, i) }, at);
    } else if (IDENT_START.test(c)) {
      const at = i;
      while (i < sql.length && IDENT_CHAR.test(sql[i]!)) i++;
      const word = sql.slice(at, i);
      // E'…', B'…', X'…', U&'…' prefixes: the string follows as its own token.
      push({ kind: "word", value: word.toLowerCase() }, at);
    } else if (/[0-9]/.test(c) || (c === "." && /[0-9]/.test(next ?? ""))) {
      const at = i;
      while (i < sql.length && /[0-9A-Za-z_.]/.test(sql[i]!)) i++;
      push({ kind: "number", value: sql.slice(at, i) }, at);
    } else if (c === ";") {
      i++;
      if (blocks > 0) push({ kind: "symbol", value: ";" }, i - 1);
      else finish(i);
    } else if (OPERATOR_CHAR.test(c)) {
      const at = i;
      while (
        i < sql.length && OPERATOR_CHAR.test(sql[i]!) &&
        !(sql[i] === "-" && sql[i + 1] === "-") && !(sql[i] === "/" && sql[i + 1] === "*")
      ) i++;
      push({ kind: "symbol", value: sql.slice(at, i) }, at);
    } else {
      push({ kind: "symbol", value: c }, i);
      i++;
    }
  }
  finish(sql.length);
  return statements;
}

/** Whether the statement so far is CREATE [OR REPLACE] FUNCTION or PROCEDURE. */
function isRoutineDefinition(tokens: SqlToken[]): boolean {
  const at = wordsAt(tokens, 1, "or", "replace") ? 3 : 1;
  return wordsAt(tokens, 0, "create") &&
    (wordsAt(tokens, at, "function") || wordsAt(tokens, at, "procedure"));
}

/** Index just past the closing quote of the quoted text opening at `open`. */
function endOfQuoted(sql: string, open: number, quote: string, backslashes: boolean): number {
  let i = open + 1;
  while (i < sql.length) {
    const c = sql[i]!;
    if (backslashes && c === "\\") {
      i += 2;
    } else if (c === quote) {
      if (sql[i + 1] === quote) {
        i += 2;
      } else {
        return i + 1;
      }
    } else {
      i++;
    }
  }
  return sql.length;
}

function lineOf(sql: string, offset: number): number {
  let line = 1;
  for (let i = 0; i < offset; i++) if (sql[i] === "\n") line++;
  return line;
}

/** A (possibly schema-qualified) name read from tokens. */
export interface QualifiedName {
  /** The parts as PostgreSQL resolves them: unquoted lower-cased, quoted exact. */
  parts: string[];
  /** Index of the first token after the name. */
  next: number;
}

/** Reads `name(.name)*` at `index`, or null when no name starts there. */
export function readName(tokens: SqlToken[], index: number): QualifiedName | null {
  const parts: string[] = [];
  let i = index;
  for (;;) {
    const token = tokens[i];
    if (!token || (token.kind !== "word" && token.kind !== "ident")) break;
    parts.push(token.value);
    i++;
    if (tokens[i]?.kind === "symbol" && tokens[i]!.value === ".") {
      i++;
      continue;
    }
    break;
  }
  return parts.length === 0 ? null : { parts, next: i };
}

/** Whether the tokens from `index` are the given words. */
export function wordsAt(tokens: SqlToken[], index: number, ...words: string[]): boolean {
  return words.every((word, k) => {
    const token = tokens[index + k];
    return token?.kind === "word" && token.value === word;
  });
}
