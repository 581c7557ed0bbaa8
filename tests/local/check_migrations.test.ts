import assert from "node:assert/strict";
import { checkMigrations } from "../../local/check_migrations.ts";

/** A throwaway git repository in a temp folder. */
class Repo {
  constructor(readonly dir: string) {}

  static async create(): Promise<Repo> {
    const repo = new Repo(await Deno.makeTempDir({ prefix: "check-migrations-" }));
    await repo.git("init", "-q", "-b", "main");
    return repo;
  }

  async git(...args: string[]): Promise<string> {
    const out = await new Deno.Command("git", {
      args: [
        "-c",
        "user.name=Test",
        "-c",
        "user.email=test@example.com",
        "-c",
        "commit.gpgsign=false",
        ...args,
      ],
      cwd: this.dir,
      env: { GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: "/dev/null" },
      stdin: "null",
    }).output();
    if (out.code !== 0) throw new Error(new TextDecoder().decode(out.stderr));
    return new TextDecoder().decode(out.stdout).trim();
  }

  /** Writes (or with `null` deletes) files, then commits everything; returns the commit. */
  async commit(message: string, files: Record<string, string | null>): Promise<string> {
    for (const [path, text] of Object.entries(files)) {
      const full = `${this.dir}/${path}`;
      if (text === null) {
        await Deno.remove(full);
      } else {
        await Deno.mkdir(full.slice(0, full.lastIndexOf("/")), { recursive: true });
        await Deno.writeTextFile(full, text);
      }
    }
    await this.git("add", "-A");
    await this.git("commit", "-q", "-m", message);
    return await this.git("rev-parse", "HEAD");
  }

  check() {
    return checkMigrations({ repo: this.dir });
  }

  async remove(): Promise<void> {
    await Deno.remove(this.dir, { recursive: true });
  }
}

const A = "supabase/migrations/001_a.sql";
const B = "supabase/migrations/002_b.sql";
const SCRIPT = "local/check_migrations.ts";

/** History where migrations were edited before the check existed, then the check landed. */
async function repoWithRule(): Promise<Repo> {
  const repo = await Repo.create();
  await repo.commit("first migration", { [A]: "create table a (id int);" });
  await repo.commit("edit it before the rule", { [A]: "create table a (id bigint);" });
  await repo.commit("add the check", { [SCRIPT]: "// the check" });
  return repo;
}

Deno.test("check:migrations ignores edits made before the check was introduced", async () => {
  const repo = await repoWithRule();
  try {
    await repo.commit("a new migration", { [B]: "create table b (id int);" });
    const result = await repo.check();
    assert.deepEqual(result.violations, []);
    assert.match(
      result.notes.join("\n"),
      /Checked 1 commit\(s\) after \w+ \(the commit that introduced the check\)/,
    );
  } finally {
    await repo.remove();
  }
});

Deno.test(
  "check:migrations fails on a commit after the rule that modifies, deletes or renames a landed migration",
  async () => {
    const repo = await repoWithRule();
    try {
      await repo.commit("a new migration", { [B]: "create table b (id int);" });
      const edit = await repo.commit("edit a landed migration", {
        [A]: "create table a (id int8);",
      });
      let result = await repo.check();
      assert.equal(result.violations.length, 1, result.violations.join("\n"));
      assert.match(
        result.violations[0]!,
        new RegExp(`${A} was modified by commit ${edit.slice(0, 10)}`),
      );
      assert.match(result.violations[0]!, /"edit a landed migration"/);

      await repo.commit("rename and delete", {
        [B]: null,
        "supabase/migrations/003_b.sql": "create table b (id int);",
      });
      result = await repo.check();
      assert.equal(result.violations.length, 2, result.violations.join("\n"));
      assert.match(result.violations[1]!, new RegExp(`${B} was deleted or renamed`));
    } finally {
      await repo.remove();
    }
  },
);

Deno.test(
  "check:migrations on a branch: files at the merge base with origin/main must be identical at HEAD",
  async () => {
    const repo = await repoWithRule();
    try {
      const main = await repo.commit("b on main", { [B]: "create table b (id int);" });
      await repo.git("update-ref", "refs/remotes/origin/main", main);
      await repo.git("checkout", "-q", "-b", "feature");
      const NEW = "supabase/migrations/003_c.sql";
      await repo.commit("new migration on the branch", { [NEW]: "create table c (id int);" });
      await repo.commit("edit the branch's own migration", {
        [NEW]: "create table c (id bigint);",
      });
      let result = await repo.check();
      assert.deepEqual(result.violations, [], "a migration that has not landed may change");
      assert.match(result.notes.join("\n"), /merge base/);

      await repo.commit("edit a landed one", { [A]: "create table a (id smallint);" });
      await repo.commit("delete another", { [B]: null });
      result = await repo.check();
      assert.deepEqual(result.violations.sort(), [
        `${A} existed at the merge base with origin/main and was modified`,
        `${B} existed at the merge base with origin/main and was deleted or renamed`,
      ]);
    } finally {
      await repo.remove();
    }
  },
);

Deno.test("check:migrations says what a shallow clone could not check", async () => {
  const repo = await repoWithRule();
  const clone = new Repo(`${repo.dir}-shallow`);
  try {
    await repo.commit("a new migration", { [B]: "create table b (id int);" });
    await repo.commit("edit a landed migration", { [A]: "create table a (id int8);" });
    await new Deno.Command("git", {
      args: ["clone", "-q", "--depth", "1", `file://${repo.dir}`, clone.dir],
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).output();
    const result = await clone.check();
    assert.deepEqual(result.violations, []);
    assert.match(result.notes.join("\n"), /Shallow clone: .*could not be checked/);
  } finally {
    await repo.remove();
    await Deno.remove(clone.dir, { recursive: true }).catch(() => {});
  }
});

Deno.test("check:migrations passes before the check itself is committed", async () => {
  const repo = await Repo.create();
  try {
    await repo.commit("first", { [A]: "create table a (id int);" });
    await repo.commit("edit", { [A]: "create table a (id bigint);" });
    const result = await repo.check();
    assert.deepEqual(result.violations, []);
    assert.match(result.notes.join("\n"), /not committed yet/);
  } finally {
    await repo.remove();
  }
});
