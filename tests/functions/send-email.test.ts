import assert from "node:assert/strict";
import handler from "../../supabase/functions/send-email/handler.ts";
import { Context } from "../../supabase/functions/_shared/platform/context.ts";
import { runEmailRetry } from "../../supabase/functions/_shared/email/retry.ts";
import type { Runtime } from "../../supabase/functions/_shared/platform/runtime.ts";
import { sqlTest } from "../support/db.ts";
import {
  emailLogs,
  makeEmailsDue,
  notificationsSetup,
  setPreference,
  TEST_EMAIL_FROM,
} from "../support/notifications.ts";
import { invoke } from "../support/runtime.ts";
import { createUser } from "../support/sql.ts";

const { db, double, runtime, captureRuntime, keys } = await notificationsSetup();
const admin = await createUser(db.pool, { admin: true });

const message = (extra: Record<string, unknown> = {}) => ({
  to: "ada@example.test",
  subject: "Hello",
  html: "<p>Hello <b>Ada</b></p>",
  emailType: "custom_note",
  ...extra,
});

async function send(body: unknown, rt: Runtime = runtime, token?: string) {
  return await invoke<{ id: string; status: string; error?: { code: string; details?: unknown } }>(
    handler,
    rt,
    { token: token ?? keys.serviceKey, body },
  );
}

function retryContext(rt: Runtime): Context {
  return new Context(rt, crypto.randomUUID(), rt.log);
}

sqlTest("send-email: sends through the provider, logs the row, derives the text part", async () => {
  double.reset();
  const res = await send(message({ replyTo: "support@example.test" }));
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body.status, "sent");
  assert.equal(double.sent.length, 1);
  const sent = double.sent[0]!;
  assert.deepEqual(sent.to, ["ada@example.test"]);
  assert.equal(sent.from, TEST_EMAIL_FROM);
  assert.equal(sent.text, "Hello Ada");
  assert.deepEqual(sent.replyTo, ["support@example.test"]);
  assert.equal(sent.idempotencyKey, `email-log/${res.body.id}`);
  const [row] = (await emailLogs(db.pool, "custom_note")).filter((r) => r.id === res.body.id);
  assert.equal(row?.send_status, "sent");
  assert.equal(row?.recipient_email, "ada@example.test");
  assert.equal(row?.provider_message_id, sent.id);
  assert.equal(row?.attempts, 1);
  assert.equal(row?.html, null, "the body is cleared once the provider has it");
});

sqlTest("send-email: an admin may call it; a user, the anon key and no token may not", async () => {
  double.reset();
  const user = await createUser(db.pool);
  const byAdmin = await send(message(), runtime, await keys.userToken(admin));
  assert.equal(byAdmin.status, 200);
  const before = (await emailLogs(db.pool)).length;
  assert.equal((await send(message(), runtime, await keys.userToken(user))).status, 403);
  assert.equal((await send(message(), runtime, keys.anonKey)).status, 403);
  const none = await invoke(handler, runtime, { body: message() });
  assert.equal(none.status, 401);
  assert.equal((await emailLogs(db.pool)).length, before, "refusals write nothing");
  assert.equal(double.sent.length, 1);
});

sqlTest("send-email: bad input is 400 invalid_input and writes nothing", async () => {
  double.reset();
  const before = (await emailLogs(db.pool)).length;
  for (
    const body of [
      message({ to: "not-an-address" }),
      message({ to: "Ada <ada@example.test>" }),
      message({ subject: "" }),
      message({ emailType: "" }),
      message({ emailType: "   " }),
      message({ emailType: "bell\u0007" }),
      message({ emailType: "two\nlines" }),
      message({ emailType: "line\u2028separator" }),
      message({ emailType: "x".repeat(101) }),
      { to: "ada@example.test", subject: "x" },
    ]
  ) {
    const res = await send(body);
    assert.equal(res.status, 400, JSON.stringify(body));
    assert.equal(res.body.error?.code, "invalid_input");
  }
  assert.equal((await emailLogs(db.pool)).length, before);
  assert.equal(double.sent.length, 0);
});

