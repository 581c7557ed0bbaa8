import assert from "node:assert/strict";
import { Webhook } from "standardwebhooks";
import handler from "../../supabase/functions/auth-email-webhook/handler.ts";
import { escapeHtml } from "../../supabase/functions/_shared/email/html.ts";
import type { Runtime } from "../../supabase/functions/_shared/platform/runtime.ts";
import { TEST_SUPABASE_URL } from "../support/credentials.ts";
import { sqlTest } from "../support/db.ts";
import { emailEnv, emailLogs, notificationsSetup } from "../support/notifications.ts";
import { invoke, testRuntime } from "../support/runtime.ts";
import { asRole, createUser } from "../support/sql.ts";
import { rejectsWith } from "../db/core_fixtures.ts";

/** The hook secret as the dashboard shows it: `v1,whsec_<base64>`. */
const SECRET = btoa("auth-hook-test-secret-0123456789");
const HOOK_SECRET = `v1,whsec_${SECRET}`;
const auth = new Webhook(SECRET);
const forger = new Webhook(btoa("some-other-secret-0123456789abcd"));

const { db, double, runtime } = await notificationsSetup({ SEND_EMAIL_HOOK_SECRET: HOOK_SECRET });

const REDIRECT = "http://localhost:5173/auth/callback?next=/dashboard&tab=1";
const REDIRECT_ENCODED =
  "http%3A%2F%2Flocalhost%3A5173%2Fauth%2Fcallback%3Fnext%3D%2Fdashboard%26tab%3D1";

type HookAnswer = { error?: { http_code: number; code: string; message: string } };

function payload(
  action: string,
  extra: { user?: Record<string, unknown>; data?: Record<string, unknown> } = {},
) {
  const tag = crypto.randomUUID().slice(0, 8);
  return {
    user: {
      id: crypto.randomUUID(),
      aud: "authenticated",
      role: "authenticated",
      email: `hook-${tag}@example.test`,
      phone: "",
      app_metadata: { provider: "email", providers: ["email"] },
      user_metadata: {},
      identities: [],
      is_anonymous: false,
      ...extra.user,
    },
    email_data: {
      token: "305805",
      token_hash: `hash-${tag}`,
      redirect_to: REDIRECT,
      email_action_type: action,
      site_url: "http://localhost:5173",
      token_new: "",
      token_hash_new: "",
      ...extra.data,
    },
  };
}

/** A delivery of `body` signed as Auth signs it. */
function signed(
  body: unknown,
  options: { id?: string; at?: Date; signer?: Webhook } = {},
): { rawBody: string; headers: Record<string, string> } {
  return signedRaw(JSON.stringify(body), options);
}

/** A delivery of the exact text `rawBody`, signed. */
function signedRaw(
  rawBody: string,
  options: { id?: string; at?: Date; signer?: Webhook } = {},
): { rawBody: string; headers: Record<string, string> } {
  const id = options.id ?? `msg_${crypto.randomUUID()}`;
  const at = options.at ?? new Date();
  return {
    rawBody,
    headers: {
      "content-type": "application/json",
      "webhook-id": id,
      "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
      "webhook-signature": (options.signer ?? auth).sign(id, at, rawBody),
    },
  };
}

async function deliver(
  delivery: { rawBody: string; headers: Record<string, string> },
  rt: Runtime = runtime,
) {
  return await invoke<HookAnswer>(handler, rt, delivery);
}

function verifyLink(tokenHash: string, type: string): string {
  return `${TEST_SUPABASE_URL}/auth/v1/verify?token=${tokenHash}&type=${type}&redirect_to=${REDIRECT_ENCODED}`;
}

function assertLink(html: string | null, text: string | null, url: string): void {
  assert.ok(text?.includes(url), `text has ${url}:\n${text}`);
  assert.ok(html?.includes(`href="${escapeHtml(url)}"`), `html links ${url}`);
}

async function assertNothingHappened(before: number): Promise<void> {
  assert.equal((await emailLogs(db.pool)).length, before, "nothing written");
  assert.equal(double.requests.length, 0, "nothing sent");
}

