import assert from "node:assert/strict";
import handler from "../../supabase/functions/send-auth-email/handler.ts";
import { Context } from "../../supabase/functions/_shared/platform/context.ts";
import { escapeHtml } from "../../supabase/functions/_shared/email/html.ts";
import {
  claimEmailLog,
  insertEmailLog,
} from "../../supabase/functions/_shared/email/email_logs.ts";
import { runEmailRetry } from "../../supabase/functions/_shared/email/retry.ts";
import {
  authEmailMessage,
  authEmails,
} from "../../supabase/functions/_shared/email/templates/auth.ts";
import { TEST_SUPABASE_URL } from "../support/credentials.ts";
import { sqlTest } from "../support/db.ts";
import { emailLogs, notificationsSetup } from "../support/notifications.ts";
import { invoke } from "../support/runtime.ts";
import { createUser } from "../support/sql.ts";

const { db, double, runtime, keys } = await notificationsSetup();
const admin = await createUser(db.pool, { admin: true });

type Answer = {
  results: Array<{ id: string; status: string }>;
  error?: { code: string; details?: unknown };
};

async function send(body: unknown, token: string = keys.serviceKey) {
  return await invoke<Answer>(handler, runtime, { token, body });
}

const address = () => `auth-${crypto.randomUUID().slice(0, 8)}@example.test`;

sqlTest("send-auth-email: sends the action's e-mail with the verify link", async () => {
  double.reset();
  const email = address();
  const res = await send({
    email,
    actionType: "recovery",
    tokenHash: "recovery-hash",
    redirectTo: "https://app.example.test/reset?from=mail",
  });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body.results.length, 1);
  assert.equal(res.body.results[0]!.status, "sent");
  const [sent] = double.sentTo(email);
  const url = `${TEST_SUPABASE_URL}/auth/v1/verify?token=recovery-hash&type=recovery` +
    "&redirect_to=https%3A%2F%2Fapp.example.test%2Freset%3Ffrom%3Dmail";
  assert.ok(sent?.text?.includes(url), sent?.text ?? "");
  assert.ok(sent?.html?.includes(`href="${escapeHtml(url)}"`));
  assert.equal(sent?.subject, "Reset your password");
  const [row] = (await emailLogs(db.pool, "auth_recovery")).filter((r) =>
    r.recipient_email === email
  );
  assert.equal(row?.id, res.body.results[0]!.id);
  assert.equal(row?.send_status, "sent");
});

sqlTest(
  "send-auth-email: signup without redirectTo links type=signup and no redirect_to",
  async () => {
    double.reset();
    const email = address();
    const res = await send({ email, actionType: "signup", tokenHash: "signup-hash" });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const [sent] = double.sentTo(email);
    assert.ok(
      sent?.text?.includes(`${TEST_SUPABASE_URL}/auth/v1/verify?token=signup-hash&type=signup\n`),
    );
  },
);

sqlTest(
  "send-auth-email: reauthentication shows the code; email_change sends one e-mail",
  async () => {
    double.reset();
    const email = address();
    const code = await send({ email, actionType: "reauthentication", token: "654321" });
    assert.equal(code.status, 200, JSON.stringify(code.body));
    const [reauth] = double.sentTo(email);
    assert.ok(reauth?.html?.includes(">654321</p>"));
    assert.ok(!reauth?.html?.includes("/auth/v1/verify"));

    const change = await send({ email, actionType: "email_change", tokenHash: "change-hash" });
    assert.equal(change.status, 200, JSON.stringify(change.body));
    assert.equal(change.body.results.length, 1);
    const sent = double.sentTo(email);
    assert.equal(sent.length, 2);
    assert.ok(sent[1]?.text?.includes("verify?token=change-hash&type=email_change"));
  },
);

sqlTest(
  "send-auth-email: an admin may call it; a user, the anon key and no token may not",
  async () => {
    double.reset();
    const user = await createUser(db.pool);
    const body = { email: address(), actionType: "magiclink", tokenHash: "magic-hash" };
    const byAdmin = await send(body, await keys.userToken(admin));
    assert.equal(byAdmin.status, 200, JSON.stringify(byAdmin.body));
    const before = (await emailLogs(db.pool)).length;
    assert.equal((await send(body, await keys.userToken(user))).status, 403);
    assert.equal((await send(body, keys.anonKey)).status, 403);
    assert.equal((await invoke(handler, runtime, { body })).status, 401);
    assert.equal((await emailLogs(db.pool)).length, before, "refusals write nothing");
    assert.equal(double.sent.length, 1);
  },
);