sqlTest("send-email: a repeated idempotency key sends once and answers the first row", async () => {
  double.reset();
  const key = `order-${crypto.randomUUID()}`;
  const answers = await Promise.all(
    Array.from({ length: 8 }, () => send(message({ idempotencyKey: key }))),
  );
  const ids = new Set(answers.map((a) => a.body.id));
  assert.equal(ids.size, 1);
  assert.ok(answers.every((a) => a.status === 200));
  assert.equal(double.sent.length, 1);
  const other = await send(message({ idempotencyKey: key, subject: "Something else" }));
  assert.equal(other.status, 409);
  assert.equal(other.body.error?.code, "conflict");
});

sqlTest("send-email: provider 5xx → failed row, 502; the retry sends it once", async () => {
  double.reset();
  double.failNext({ path: "/emails", status: 500 });
  const res = await send(message({ to: "retry@example.test" }));
  assert.equal(res.status, 502);
  assert.equal(res.body.error?.code, "upstream_unavailable");
  const [row] = await emailLogs(db.pool).then((rows) =>
    rows.filter((r) => r.recipient_email === "retry@example.test")
  );
  assert.equal(row?.send_status, "failed");
  assert.match(row?.error_message ?? "", /Injected 500/);
  assert.equal(row?.attempts, 1);
  assert.ok(row?.next_attempt_at && row.next_attempt_at > new Date(), "backoff set");
  assert.equal(double.sent.length, 0);

  // Not due yet: a retry run leaves it alone.
  const early = await runEmailRetry(retryContext(runtime));
  assert.ok(!("skipped" in early));
  assert.equal(double.sent.length, 0);

  await makeEmailsDue(db.pool);
  const [a, b] = await Promise.all([
    runEmailRetry(retryContext(runtime)),
    runEmailRetry(retryContext(runtime)),
  ]);
  assert.ok(a && b);
  assert.equal(double.sentTo("retry@example.test").length, 1);
  const [after] = await emailLogs(db.pool).then((rows) =>
    rows.filter((r) => r.recipient_email === "retry@example.test")
  );
  assert.equal(after?.send_status, "sent");
  assert.equal(after?.attempts, 2);
  assert.equal(after?.error_message, null);

  // A later run finds nothing to do.
  await makeEmailsDue(db.pool);
  await runEmailRetry(retryContext(runtime));
  assert.equal(double.sentTo("retry@example.test").length, 1);
});

sqlTest(
  "send-email: a retry of a message the provider did accept sends nothing twice",
  async () => {
    double.reset();
    // The provider accepts, but the answer never reaches us (a timeout after acceptance).
    const res = await send(message({ to: "lost-answer@example.test" }));
    assert.equal(res.status, 200);
    // Force the row back to failed, as if the answer had been lost.
    await db.pool.query(
      `update public.email_logs set send_status = 'failed', next_attempt_at = now() - interval '1 second',
            html = '<p>again</p>', text_body = 'again'
     where id = $1`,
      [res.body.id],
    );
    await double.idle();
    const html = double.sent[0]!.html;
    await db.pool.query("update public.email_logs set html = $2 where id = $1", [
      res.body.id,
      html,
    ]);
    await db.pool.query(
      "update public.email_logs set text_body = $2 where id = $1",
      [res.body.id, double.sent[0]!.text],
    );
    await runEmailRetry(retryContext(runtime));
    assert.equal(double.sentTo("lost-answer@example.test").length, 1, "same idempotency key");
    const [row] = await emailLogs(db.pool).then((rows) => rows.filter((r) => r.id === res.body.id));
    assert.equal(row?.send_status, "sent");
  },
);

sqlTest("send-email: a permanent refusal is 502 upstream_rejected and is not retried", async () => {
  double.reset();
  double.failNext({
    path: "/emails",
    status: 422,
    body: { statusCode: 422, name: "validation_error", message: "Domain is not verified" },
  });
  const res = await send(message({ to: "refused@example.test" }));
  assert.equal(res.status, 502);
  assert.equal(res.body.error?.code, "upstream_rejected");
  const [row] = await emailLogs(db.pool).then((rows) =>
    rows.filter((r) => r.recipient_email === "refused@example.test")
  );
  assert.equal(row?.send_status, "failed");
  assert.equal(row?.next_attempt_at, null);
  assert.equal(row?.error_message, "Domain is not verified");
});