for (const action of ["signup", "invite", "magiclink", "recovery"]) {
  sqlTest(`auth-email-webhook: ${action} sends the verify link (type=${action})`, async () => {
    double.reset();
    const body = payload(action);
    const delivery = signed(body);
    const res = await deliver(delivery);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body, {});
    const sent = double.sentTo(body.user.email);
    assert.equal(sent.length, 1);
    assertLink(sent[0]!.html, sent[0]!.text, verifyLink(body.email_data.token_hash, action));
    assert.ok(sent[0]!.text?.includes("305805"), "the one-time code as an alternative");
    const rows = (await emailLogs(db.pool, `auth_${action}`))
      .filter((r) => r.recipient_email === body.user.email);
    assert.equal(rows.length, 1);
    assert.equal(rows[0]!.send_status, "sent");
    assert.equal(rows[0]!.user_id, null, "Auth has not committed the user yet");
    assert.equal(rows[0]!.idempotency_key, `auth-hook:${delivery.headers["webhook-id"]}:0`);
  });
}

sqlTest("auth-email-webhook: reauthentication shows the code and no link", async () => {
  double.reset();
  const body = payload("reauthentication", { data: { token: "918273", token_hash: "" } });
  const res = await deliver(signed(body));
  assert.equal(res.status, 200, JSON.stringify(res.body));
  const [sent] = double.sentTo(body.user.email);
  assert.ok(sent?.html?.includes(">918273</p>"), "the code, shown large");
  assert.ok(sent?.text?.includes("918273"));
  assert.ok(!sent?.html?.includes("/auth/v1/verify"), "no link");
  const [row] = (await emailLogs(db.pool, "auth_reauthentication"))
    .filter((r) => r.recipient_email === body.user.email);
  assert.equal(row?.send_status, "sent");
});

sqlTest(
  "auth-email-webhook: secure email_change → two e-mails, hashes as the docs map them",
  async () => {
    double.reset();
    const body = payload("email_change", {
      user: { email: "old-address@example.test", new_email: "new-address@example.test" },
      data: {
        token: "111111",
        token_hash: "hash-for-new-address",
        token_new: "222222",
        token_hash_new: "hash-for-current-address",
      },
    });
    const delivery = signed(body);
    const res = await deliver(delivery);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(double.sent.length, 2);
    // Current address: `token` with `token_hash_new`.
    const [current] = double.sentTo("old-address@example.test");
    assertLink(
      current!.html,
      current!.text,
      verifyLink("hash-for-current-address", "email_change"),
    );
    assert.ok(current!.text?.includes("111111"));
    assert.ok(!current!.text?.includes("222222"));
    // New address: `token_new` with `token_hash`.
    const [fresh] = double.sentTo("new-address@example.test");
    assertLink(fresh!.html, fresh!.text, verifyLink("hash-for-new-address", "email_change"));
    assert.ok(fresh!.text?.includes("222222"));
    assert.ok(!fresh!.text?.includes("111111"));
    const keys = (await emailLogs(db.pool, "auth_email_change"))
      .filter((r) => r.idempotency_key?.includes(delivery.headers["webhook-id"]!))
      .map((r) => [r.recipient_email, r.send_status, r.idempotency_key?.slice(-2)]);
    assert.deepEqual(keys, [
      ["old-address@example.test", "sent", ":0"],
      ["new-address@example.test", "sent", ":1"],
    ]);
  },
);

sqlTest(
  "auth-email-webhook: email_change with one hash → one e-mail to the new address",
  async () => {
    double.reset();
    const body = payload("email_change", {
      user: { email: "stays@example.test", new_email: "moves-to@example.test" },
      data: { token: "", token_hash: "only-hash", token_new: "333333", token_hash_new: "" },
    });
    const res = await deliver(signed(body));
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(double.sent.length, 1);
    const [sent] = double.sentTo("moves-to@example.test");
    assertLink(sent!.html, sent!.text, verifyLink("only-hash", "email_change"));
    assert.ok(sent!.text?.includes("333333"));
  },
);

