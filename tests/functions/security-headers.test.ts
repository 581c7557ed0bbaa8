import assert from "node:assert/strict";
import handler from "../../supabase/functions/security-headers/handler.ts";
import { createTestDatabase, sqlTest } from "../support/db.ts";
import { testCredentials } from "../support/credentials.ts";
import { invoke, testRuntime } from "../support/runtime.ts";

const db = await createTestDatabase();
const keys = await testCredentials();
const runtime = await testRuntime(db, { SUPABASE_URL: "https://abc.supabase.co" });

sqlTest("security-headers returns the header set every response also carries", async () => {
  const res = await invoke<{ headers: Record<string, string> }>(handler, runtime, {
    token: keys.anonKey,
  });
  assert.equal(res.status, 200);
  const headers = res.body.headers;
  assert.deepEqual(Object.keys(headers).sort(), [
    "Content-Security-Policy",
    "Permissions-Policy",
    "Referrer-Policy",
    "Strict-Transport-Security",
    "X-Content-Type-Options",
    "X-Frame-Options",
  ]);
  for (const [name, value] of Object.entries(headers)) {
    assert.equal(res.headers.get(name), value, name);
  }
  assert.match(headers["Content-Security-Policy"]!, /connect-src [^;]*https:\/\/abc\.supabase\.co/);
  assert.match(headers["Content-Security-Policy"]!, /wss:\/\/abc\.supabase\.co/);
  assert.match(headers["Strict-Transport-Security"]!, /max-age=\d{8}/);
});

sqlTest("security-headers refuses a request without a project key", async () => {
  const res = await invoke(handler, runtime, {});
  assert.equal(res.status, 401);
});
