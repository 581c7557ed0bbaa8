/**
 * `deno task check:migrations` (run by CI before the tests): a migration that
 * has landed is never edited, deleted or renamed; changes go in a new one.
 *
 * - On a branch (a merge base with `origin/main` exists and is not HEAD):
 *   every migration file at the merge base must be byte-identical at HEAD.
 * - Otherwise (CI's fresh clone of main): every commit after the one that
 *   added this script is checked; none may modify, delete or rename a
 *   migration file that existed in its parent. Commits before the rule are
 *   not judged.
 *
 * A shallow clone is checked as far as its history goes, and says what it
 * could not check. The one exception is {@linkcode ALLOWED_EDITS}: an edit
 * from exactly one content to exactly another, allowed once before the first
 * release.
 *
 * It also reads every migration file (as it is on disk) for statements that
 * need ownership of a platform table (`auth.*`, `storage.*`, `realtime.*`):
 * hosted Supabase applies migrations as `postgres`, which owns none, so
 * `supabase db push` would stop there (see `platform_ownership.ts`).
 *
 * @module
 */
import { ownershipProblem } from "../db/platform_ownership.ts";
import { REPO_ROOT } from "../paths.ts";
import { splitStatements } from "../db/sql_statements.ts";

/** A landed migration's edit that is allowed: from exactly one content to exactly another. */
export interface AllowedEdit {
  /** The file, relative to the repository root. */
  path: string;
  /** Git blob id of the content before the edit. */
  from: string;
  /** Git blob id of the content after it. */
  to: string;
}

/**
 * The landed migrations edited by exception. 20261123002700_deal_documents.sql
 * had `comment on policy … on storage.objects`, which hosted projects with
 * supautils before 3.3.0 refuse ("must be owner of relation objects"), so
 * `supabase db push` stopped there; before the first release it became a `--`
 * comment (its previous checksum is accepted by `migrate.ts` too).
 */
export const ALLOWED_EDITS: readonly AllowedEdit[] = [
  {
    path: "supabase/migrations/20261123002700_deal_documents.sql",
    from: "c29b682c09211e6d0232bcb590e2ca73a0567325",
    to: "64c45645f22f3ac6a564f9c700de4ca2fac7d9f2",
  },
];

/** Options for {@linkcode checkMigrations}. */
export interface CheckMigrationsOptions {
  /** The repository's folder. */
  repo: string;
  /** Folder of the migrations, relative to the repository root. */
  migrationsDir?: string;
  /** This script, relative to the repository root: the commit adding it starts the rule. */
  scriptPath?: string;
  /** The main line a branch is compared with. */
  baseRef?: string;
  /** Edits of landed migrations that are allowed (default {@linkcode ALLOWED_EDITS}). */
  allowedEdits?: readonly AllowedEdit[];
}

/** What the check found. */
export interface CheckMigrationsResult {
  /** The changes to landed migrations, one line each (empty: the rule holds). */
  violations: string[];
  /** Statements that need ownership of a platform table, one line each (`file:line: …`). */
  ownership: string[];
  /** What was checked, and what could not be (shallow history). */
  notes: string[];
}

/** Checks that no landed migration was edited; see the module doc for the two modes. */
export async function checkMigrations(
  options: CheckMigrationsOptions,
): Promise<CheckMigrationsResult> {
  const dir = (options.migrationsDir ?? "supabase/migrations").replace(/\/$/, "");
  const git = (...args: string[]) => runGit(options.repo, args);
  const head = (await git("rev-parse", "HEAD")).trim();
  const baseRef = options.baseRef ?? "origin/main";

  const allowed = options.allowedEdits ?? ALLOWED_EDITS;
  const isAllowed = (path: string, from: string, to: string) =>
    allowed.some((edit) => edit.path === path && edit.from === from && edit.to === to);

  const base = await tryGit(options.repo, ["merge-base", baseRef, "HEAD"]);
  const history = base && base.trim() !== head
    ? await compareWithBase(git, dir, base.trim(), baseRef, isAllowed)
    : await walkSinceRule(git, options.repo, dir, options.scriptPath ?? SCRIPT_PATH, isAllowed);
  const ownership = await ownershipStatements(options.repo, dir);
  return {
    ...history,
    ownership: ownership.problems,
    notes: [
      ...history.notes,
      `Read ${ownership.files} migration file(s) for statements that need ownership of a platform table.`,
    ],
  };
}