sqlTest(
  "auth-email-webhook: a forged or tampered signature is 401, nothing sent or written",
  async () => {
    double.reset();
    const before = (await emailLogs(db.pool)).length;
    const forged = await deliver(signed(payload("magiclink"), { signer: forger }));
    assert.equal(forged.status, 401);
    assert.equal(forged.body.error?.http_code, 401);
    assert.equal(forged.body.error?.code, "invalid_signature");

    const genuine = signed(payload("magiclink"));
    const tampered = await deliver({
      headers: genuine.headers,
      rawBody: genuine.rawBody.replace("hook-", "attacker-"),
    });
    assert.equal(tampered.status, 401);
    await assertNothingHappened(before);
  },
);

sqlTest("auth-email-webhook: a stale timestamp (10 minutes old) is 401", async () => {
  double.reset();
  const before = (await emailLogs(db.pool)).length;
  const res = await deliver(
    signed(payload("signup"), { at: new Date(Date.now() - 10 * 60 * 1000) }),
  );
  assert.equal(res.status, 401);
  assert.equal(res.body.error?.http_code, 401);
  assert.match(res.body.error?.message ?? "", /too old/);
  await assertNothingHappened(before);
});

sqlTest("auth-email-webhook: missing signature headers are 401", async () => {
  double.reset();
  const before = (await emailLogs(db.pool)).length;
  const delivery = signed(payload("signup"));
  for (const name of ["webhook-id", "webhook-timestamp", "webhook-signature"]) {
    const headers = { ...delivery.headers };
    delete headers[name];
    const res = await deliver({ rawBody: delivery.rawBody, headers });
    assert.equal(res.status, 401, name);
    assert.equal(res.body.error?.code, "invalid_signature");
    assert.match(res.body.error?.message ?? "", new RegExp(name));
  }
  await assertNothingHappened(before);
});

sqlTest("auth-email-webhook: without SEND_EMAIL_HOOK_SECRET it is 503 not_configured", async () => {
  double.reset();
  const bare = await testRuntime(db, emailEnv(double));
  try {
    const before = (await emailLogs(db.pool)).length;
    const res = await deliver(signed(payload("signup")), bare);
    assert.equal(res.status, 503);
    assert.equal(res.body.error?.http_code, 503);
    assert.equal(res.body.error?.code, "not_configured");
    await assertNothingHappened(before);
  } finally {
    await bare.close();
  }
});

sqlTest("auth-email-webhook: a whsec_ secret without the v1, prefix works too", async () => {
  double.reset();
  const other = await testRuntime(db, {
    ...emailEnv(double),
    SEND_EMAIL_HOOK_SECRET: `whsec_${SECRET}`,
  });
  try {
    const res = await deliver(signed(payload("recovery")), other);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(double.sent.length, 1);
  } finally {
    await other.close();
  }
});

sqlTest(
  "auth-email-webhook: a signed body of the wrong shape is 400, nothing written",
  async () => {
    double.reset();
    const before = (await emailLogs(db.pool)).length;
    const bodies: unknown[] = [
      { user: { id: "u1" } },
      payload("password_changed_notification"),
      payload("signup", { user: { email: "not-an-address" } }),
      payload("signup", { data: { token_hash: "" } }),
      payload("email_change", { data: { token_hash_new: "two-hashes-but-no-new-email" } }),
    ];
    for (const body of bodies) {
      const res = await deliver(signed(body));
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.equal(res.body.error?.http_code, 400);
      assert.equal(res.body.error?.code, "invalid_input");
    }
    const notJson = await deliver(signedRaw("{not json"));
    assert.equal(notJson.status, 400);
    assert.equal(notJson.body.error?.code, "invalid_json");
    await assertNothingHappened(before);
  },
);