sqlTest("send-auth-email: bad input is 400 invalid_input and writes nothing", async () => {
  double.reset();
  const before = (await emailLogs(db.pool)).length;
  for (
    const body of [
      { email: "not-an-address", actionType: "signup", tokenHash: "h" },
      { email: address(), actionType: "signup" },
      { email: address(), actionType: "reauthentication" },
      { email: address(), actionType: "password_changed_notification", tokenHash: "h" },
      { email: address(), actionType: "signup", tokenHash: "h", redirectTo: "javascript:alert(1)" },
    ]
  ) {
    const res = await send(body);
    assert.equal(res.status, 400, JSON.stringify(body));
    assert.equal(res.body.error?.code, "invalid_input");
  }
  assert.equal((await emailLogs(db.pool)).length, before);
  assert.equal(double.requests.length, 0);
});

sqlTest("send-auth-email: provider 500 → 502 upstream_unavailable and a failed row", async () => {
  double.reset();
  double.failNext({ path: "/emails", status: 500 });
  const email = address();
  const res = await send({ email, actionType: "invite", tokenHash: "invite-hash" });
  assert.equal(res.status, 502);
  assert.equal(res.body.error?.code, "upstream_unavailable");
  const [row] = (await emailLogs(db.pool)).filter((r) => r.recipient_email === email);
  assert.equal(row?.send_status, "failed");
  assert.equal(row?.email_type, "auth_invite");
});

sqlTest(
  "send-auth-email: a NUL character or a lone surrogate in a string is 400 invalid_input, writes and sends nothing",
  async () => {
    double.reset();
    const before = (await emailLogs(db.pool)).length;
    for (
      const [body, rule] of [
        [{ email: address(), actionType: "signup", tokenHash: "hash\u0000" }, "NUL"],
        [{ email: address(), actionType: "reauthentication", token: "12\u00003456" }, "NUL"],
        [{ email: address(), actionType: "signup", tokenHash: "hash\uD800" }, "surrogate"],
      ] as const
    ) {
      const res = await send(body);
      assert.equal(res.status, 400, JSON.stringify(res.body));
      assert.equal(res.body.error?.code, "invalid_input");
      const text = JSON.stringify(res.body);
      assert.match(text, new RegExp(rule));
      assert.ok(!text.includes("hash") && !text.includes("3456"), "the value is not echoed");
    }
    assert.equal((await emailLogs(db.pool)).length, before);
    assert.equal(double.requests.length, 0);
  },
);

sqlTest(
  "send-auth-email: a sign-in e-mail its request wrote but did not send is dropped by the retry, not sent late",
  async () => {
    double.reset();
    const ctx = new Context(runtime, crypto.randomUUID(), runtime.log);
    // What a request that died leaves: the row it wrote (its first step) and,
    // for the second one, its claim of the attempt, but no send.
    const written = async (claim: boolean) => {
      const [email] = authEmails(
        { action: "magiclink", email: address(), tokenHash: `hash-${crypto.randomUUID()}` },
        ctx.env,
      );
      const { row } = await insertEmailLog(
        ctx.db,
        authEmailMessage(email!, ctx.env.values.SITE_URL),
        "pending",
      );
      if (claim) assert.ok(await claimEmailLog(ctx.db, row.id));
      return row;
    };
    const bodyKept = async (id: string) =>
      (await db.pool.query("select 1 from public.email_sign_in_bodies where email_log_id = $1", [
        id,
      ])).rowCount === 1;
    const died = [await written(false), await written(true)];
    const fresh = await written(false);
    // The requests that died did so longer ago than a claim lasts; the fresh
    // one may still be sending it.
    await db.pool.query(
      `update public.email_logs
       set created_at = created_at - interval '1 hour',
           last_attempt_at = last_attempt_at - interval '1 hour',
           next_attempt_at = now() - interval '1 second'
       where id = any($1::uuid[])`,
      [died.map((row) => row.id)],
    );

    const run = await runEmailRetry(ctx);
    assert.ok(!("skipped" in run));
    assert.equal(run.counts.sign_in_dropped, 2);
    assert.equal(
      double.requests.length,
      0,
      "a sign-in e-mail is never sent late: its link is dead",
    );
    for (const row of died) {
      const [after] = (await emailLogs(db.pool)).filter((r) => r.id === row.id);
      assert.equal(after?.send_status, "failed");
      assert.equal(after?.next_attempt_at, null, "never tried again");
      assert.match(after?.error_message ?? "", /not sent later/);
      assert.equal(await bodyKept(row.id), false, "the dead link is not kept");
    }
    const [left] = (await emailLogs(db.pool)).filter((r) => r.id === fresh.id);
    assert.equal(left?.send_status, "pending", "a row its request may still send is left to it");
    assert.equal(left?.attempts, 0);
    assert.equal(await bodyKept(fresh.id), true);
  },
);
