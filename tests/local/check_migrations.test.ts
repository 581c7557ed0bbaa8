import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import {
  ALLOWED_EDITS,
  type AllowedEdit,
  checkMigrations,
} from "../../local/checks/check_migrations.ts";
import { ACCEPTED_PREVIOUS_CHECKSUMS } from "../../local/db/migrate.ts";
import { REPO_ROOT } from "../../local/paths.ts";

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

  check(allowedEdits?: readonly AllowedEdit[]) {
    return checkMigrations({ repo: this.dir, ...(allowedEdits ? { allowedEdits } : {}) });
  }

  /** The git blob id of a text. */
  async blob(text: string): Promise<string> {
    const file = `${this.dir}/.blob`;
    await Deno.writeTextFile(file, text);
    try {
      return await this.git("hash-object", file);
    } finally {
      await Deno.remove(file);
    }
  }

  async remove(): Promise<void> {
    await Deno.remove(this.dir, { recursive: true });
  }
}

const A = "supabase/migrations/001_a.sql";
const B = "supabase/migrations/002_b.sql";
const SCRIPT = "local/checks/check_migrations.ts";

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

Deno.test("check:migrations keeps its rule when the check itself moves", async () => {
  const repo = await Repo.create();
  try {
    await repo.commit("first migration", { [A]: "create table a (id int);" });
    const rule = await repo.commit("add the check", {
      "local/check_migrations.ts": "// the check",
    });
    await Deno.mkdir(`${repo.dir}/local/checks`);
    await repo.git("mv", "local/check_migrations.ts", SCRIPT);
    await repo.git("commit", "-q", "-m", "move the check into its room");
    await repo.commit("edit a landed migration", { [A]: "create table a (id bigint);" });
    const result = await repo.check();
    assert.match(result.notes.join("\n"), new RegExp(`after ${rule.slice(0, 10)}`));
    assert.equal(result.violations.length, 1, JSON.stringify(result));
  } finally {
    await repo.remove();
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

Deno.test(
  "check:migrations flags statements that need ownership of a platform table, with file and line",
  async () => {
    const repo = await repoWithRule();
    try {
      await repo.commit("a migration with owner-only statements", {
        [B]: [
          "-- a bucket's policies",
          `create policy "Owners read" on storage.objects for select using (true);`,
          `alter policy "Owners read" on storage.objects using (false);`,
          `drop policy if exists "Owners read" on storage.objects;`,
          `comment on policy "Owners read" on storage.objects is 'Owners read';`,
          "comment on table auth.users is 'Users';",
          "comment on column storage.objects.name is 'The name';",
          "alter table if exists only realtime.messages add column note text;",
          "create index users_aud on auth.users (aud);",
          `create policy "Flows" on auth.flow_state using (true);`,
          "comment on function public.f() is 'mine; comment on table storage.objects is ''x''';",
          "comment on table public.a is 'Mine';",
          "select $$ alter table storage.objects add column x int; $$;",
        ].join("\n"),
      });
      const result = await repo.check();
      assert.deepEqual(result.violations, []);
      assert.deepEqual(result.ownership.map((line) => line.split(": ")[0]), [
        `${B}:5`,
        `${B}:6`,
        `${B}:7`,
        `${B}:8`,
        `${B}:9`,
        `${B}:10`,
      ]);
      assert.match(
        result.ownership[0]!,
        /COMMENT ON POLICY … ON storage\.objects needs ownership of storage\.objects, which hosted Supabase's "postgres" does not have/,
      );
      assert.match(
        result.ownership[0]!,
        /write the explanation as a -- comment next to the policy/,
      );
      assert.match(result.ownership[3]!, /ALTER TABLE realtime\.messages/);
      assert.match(result.ownership[5]!, /policy_grants does not list this table/);
      assert.match(result.notes.join("\n"), /Read 2 migration file\(s\)/);

      await repo.commit("the explanation as a comment", {
        [B]: [
          "-- Owners read their files (a comment: COMMENT ON POLICY needs ownership).",
          `create policy "Owners read" on storage.objects for select using (true);`,
        ].join("\n"),
      });
      assert.deepEqual((await repo.check()).ownership, []);
    } finally {
      await repo.remove();
    }
  },
);

Deno.test("check:migrations accepts an allowed edit of a landed migration, and no other", async () => {
  const repo = await repoWithRule();
  try {
    const before = "create policy p on storage.objects using (true);\n" +
      "comment on policy p on storage.objects is 'x';\n";
    const after = "-- x\ncreate policy p on storage.objects using (true);\n";
    await repo.commit("the migration", { [B]: before });
    const allowed = [{ path: B, from: await repo.blob(before), to: await repo.blob(after) }];
    const edit = await repo.commit("the allowed edit", { [B]: after });
    assert.deepEqual((await repo.check(allowed)).violations, []);
    const unallowed = await repo.check([]);
    assert.equal(unallowed.violations.length, 1);
    assert.match(
      unallowed.violations[0]!,
      new RegExp(`${B} was modified by commit ${edit.slice(0, 10)}`),
    );

    // On a branch: the same edit against a merge base that still has the old content.
    await repo.git("update-ref", "refs/remotes/origin/main", `${edit}~1`);
    assert.deepEqual((await repo.check(allowed)).violations, []);
    assert.equal((await repo.check([])).violations.length, 1);
    await repo.git("update-ref", "-d", "refs/remotes/origin/main");

    const again = await repo.commit("a second edit", { [B]: after + "-- more\n" });
    const result = await repo.check(allowed);
    assert.equal(result.violations.length, 1, result.violations.join("\n"));
    assert.match(result.violations[0]!, new RegExp(`modified by commit ${again.slice(0, 10)}`));
  } finally {
    await repo.remove();
  }
});

Deno.test(
  "the one allowed edit is deal_documents' COMMENT ON POLICY, from its landed content to the file as it is",
  async () => {
    const git = async (...args: string[]) => {
      const out = await new Deno.Command("git", { args, cwd: REPO_ROOT, stdin: "null" }).output();
      assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
      return out.stdout;
    };
    assert.equal(ALLOWED_EDITS.length, 1);
    const edit = ALLOWED_EDITS[0]!;
    assert.equal(edit.path, "supabase/migrations/20261123002700_deal_documents.sql");
    const now = new TextDecoder().decode(await git("hash-object", edit.path)).trim();
    assert.equal(now, edit.to, "the file is exactly the allowed content");
    const landed = await git("cat-file", "blob", edit.from);
    assert.match(new TextDecoder().decode(landed), /comment on policy "Deal participants/);
    assert.deepEqual(ACCEPTED_PREVIOUS_CHECKSUMS, {
      "20261123002700": [createHash("sha256").update(landed).digest("hex")],
    });
  },
);
