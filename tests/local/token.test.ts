import assert from "node:assert/strict";
import { decodeJwt } from "jose";
import { userTokenMinter } from "../../local/token.ts";
import { newSigningKey } from "../support/credentials.ts";
import { createTestDatabase, dropDatabase, sqlTest, withDatabase } from "../support/db.ts";

const db = await createTestDatabase();
const key = await newSigningKey();
const issuer = "http://127.0.0.1:54321/auth/v1";

sqlTest(
  "userTokenMinter: one user per e-mail, admin granted, a token reused until renewal is due",
  async () => {
    const mint = userTokenMinter({
      databaseUrl: db.url,
      key,
      issuer,
      lifetimeSeconds: 3,
      renewBeforeSeconds: 2,
    });
    const first = await mint("console-user@example.com", false);
    assert.equal(await mint("console-user@example.com", false), first, "reused within its window");
    const claims = decodeJwt(first);
    assert.equal(claims.iss, issuer);
    assert.equal(claims.email, "console-user@example.com");
    assert.equal(claims.exp! - claims.iat!, 3);

    const admin = decodeJwt(await mint("console-admin@example.com", true));
    const roles = await db.pool.query<{ role: string }>(
      "select role from public.user_roles where user_id = $1",
      [admin.sub],
    );
    assert.deepEqual(roles.rows.map((r) => r.role), ["admin"]);

    // Past its renewal point (a 3 s token renewed 2 s before it ends): a new token, the same user.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const renewed = await mint("console-user@example.com", false);
    assert.notEqual(renewed, first);
    assert.equal(decodeJwt(renewed).sub, claims.sub, "the same user, not a new one");
    const users = await db.pool.query<{ n: number }>(
      "select count(*)::int as n from auth.users where email = 'console-user@example.com'",
    );
    assert.equal(users.rows[0]!.n, 1);
  },
);

sqlTest("userTokenMinter: a failed mint is not kept: the next call tries again", async () => {
  // A database that does not exist yet: the first mint fails; once it exists, the next succeeds.
  const name = `t_token_${crypto.randomUUID().slice(0, 8)}`;
  const url = withDatabase(db.url, name);
  const mint = userTokenMinter({ databaseUrl: url, key, issuer });
  await assert.rejects(mint("later@example.com", false), /does not exist/);
  const template = Deno.env.get("TEST_TEMPLATE_DATABASE")!;
  await db.pool.query(`create database "${name}" template "${template}"`);
  try {
    const token = await mint("later@example.com", false);
    assert.equal(decodeJwt(token).email, "later@example.com");
  } finally {
    await dropDatabase(db.url, name);
  }
});
