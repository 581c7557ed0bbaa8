import assert from "node:assert/strict";
import handler from "../../supabase/functions/test-env/handler.ts";
import { createTestDatabase, sqlTest } from "../support/db.ts";
import { createUser } from "../support/sql.ts";
import { testCredentials } from "../support/credentials.ts";
import { invoke, testRuntime } from "../support/runtime.ts";

const db = await createTestDatabase();
const keys = await testCredentials();
const secret = "sk_test_secret_value_never_shown";
const runtime = await testRuntime(db, { PAYPROC_SECRET_KEY: secret });
const admin = await createUser(db.pool, { admin: true });
const user = await createUser(db.pool);

interface Report {
  variables: Record<string, boolean>;
  database: { ok: boolean; latency_ms: number };
}

sqlTest(
  "test-env reports which variables are set, as booleans only, and that the database answers",
  async () => {
    const res = await invoke<Report>(handler, runtime, { token: await keys.userToken(admin) });
    assert.equal(res.status, 200);
    assert.equal(res.body.variables.PAYPROC_SECRET_KEY, true);
    assert.equal(res.body.variables.PAYPROC_WEBHOOK_SECRET, false);
    assert.equal(res.body.variables.SUPABASE_DB_URL, true);
    assert.ok(Object.values(res.body.variables).every((v) => typeof v === "boolean"));
    assert.equal(res.body.database.ok, true);
    const text = JSON.stringify(res.body);
    assert.doesNotMatch(text, /sk_test_secret_value_never_shown/);
    assert.doesNotMatch(text, new RegExp(db.url.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")));
  },
);

sqlTest("test-env is refused to users who are not admins, and to the anon key", async () => {
  const res = await invoke(handler, runtime, { token: await keys.userToken(user) });
  assert.equal(res.status, 403);
  const anon = await invoke(handler, runtime, { token: keys.anonKey });
  assert.equal(anon.status, 403);
  assert.equal((await invoke(handler, runtime)).status, 401);
});

sqlTest(
  "test-env takes the anon key with LOCAL_DEV=true, as the interface's local keys say",
  async () => {
    const local = await testRuntime(db, { LOCAL_DEV: "true" });
    try {
      const res = await invoke<Report>(handler, local, { token: keys.anonKey });
      assert.equal(res.status, 200);
      assert.equal(res.body.database.ok, true);
    } finally {
      await local.close();
    }
  },
);