sqlTest(
  "auth-email-webhook: an address the provider cannot take (no dot in its domain) is 400, not 502",
  async () => {
    double.reset();
    const before = (await emailLogs(db.pool)).length;
    for (
      const body of [
        payload("signup", { user: { email: "!@!" } }),
        payload("magiclink", { user: { email: "someone@localhost" } }),
        payload("email_change", { user: { new_email: "new@intranet" } }),
      ]
    ) {
      const res = await deliver(signed(body));
      assert.equal(res.status, 400, JSON.stringify(res.body));
      assert.equal(res.body.error?.code, "invalid_input");
    }
    await assertNothingHappened(before);
  },
);

sqlTest(
  "auth-email-webhook: a NUL or a lone surrogate anywhere in the signed body is 400, nothing written",
  async () => {
    double.reset();
    const before = (await emailLogs(db.pool)).length;
    for (
      const body of [
        payload("reauthentication", { data: { token: "12\u00003456", token_hash: "" } }),
        payload("signup", { data: { token_hash: "hash\uD800" } }),
        payload("signup", { user: { user_metadata: { full_name: "Ada\u0000" } } }),
        payload("signup", { user: { user_metadata: { ["k\uDC00"]: "v" } } }),
      ]
    ) {
      const res = await deliver(signed(body));
      assert.equal(res.status, 400, JSON.stringify(res.body));
      assert.equal(res.body.error?.http_code, 400);
      assert.equal(res.body.error?.code, "invalid_input");
    }
    await assertNothingHappened(before);
  },
);

sqlTest(
  "auth-email-webhook: provider 500 → hook error with http_code 502 and a failed row",
  async () => {
    double.reset();
    double.failNext({ path: "/emails", status: 500 });
    const body = payload("signup");
    const delivery = signed(body);
    const res = await deliver(delivery);
    assert.equal(res.status, 502);
    assert.equal(res.headers.get("content-type"), "application/json");
    assert.equal(res.body.error?.http_code, 502);
    assert.equal(res.body.error?.code, "upstream_unavailable");
    assert.ok(res.body.error?.message);
    const [row] = (await emailLogs(db.pool)).filter((r) => r.recipient_email === body.user.email);
    assert.equal(row?.send_status, "failed");
    assert.equal(
      row?.next_attempt_at,
      null,
      "a sign-in e-mail is not retried later (its link dies)",
    );
    assert.equal(double.sent.length, 0);

    // Auth delivering the same hook again does not claim it was sent.
    const again = await deliver(delivery);
    assert.equal(again.status, 502);
    assert.equal(again.body.error?.http_code, 502);
    assert.equal(
      (await emailLogs(db.pool)).filter((r) => r.recipient_email === body.user.email).length,
      1,
    );
  },
);

sqlTest("auth-email-webhook: the same webhook-id delivered twice sends one e-mail", async () => {
  double.reset();
  const body = payload("magiclink");
  const delivery = signed(body);
  const first = await deliver(delivery);
  const second = await deliver(delivery);
  assert.equal(first.status, 200);
  assert.equal(second.status, 200);
  assert.deepEqual(second.body, {});
  assert.equal(double.sentTo(body.user.email).length, 1);
  const rows = (await emailLogs(db.pool)).filter((r) => r.recipient_email === body.user.email);
  assert.equal(rows.length, 1);
  // A new delivery (a new webhook-id) is a new e-mail.
  const third = await deliver(signed(body));
  assert.equal(third.status, 200);
  assert.equal(double.sentTo(body.user.email).length, 2);
});

sqlTest("auth-email-webhook: metadata and redirect_to arrive escaped", async () => {
  double.reset();
  const evil = `<script>alert("x")</script>`;
  const body = payload("signup", {
    user: { user_metadata: { full_name: evil } },
    data: { redirect_to: `http://localhost:5173/"><script>alert(1)</script>` },
  });
  const res = await deliver(signed(body));
  assert.equal(res.status, 200, JSON.stringify(res.body));
  const [sent] = double.sentTo(body.user.email);
  assert.ok(!sent!.html?.includes("<script>"), "no live script tag");
  assert.ok(sent!.html?.includes(escapeHtml(evil)), "the name is shown as text");
  assert.ok(
    sent!.html?.includes("redirect_to=http%3A%2F%2Flocalhost%3A5173%2F%22%3E%3Cscript%3E"),
    "redirect_to is URL-encoded in the link",
  );
  assert.ok(sent!.text?.includes(`Hi ${evil},`), "the text part says it as it is");
});