/** Statements of the migration files on disk that need ownership of a platform table. */
async function ownershipStatements(
  repo: string,
  dir: string,
): Promise<{ files: number; problems: string[] }> {
  const names: string[] = [];
  try {
    for await (const entry of Deno.readDir(`${repo.replace(/\/$/, "")}/${dir}`)) {
      if (entry.isFile && /^\d+_.+\.sql$/.test(entry.name)) names.push(entry.name);
    }
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  names.sort();
  const problems: string[] = [];
  for (const name of names) {
    const sql = await Deno.readTextFile(`${repo.replace(/\/$/, "")}/${dir}/${name}`);
    for (const statement of splitStatements(sql)) {
      const problem = ownershipProblem(statement);
      if (problem) problems.push(`${dir}/${name}:${problem.line}: ${problem.message}`);
    }
  }
  return { files: names.length, problems };
}

/** What the history check found. */
type HistoryResult = Omit<CheckMigrationsResult, "ownership">;
type IsAllowed = (path: string, from: string, to: string) => boolean;

/** This script's path in the repository. */
const SCRIPT_PATH = "local/checks/check_migrations.ts";

type Git = (...args: string[]) => Promise<string>;

async function compareWithBase(
  git: Git,
  dir: string,
  base: string,
  baseRef: string,
  isAllowed: IsAllowed,
): Promise<HistoryResult> {
  const before = await blobs(git, base, dir);
  const after = await blobs(git, "HEAD", dir);
  const violations: string[] = [];
  for (const [path, blob] of before) {
    const now = after.get(path);
    if (now === undefined) {
      violations.push(
        `${path} existed at the merge base with ${baseRef} and was deleted or renamed`,
      );
    } else if (now !== blob && !isAllowed(path, blob, now)) {
      violations.push(`${path} existed at the merge base with ${baseRef} and was modified`);
    }
  }
  return {
    violations,
    notes: [
      `Compared ${before.size} landed migration(s) at the merge base ${
        base.slice(0, 10)
      } with ${baseRef} against HEAD.`,
    ],
  };
}

async function walkSinceRule(
  git: Git,
  repo: string,
  dir: string,
  scriptPath: string,
  isAllowed: IsAllowed,
): Promise<HistoryResult> {
  // The rule starts with the commit that added this script, wherever it stood
  // then (`--follow`: it moved from local/ to local/checks/).
  const history = (await git("log", "--follow", "--format=%H", "--", scriptPath))
    .trim().split("\n").filter(Boolean);
  const rule = history.at(-1);
  if (!rule) {
    return {
      violations: [],
      notes: [`${scriptPath} is not committed yet: no commit is under the rule.`],
    };
  }
  const notes: string[] = [];
  const shallow = await shallowCommits(repo);
  if (shallow.has(rule)) {
    notes.push(
      `Shallow clone: history before ${
        rule.slice(0, 10)
      } is missing, so commits up to it could not be checked (git fetch --unshallow to check them).`,
    );
  }
  const range = `${rule}..HEAD`;
  const commits = (await git("rev-list", "--ancestry-path", range)).trim().split("\n")
    .filter(Boolean);
  const unchecked = commits.filter((c) => shallow.has(c));
  if (unchecked.length > 0) {
    notes.push(
      `Shallow clone: ${
        unchecked.map((c) => c.slice(0, 10)).join(", ")
      } could not be checked (its parent is missing).`,
    );
  }
  const log = await git(
    "log",
    "--reverse",
    "--ancestry-path",
    "--no-renames",
    "--diff-merges=first-parent",
    "--diff-filter=MDT",
    "--raw",
    "--no-abbrev",
    "--format=%x00%H %s",
    range,
    "--",
    dir,
  );
  const violations: string[] = [];
  for (const block of log.split("\0").filter((b) => b.trim())) {
    const [title = "", ...changes] = block.trim().split("\n");
    const commit = title.slice(0, 40);
    if (shallow.has(commit)) continue;
    // --raw lines: ":<old mode> <new mode> <old blob> <new blob> <status>\t<path>"
    for (const change of changes.filter((line) => line.startsWith(":"))) {
      const [meta = "", path = ""] = change.split("\t");
      const [, , from = "", to = "", status = ""] = meta.split(" ");
      if (status.startsWith("M") && isAllowed(path, from, to)) continue;
      const what = status.startsWith("D") ? "deleted or renamed" : "modified";
      violations.push(
        `${path} was ${what} by commit ${commit.slice(0, 10)} "${title.slice(41)}" after it landed`,
      );
    }
  }
  const start = shallow.has(rule)
    ? "the oldest commit of this shallow clone"
    : "the commit that introduced the check";
  notes.push(
    `Checked ${commits.length - unchecked.length} commit(s) after ${rule.slice(0, 10)} (${start}).`,
  );
  return { violations, notes };
}

/** Path → blob id of every file under `dir` at `rev`. */
async function blobs(git: Git, rev: string, dir: string): Promise<Map<string, string>> {
  const out = await git("ls-tree", "-r", "-z", rev, "--", `${dir}/`);
  const files = new Map<string, string>();
  for (const entry of out.split("\0").filter(Boolean)) {
    const [meta = "", path = ""] = entry.split("\t");
    files.set(path, meta.split(" ")[2] ?? "");
  }
  return files;
}

/** The commits whose parents a shallow clone lacks (empty for a full clone). */
async function shallowCommits(repo: string): Promise<Set<string>> {
  const file =
    (await runGit(repo, ["rev-parse", "--path-format=absolute", "--git-path", "shallow"]))
      .trim();
  try {
    return new Set((await Deno.readTextFile(file)).split("\n").filter(Boolean));
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return new Set();
    throw error;
  }
}

async function runGit(repo: string, args: string[]): Promise<string> {
  const out = await new Deno.Command("git", { args, cwd: repo, stdin: "null" }).output();
  if (out.code !== 0) {
    const detail = new TextDecoder().decode(out.stderr).trim().split("\n")[0];
    throw new Error(`git ${args[0]} failed: ${detail}`);
  }
  return new TextDecoder().decode(out.stdout);
}

async function tryGit(repo: string, args: string[]): Promise<string | null> {
  try {
    return await runGit(repo, args);
  } catch {
    return null;
  }
}

if (import.meta.main) {
  try {
    const { violations, ownership, notes } = await checkMigrations({ repo: REPO_ROOT });
    for (const note of notes) console.log(note);
    if (violations.length > 0) {
      console.error("Cannot accept: landed migrations changed (they are immutable):");
      for (const line of violations) console.error(`  ${line}`);
      console.error(
        "Revert those changes and put them in a new migration under supabase/migrations/.",
      );
    }
    if (ownership.length > 0) {
      console.error(
        "Cannot accept: statements that hosted Supabase refuses to `postgres`, which owns no table of auth, storage or realtime:",
      );
      for (const line of ownership) console.error(`  ${line}`);
    }
    if (violations.length > 0 || ownership.length > 0) Deno.exit(1);
    console.log(
      "Landed migrations are unchanged, and no statement needs ownership of a platform table.",
    );
  } catch (error) {
    console.error(
      `Cannot check the migrations: ${error instanceof Error ? error.message : error}`,
    );
    Deno.exit(1);
  }
}
