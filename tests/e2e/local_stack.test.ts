import assert from "node:assert/strict";
import pg from "pg";
import { createClient, FunctionsHttpError } from "@supabase/supabase-js";
import { freePort } from "../../local/postgres.ts";
import { withDatabase } from "../support/db.ts";
import { runLocalStackToExit, startLocalStack } from "../support/local_stack.ts";

/** An empty database (not the migrated template), so the stack migrates it itself. */
async function emptyDatabase(): Promise<string> {
  const admin = Deno.env.get("TEST_DATABASE_URL")!;
  const name = `t_${Deno.env.get("TEST_RUN_ID")}_e2e_${crypto.randomUUID().slice(0, 8)}`;
  const client = new pg.Client({ connectionString: admin });
  await client.connect();
  await client.query(`create database "${name}"`);
  await client.end();
  return withDatabase(admin, name);
}

Deno.test({
  name: "local stack: migrates, seeds and serves functions to supabase-js like the frontend",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const dbUrl = await emptyDatabase();
    const state = await Deno.makeTempDir();
    const stack = await startLocalStack({
      SUPABASE_DB_URL: dbUrl,
      PORT: "0",
      LOCAL_STATE_DIR: state,
      LOG_LEVEL: "warn",
    });
    let failure: unknown;
    try {
      assert.match(stack.output(), /\d+ new migration\(s\) applied/);
      const anon = createClient(stack.url, stack.anonKey, { auth: { persistSession: false } });

      const { data, error } = await anon.functions.invoke("security-headers", { body: {} });
      assert.equal(error, null);
      assert.match(data.headers["Content-Security-Policy"], /frame-ancestors 'none'/);

      const missing = await anon.functions.invoke("no-such-function", { body: {} });
      assert.ok(missing.error instanceof FunctionsHttpError);
      assert.equal(missing.error.context.status, 404);
      assert.equal((await missing.error.context.json()).error.code, "function_not_found");

      const denied = await anon.functions.invoke("test-env", { body: {} });
      assert.ok(denied.error instanceof FunctionsHttpError);
      assert.equal(denied.error.context.status, 401);

      const token = await stack.token("e2e-admin@example.com", true);
      assert.match(token.split(".")[0]!, /^eyJ/);
      assert.equal(JSON.parse(atob(token.split(".")[0]!)).alg, "ES256");
      const asAdmin = createClient(stack.url, stack.anonKey, {
        auth: { persistSession: false },
        global: { headers: { Authorization: `Bearer ${token}` } },
      });
      const report = await asAdmin.functions.invoke("test-env", { body: {} });
      assert.equal(report.error, null);
      assert.equal(report.data.database.ok, true);
      assert.equal(report.data.variables.SUPABASE_DB_URL, true);
      assert.doesNotMatch(JSON.stringify(report.data), /postgres:/);

      const gatewayNoJwt = await fetch(`${stack.url}/functions/v1/security-headers`, {
        method: "POST",
      });
      assert.equal(gatewayNoJwt.status, 401);
      await gatewayNoJwt.body?.cancel();

      const jwks = await (await fetch(`${stack.url}/auth/v1/.well-known/jwks.json`)).json();
      assert.equal(jwks.keys[0].kty, "EC");
      assert.equal(jwks.keys[0].d, undefined, "the private part must never be served");

      const client = new pg.Client({ connectionString: dbUrl });
      await client.connect();
      const { rows } = await client.query(
        "select count(*)::int as n from auth.users where email like '%@example.com'",
      );
      await client.end();
      assert.ok(rows[0].n >= 4, "seed users are present");
    } catch (error) {
      failure = error;
    }
    const code = await stack.stop("SIGTERM");
    if (failure) throw failure;
    assert.equal(code, 0, stack.output());
  },
});

Deno.test({
  name:
    "local stack: embedded PostgreSQL starts in its own folder and Ctrl-C leaves no server behind",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const state = await Deno.makeTempDir();
    await Deno.chmod(state, 0o755); // the cluster runs as the postgres user when we are root
    const dbPort = freePort();
    const stack = await startLocalStack({
      PORT: "0",
      DB_PORT: String(dbPort),
      LOCAL_STATE_DIR: state,
      LOG_LEVEL: "warn",
    });
    const code = await stack.stop("SIGINT");
    assert.equal(code, 0, stack.output());
    await assert.rejects(Deno.stat(`${state}/db/postmaster.pid`), Deno.errors.NotFound);
    const listener = Deno.listen({ hostname: "127.0.0.1", port: dbPort });
    listener.close();
    await Deno.remove(state, { recursive: true }).catch(() => {});
  },
});

Deno.test({
  name: "local stack: a taken port is a one-line error, not a stack trace",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    try {
      const port = (listener.addr as Deno.NetAddr).port;
      const result = await runLocalStackToExit({
        PORT: String(port),
        SUPABASE_DB_URL: "postgresql://postgres:postgres@127.0.0.1:1/none",
      });
      assert.equal(result.code, 1);
      assert.equal(result.stderr.trim().split("\n").length, 1, result.stderr);
      assert.match(result.stderr, new RegExp(`port ${port} .*already in use`));
    } finally {
      listener.close();
    }
  },
});

Deno.test({
  name: "local stack: a database that cannot start is a one-line error, not a stack trace",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const state = await Deno.makeTempDir();
    try {
      const dbPort = (listener.addr as Deno.NetAddr).port;
      const result = await runLocalStackToExit({
        PORT: "0",
        DB_PORT: String(dbPort),
        LOCAL_STATE_DIR: state,
      });
      assert.equal(result.code, 1);
      assert.equal(result.stderr.trim().split("\n").length, 1, result.stderr);
      assert.match(result.stderr, new RegExp(`Cannot start PostgreSQL: port ${dbPort}`));
    } finally {
      listener.close();
      await Deno.remove(state, { recursive: true }).catch(() => {});
    }
  },
});
