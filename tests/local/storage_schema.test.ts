import assert from "node:assert/strict";
import { PLATFORM_SQL } from "../../local/db/migrate.ts";
import { createTestDatabase, sqlTest } from "../support/db.ts";
import { asRole, createUser } from "../support/sql.ts";
import { createBucket } from "../support/storage.ts";

const db = await createTestDatabase();

sqlTest("storage.foldername(), filename() and extension() split names as hosted does", async () => {
  const { rows } = await db.pool.query(
    `select storage.foldername('a/b/c.pdf') as folders, storage.filename('a/b/c.pdf') as file,
            storage.extension('a/b/c.tar.gz') as ext, storage.foldername('top.txt') as none,
            storage.extension('a/noext') as noext`,
  );
  assert.deepEqual(rows[0], {
    folders: ["a", "b"],
    file: "c.pdf",
    ext: "gz",
    none: [],
    noext: "noext",
  });
});

sqlTest(
  "storage tables: RLS with no policy hides every row from anon and authenticated, not service_role",
  async () => {
    const bucket = await createBucket(db.pool);
    const user = await createUser(db.pool);
    await db.pool.query(
      "insert into storage.objects (bucket_id, name, owner, owner_id) values ($1, 'a/b.txt', $2::uuid, $2::text)",
      [bucket, user.id],
    );
    const { rows: tokens } = await db.pool.query(
      "select path_tokens from storage.objects where bucket_id = $1",
      [bucket],
    );
    assert.deepEqual(tokens[0]?.path_tokens, ["a", "b.txt"]);

    const count = (role: "anon" | "authenticated" | "service_role") =>
      asRole(db.pool, { role, userId: user.id }, async (c) => {
        const objects = await c.query(
          "select count(*)::int as n from storage.objects where bucket_id = $1",
          [bucket],
        );
        const buckets = await c.query(
          "select count(*)::int as n from storage.buckets where id = $1",
          [bucket],
        );
        return [objects.rows[0].n, buckets.rows[0].n];
      });
    assert.deepEqual(await count("anon"), [0, 0]);
    assert.deepEqual(await count("authenticated"), [0, 0]);
    assert.deepEqual(await count("service_role"), [1, 1]);

    await assert.rejects(
      asRole(db.pool, { role: "authenticated", userId: user.id }, (c) =>
        c.query(
          "insert into storage.objects (bucket_id, name, owner_id) values ($1, 'x.txt', $2)",
          [bucket, user.id],
        )),
      (error: { code?: string }) => error.code === "42501",
    );
    await assert.rejects(
      db.pool.query("insert into storage.objects (bucket_id, name) values ($1, 'a/b.txt')", [
        bucket,
      ]),
      (error: { code?: string }) => error.code === "23505",
      "one object per name in a bucket",
    );
  },
);

sqlTest("local/db/platform.sql can be applied again without changing storage rows", async () => {
  const bucket = await createBucket(db.pool, { fileSizeLimit: 10 });
  await db.pool.query(await Deno.readTextFile(PLATFORM_SQL));
  const { rows } = await db.pool.query(
    "select file_size_limit::int as limit from storage.buckets where id = $1",
    [bucket],
  );
  assert.deepEqual(rows, [{ limit: 10 }]);
});
