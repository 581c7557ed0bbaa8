/**
 * What the role `postgres` may do to the tables hosted Supabase owns.
 *
 * On hosted Supabase `supabase db push` runs as `postgres`, which is not a
 * superuser and owns none of the tables of the platform schemas `auth`,
 * `storage` and `realtime` (supabase_auth_admin, supabase_storage_admin and
 * supabase_realtime_admin do; see `local/db/platform.sql` for the sources). The
 * `supautils` extension lets `postgres` CREATE, ALTER and DROP POLICY on the
 * tables listed for it in `supautils.policy_grants` by running those
 * statements as the superuser; every other owner-only statement on those
 * tables fails with "must be owner of …". COMMENT ON POLICY is covered only
 * from supautils 3.3.0 (July 2026); older projects refuse it, so it counts as
 * owner-only here.
 *
 * @module
 */
import { readName, type SqlStatement, type SqlToken, wordsAt } from "./sql_statements.ts";

/**
 * `supautils.policy_grants` for `postgres`, as hosted Supabase configures it
 * (supabase/postgres, ansible/files/postgresql_config/supautils.conf.j2).
 */
export const POLICY_GRANT_TABLES: ReadonlySet<string> = new Set([
  "auth.audit_log_entries",
  "auth.identities",
  "auth.refresh_tokens",
  "auth.sessions",
  "auth.users",
  "realtime.messages",
  "storage.buckets",
  "storage.migrations",
  "storage.objects",
  "storage.s3_multipart_uploads",
  "storage.s3_multipart_uploads_parts",
]);

/** Schemas whose tables the platform's own roles own. */
export const PLATFORM_SCHEMAS: ReadonlySet<string> = new Set(["auth", "storage", "realtime"]);

/** A policy statement supautils runs as the superuser for `postgres`. */
export interface GrantedPolicyStatement {
  verb: "create" | "alter" | "drop";
  /** `schema.table`, as listed in {@linkcode POLICY_GRANT_TABLES}. */
  table: string;
}

/**
 * The statement when it is CREATE, ALTER (not RENAME: supautils leaves that
 * to PostgreSQL) or DROP POLICY on a table of `supautils.policy_grants`;
 * else null. Only schema-qualified table names match (supautils resolves an
 * unqualified name through the search path, where no platform schema is).
 */
export function grantedPolicyStatement(tokens: SqlToken[]): GrantedPolicyStatement | null {
  const verb = tokens[0]?.kind === "word" ? tokens[0].value : "";
  if ((verb !== "create" && verb !== "alter" && verb !== "drop") || !wordsAt(tokens, 1, "policy")) {
    return null;
  }
  let i = 2;
  if (verb === "drop" && wordsAt(tokens, i, "if", "exists")) i += 2;
  const policy = readName(tokens, i);
  if (!policy || policy.parts.length !== 1 || !wordsAt(tokens, policy.next, "on")) return null;
  const table = readName(tokens, policy.next + 1);
  if (!table || table.parts.length !== 2) return null;
  if (verb === "alter" && wordsAt(tokens, table.next, "rename")) return null;
  const name = table.parts.join(".");
  return POLICY_GRANT_TABLES.has(name) ? { verb, table: name } : null;
}

/** A statement that would fail on hosted Supabase for lack of ownership. */
export interface OwnershipProblem {
  /** 1-based line of the statement. */
  line: number;
  /** What is wrong and what to do, one line. */
  message: string;
}

/**
 * Why this statement needs ownership of a platform table (and so fails on
 * hosted Supabase, where `postgres` owns none), or null. Recognised: COMMENT
 * ON POLICY/TRIGGER/CONSTRAINT/RULE … ON, COMMENT ON TABLE/COLUMN/INDEX,
 * ALTER TABLE, ALTER POLICY … RENAME, CREATE/ALTER/DROP POLICY on a platform
 * table that supautils does not list, and CREATE INDEX … ON.
 */
