/**
 * The local stack with the values a fresh clone has: the hook secret of the
 * committed `supabase/.env` (the one the Supabase CLI reads for config.toml)
 * reaches auth-email-webhook, and the CLI's local publishable and secret
 * keys the banner prints work from supabase-js.
 */
import assert from "node:assert/strict";
import { createClient, FunctionsHttpError } from "@supabase/supabase-js";
import { Webhook } from "standardwebhooks";
import { readSupabaseEnv } from "../../local/supabase_env.ts";
import { createEmptyDatabase } from "../support/db.ts";
import { startLocalStack } from "../support/local_stack.ts";

/** An empty database (not the migrated template). */
function emptyDatabase(): Promise<string> {
  return createEmptyDatabase("e2e");
}

Deno.test({
  name:
    "local stack: supabase/.env's hook secret reaches auth-email-webhook; the printed sb_ keys call functions",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const dbUrl = await emptyDatabase();
    const state = await Deno.makeTempDir();
    // No SEND_EMAIL_HOOK_SECRET in the environment: a fresh machine.
    const stack = await startLocalStack({
      SUPABASE_DB_URL: dbUrl,
      PORT: "0",
      LOCAL_STATE_DIR: state,
      LOG_LEVEL: "warn",
    });
    let failure: unknown;
    try {
      const secret = (await readSupabaseEnv()).SEND_EMAIL_HOOK_SECRET!;
      const body = JSON.stringify({
        user: { id: crypto.randomUUID(), email: "e2e-hook@example.com" },
        email_data: {
          email_action_type: "signup",
          token: "123456",
          token_hash: "e2e-hash",
          redirect_to: "http://localhost:5173/",
          site_url: "http://localhost:5173",
        },
      });
      const id = `msg_${crypto.randomUUID()}`;
      const now = new Date();
      // Signed as Supabase Auth signs with the [auth.hook.send_email] secret.
      const hook = await fetch(`${stack.url}/functions/v1/auth-email-webhook`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "webhook-id": id,
          "webhook-timestamp": String(Math.floor(now.getTime() / 1000)),
          "webhook-signature": new Webhook(secret.replace(/^v1,whsec_/, "")).sign(id, now, body),
        },
        body,
      });
      assert.equal(hook.status, 200, await hook.clone().text());
      assert.deepEqual(await hook.json(), {});

      const grab = (label: string) =>
        new RegExp(`${label}\\s+(sb_\\S+)`).exec(stack.output())?.[1] ?? "";
      const publishable = grab("publishable key");
      const secretKey = grab("secret key");
      assert.match(publishable, /^sb_publishable_/);
      assert.match(secretKey, /^sb_secret_/);
      const anon = createClient(stack.url, publishable, { auth: { persistSession: false } });
      const headers = await anon.functions.invoke("security-headers", { body: {} });
      assert.equal(headers.error, null, String(headers.error));
      assert.match(headers.data.headers["Content-Security-Policy"], /frame-ancestors 'none'/);
      // The publishable key is the anon caller: the service's function refuses it (403)...
      const email = { to: "e2e-service@example.com", subject: "Hi", html: "<p>Hi</p>" };
      const message = { ...email, emailType: "e2e_note" };
      const refused = await anon.functions.invoke("send-email", { body: message });
      assert.ok(refused.error instanceof FunctionsHttpError);
      assert.equal(refused.error.context.status, 403);
      assert.equal((await refused.error.context.json()).error.code, "forbidden");
      // ...and where verify_jwt is on, the gateway lets no API key in (401), as hosted.
      const gated = await anon.functions.invoke("check-subscription", { body: {} });
      assert.ok(gated.error instanceof FunctionsHttpError);
      assert.equal(gated.error.context.status, 401);
      await gated.error.context.body?.cancel();
      // The secret key is the service caller.
      const service = createClient(stack.url, secretKey, { auth: { persistSession: false } });
      const sent = await service.functions.invoke("send-email", { body: message });
      assert.equal(sent.error, null, String(sent.error));
      assert.equal(sent.data.status, "captured");
    } catch (error) {
      failure = error;
    }
    const code = await stack.stop("SIGTERM");
    if (failure) throw failure;
    assert.equal(code, 0, stack.output());
  },
});