sqlTest(
  "auth-email-webhook: an admin reading email_logs sees no sign-in link or code, only the rest of the row",
  async () => {
    double.reset();
    // Captured (local development) and failed (the provider was down) rows
    // are the ones that kept a body.
    const capture = await testRuntime(db, {
      LOCAL_DEV: "true",
      SEND_EMAIL_HOOK_SECRET: HOOK_SECRET,
    });
    const admin = await createUser(db.pool, { admin: true });
    const bodies = ["magiclink", "recovery", "signup", "invite", "reauthentication"].map((a) =>
      payload(a, { data: { token: "918273" } })
    );
    try {
      for (const body of bodies) {
        const res = await deliver(signed(body), capture);
        assert.equal(res.status, 200, JSON.stringify(res.body));
      }
    } finally {
      await capture.close();
    }
    const down = payload("magiclink", { data: { token: "918273" } });
    double.failNext({ path: "/emails", status: 500 });
    assert.equal((await deliver(signed(down))).status, 502);
    const addresses = [...bodies, down].map((b) => b.user.email);

    const seen = await asRole(
      db.pool,
      { role: "authenticated", userId: admin.id },
      async (client) => {
        const { rows } = await client.query<Record<string, unknown>>(
          "select * from public.email_logs where recipient_email = any($1) order by recipient_email",
          [addresses],
        );
        await rejectsWith(client, "42501", "select * from public.email_sign_in_bodies");
        return rows;
      },
    );
    assert.equal(seen.length, addresses.length);
    for (const row of seen) {
      assert.equal(row.html, null, `${row.email_type}: no HTML body`);
      assert.equal(row.text_body, null, `${row.email_type}: no text body`);
      assert.ok(addresses.includes(String(row.recipient_email)));
      assert.match(String(row.email_type), /^auth_/);
      assert.match(String(row.send_status), /^(captured|failed)$/);
    }
    const failedRow = seen.find((r) => r.recipient_email === down.user.email);
    assert.equal(failedRow?.send_status, "failed");
    assert.ok(failedRow?.error_message, "the error is still there");
    const everything = JSON.stringify(seen);
    for (const body of [...bodies, down]) {
      assert.ok(!everything.includes(body.email_data.token_hash), "no link");
    }
    assert.ok(!everything.includes("918273"), "no one-time code");

    // The service connection keeps the captured ones (the local mail viewer
    // shows them) and nothing of the failed one (it is never sent later).
    const { rows: apart } = await db.pool.query<{ recipient_email: string; html: string }>(
      `select l.recipient_email, b.html from public.email_sign_in_bodies b
       join public.email_logs l on l.id = b.email_log_id
       where l.recipient_email = any($1)`,
      [addresses],
    );
    assert.deepEqual(
      apart.map((r) => r.recipient_email).sort(),
      bodies.map((b) => b.user.email).sort(),
    );
    const magic = apart.find((r) => r.recipient_email === bodies[0]!.user.email);
    assert.ok(
      magic?.html.includes(escapeHtml(verifyLink(bodies[0]!.email_data.token_hash, "magiclink"))),
    );
  },
);

sqlTest("auth-email-webhook: a sent sign-in e-mail leaves no body anywhere", async () => {
  double.reset();
  const body = payload("recovery");
  assert.equal((await deliver(signed(body))).status, 200);
  assert.equal(double.sentTo(body.user.email).length, 1);
  const { rows } = await db.pool.query<{ html: string | null; apart: number }>(
    `select l.html, (select count(*)::int from public.email_sign_in_bodies b
                     where b.email_log_id = l.id) as apart
     from public.email_logs l where l.recipient_email = $1`,
    [body.user.email],
  );
  assert.deepEqual(rows, [{ html: null, apart: 0 }]);
});