sqlTest("send-email: at most 5 attempts in all", async () => {
  double.reset();
  double.failNext({ path: "/emails", status: 503, times: 10 });
  const res = await send(message({ to: "down@example.test" }));
  assert.equal(res.status, 502);
  for (let i = 0; i < 6; i++) {
    await makeEmailsDue(db.pool);
    await runEmailRetry(retryContext(runtime));
  }
  const [row] = await emailLogs(db.pool).then((rows) =>
    rows.filter((r) => r.recipient_email === "down@example.test")
  );
  assert.equal(row?.attempts, 5);
  assert.equal(row?.send_status, "failed");
  assert.equal(row?.next_attempt_at, null);
  assert.equal(double.requests.filter((r) => r.path === "/emails").length, 5);
});

sqlTest("send-email: locally without a key the message is captured with its body", async () => {
  double.reset();
  const res = await send(message({ to: "local@example.test" }), captureRuntime);
  assert.equal(res.status, 200);
  assert.equal(res.body.status, "captured");
  assert.equal(double.requests.length, 0);
  const [row] = await emailLogs(db.pool).then((rows) => rows.filter((r) => r.id === res.body.id));
  assert.equal(row?.send_status, "captured");
  assert.equal(row?.html, "<p>Hello <b>Ada</b></p>");
  assert.equal(row?.text_body, "Hello Ada");
});

sqlTest("send-email: emailType is any printable label, logged as written", async () => {
  double.reset();
  for (
    const label of [
      "weeklyReport",
      "Weekly report",
      "partner-digest.v2",
      "Ünïcode ✉️",
      "x".repeat(100),
    ]
  ) {
    const res = await send(message({ emailType: `  ${label} ` }));
    assert.equal(res.status, 200, `${label}: ${JSON.stringify(res.body)}`);
    const [row] = await emailLogs(db.pool).then((rows) => rows.filter((r) => r.id === res.body.id));
    assert.equal(row?.email_type, label, "trimmed, otherwise as written");
  }
});

sqlTest("send-email: a known type in camelCase honours the same preference", async () => {
  double.reset();
  const user = await createUser(db.pool);
  await setPreference(db.pool, user.id, "payments", { email: false, inApp: true });
  for (
    const label of [
      "payoutReleased",
      "Payout released",
      "payout-released",
      // Separators doubled, mixed or at an end are one separator, none at the ends.
      "payout_ released",
      "payout__released",
      "_payout_released",
      "Payout released.",
    ]
  ) {
    const res = await send(message({ to: user.email, emailType: label }));
    assert.equal(res.status, 200);
    assert.equal(res.body.status, "suppressed", label);
  }
  assert.equal(double.sent.length, 0);
});

sqlTest("send-email: a known type honours the recipient's preference (suppressed)", async () => {
  double.reset();
  const user = await createUser(db.pool);
  await setPreference(db.pool, user.id, "payments", { email: false, inApp: true });
  const res = await send(message({ to: user.email.toUpperCase(), emailType: "payment_received" }));
  assert.equal(res.status, 200);
  assert.equal(res.body.status, "suppressed");
  assert.equal(double.sent.length, 0);
  const [row] = await emailLogs(db.pool).then((rows) => rows.filter((r) => r.id === res.body.id));
  assert.equal(row?.send_status, "suppressed");
  assert.match(row?.error_message ?? "", /payments/);
});

sqlTest(
  "send-email: without a provider key (not local) it is 503 not_configured, logged for later",
  async () => {
    const { testRuntime } = await import("../support/runtime.ts");
    const bare = await testRuntime(db);
    try {
      const res = await send(message({ to: "later@example.test" }), bare);
      assert.equal(res.status, 503);
      assert.equal(res.body.error?.code, "not_configured");
      const [row] = await emailLogs(db.pool).then((rows) =>
        rows.filter((r) => r.recipient_email === "later@example.test")
      );
      assert.equal(row?.send_status, "failed");
      assert.ok(row?.next_attempt_at, "retried once configured");
    } finally {
      await bare.close();
    }
  },
);