export function ownershipProblem(statement: SqlStatement): OwnershipProblem | null {
  const { tokens, line } = statement;
  const problem = (what: string, table: string, fix: string): OwnershipProblem => ({
    line,
    message:
      `${what} needs ownership of ${table}, which hosted Supabase's "postgres" does not have ("must be owner of …"); ${fix}`,
  });

  if (wordsAt(tokens, 0, "comment", "on")) {
    const kind = tokens[2]?.kind === "word" ? tokens[2].value : "";
    if (["policy", "trigger", "rule"].includes(kind)) {
      const name = readName(tokens, 3);
      const table = name && wordsAt(tokens, name.next, "on")
        ? platformTable(tokens, name.next + 1)
        : null;
      if (table) {
        return problem(
          `COMMENT ON ${kind.toUpperCase()} … ON ${table}`,
          table,
          kind === "policy"
            ? "write the explanation as a -- comment next to the policy (supautils allows COMMENT ON POLICY only from 3.3.0)"
            : "write the explanation as a -- comment instead",
        );
      }
    }
    if (kind === "constraint") {
      const name = readName(tokens, 3);
      let i = name && wordsAt(tokens, name.next, "on") ? name.next + 1 : -1;
      if (i >= 0 && wordsAt(tokens, i, "domain")) i = -1;
      const table = i >= 0 ? platformTable(tokens, i) : null;
      if (table) {
        return problem(`COMMENT ON CONSTRAINT … ON ${table}`, table, "write a -- comment instead");
      }
    }
    if (["table", "index", "column"].includes(kind)) {
      const name = readName(tokens, 3);
      const parts = name ? (kind === "column" ? name.parts.slice(0, -1) : name.parts) : [];
      const table = parts.length === 2 && PLATFORM_SCHEMAS.has(parts[0]!) ? parts.join(".") : null;
      if (table) {
        return problem(
          `COMMENT ON ${kind.toUpperCase()} ${name!.parts.join(".")}`,
          table,
          "write a -- comment instead",
        );
      }
    }
    return null;
  }

  if (wordsAt(tokens, 0, "alter", "table")) {
    let i = 2;
    if (wordsAt(tokens, i, "if", "exists")) i += 2;
    if (wordsAt(tokens, i, "only")) i++;
    const table = platformTable(tokens, i);
    if (table) {
      return problem(
        `ALTER TABLE ${table}`,
        table,
        "leave the platform's tables as they are (their services migrate them)",
      );
    }
    return null;
  }

  const verb = tokens[0]?.kind === "word" ? tokens[0].value : "";
  if ((verb === "create" || verb === "alter" || verb === "drop") && wordsAt(tokens, 1, "policy")) {
    let i = 2;
    if (verb === "drop" && wordsAt(tokens, i, "if", "exists")) i += 2;
    const name = readName(tokens, i);
    const table = name && wordsAt(tokens, name.next, "on")
      ? platformTable(tokens, name.next + 1)
      : null;
    if (table && !grantedPolicyStatement(tokens)) {
      return problem(
        `${verb.toUpperCase()} POLICY … ON ${table}${verb === "alter" ? " … RENAME" : ""}`,
        table,
        verb === "alter"
          ? "drop the policy and create it under the new name"
          : "supautils.policy_grants does not list this table for postgres",
      );
    }
    return null;
  }

  if (verb === "create") {
    let i = 1;
    if (wordsAt(tokens, i, "unique")) i++;
    if (!wordsAt(tokens, i, "index")) return null;
    const on = tokens.findIndex((t, k) => k > i && t.kind === "word" && t.value === "on");
    if (on < 0) return null;
    const table = platformTable(tokens, wordsAt(tokens, on + 1, "only") ? on + 2 : on + 1);
    if (table) {
      return problem(`CREATE INDEX … ON ${table}`, table, "index a table of your own instead");
    }
  }
  return null;
}

/** `schema.table` when the name at `index` is a table of a platform schema. */
function platformTable(tokens: SqlToken[], index: number): string | null {
  const name = readName(tokens, index);
  if (!name || name.parts.length !== 2 || !PLATFORM_SCHEMAS.has(name.parts[0]!)) return null;
  return name.parts.join(".");
}
