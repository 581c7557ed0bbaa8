import assert from "node:assert/strict";
import { createGateway } from "../../local/gateway.ts";
import {
  MAIL_IFRAME_SANDBOX,
  MAIL_LIST_LIMIT,
  MAIL_VIEWER_CSP,
  type MailList,
  type MailMessage,
  type MailSampleList,
  type MailSampleMessage,
} from "../../local/console/mail_viewer.ts";
import { MAIL_SAMPLES, SAMPLE_SITE_URL } from "../../local/console/mail_samples.ts";
import { EMAIL_TYPES, type EmailType } from "../../shared/notifications.ts";
import handler from "../../supabase/functions/send-email/handler.ts";
import sendAuthEmail from "../../supabase/functions/send-auth-email/handler.ts";
import { escapeHtml } from "../../supabase/functions/_shared/email/html.ts";
import { LOCAL_EMAIL_FROM } from "../../supabase/functions/_shared/platform/mailer.ts";
import type { Runtime } from "../../supabase/functions/_shared/platform/runtime.ts";
import { testCredentials } from "../support/credentials.ts";
import { createTestDatabase, sqlTest } from "../support/db.ts";
import { invoke, testRuntime } from "../support/runtime.ts";

const db = await createTestDatabase();
const keys = await testCredentials();
/** `LOCAL_DEV=true` without `RESEND_API_KEY`: e-mail is captured. */
const runtime = await testRuntime(db, { LOCAL_DEV: "true" });

const gatewayOn = (rt: Runtime, mail = true) =>
  createGateway({ functions: new Map(), runtime: rt, verifyJwt: new Map(), jwks: keys.jwks, mail });
const gateway = gatewayOn(runtime);

const get = (path: string, init: RequestInit = {}) =>
  gateway(new Request(`http://127.0.0.1:54321${path}`, init));

/** A page's markup with the white space between tags dropped (the templates are indented). */
async function page(path: string): Promise<string> {
  const res = await get(path);
  assert.equal(res.status, 200, path);
  assert.equal(res.headers.get("content-type"), "text/html; charset=utf-8", path);
  return (await res.text()).replace(/>\s+</g, "><");
}

async function json<T>(path: string): Promise<T> {
  const res = await get(path);
  assert.equal(res.status, 200, path);
  assert.match(res.headers.get("content-type") ?? "", /^application\/json/, path);
  return await res.json() as T;
}

/** Writes an `email_logs` row as the sender would; answers its id. */
async function insertMail(mail: {
  subject: string;
  to?: string;
  type?: string;
  status?: string;
  html?: string | null;
  text?: string | null;
  secondsAgo?: number;
}): Promise<string> {
  const { rows } = await db.pool.query<{ id: string }>(
    `insert into public.email_logs
       (recipient_email, email_type, send_status, subject, html, text_body, from_address,
        created_at, sent_at)
     values ($1, $2, $3, $4, $5, $6, $7, now() - make_interval(secs => $8),
       case when $3 in ('captured', 'sent') then now() - make_interval(secs => $8) end)
     returning id`,
    [
      mail.to ?? "ada@example.test",
      mail.type ?? "custom_note",
      mail.status ?? "captured",
      mail.subject,
      mail.html === undefined ? "<p>Hi</p>" : mail.html,
      mail.text === undefined ? "Hi" : mail.text,
      LOCAL_EMAIL_FROM,
      mail.secondsAgo ?? 0,
    ],
  );
  return rows[0]!.id;
}

sqlTest("mail viewer lists e-mails newest first, as HTML and as JSON", async () => {
  const tag = crypto.randomUUID().slice(0, 8);
  const oldest = await insertMail({ subject: `oldest ${tag}`, secondsAgo: 30 });
  const failed = await insertMail({
    subject: `failed ${tag}`,
    status: "failed",
    type: "listing_approved",
    secondsAgo: 20,
  });
  const newest = await insertMail({ subject: `newest ${tag}`, to: "bob@example.test" });

  const html = await page("/_local/mail");
  const positions = [`newest ${tag}`, `failed ${tag}`, `oldest ${tag}`].map((s) => html.indexOf(s));
  assert.ok(positions.every((p) => p > 0), "every message is listed");
  assert.deepEqual([...positions].sort((a, b) => a - b), positions, "newest first");
  for (const id of [oldest, failed, newest]) {
    assert.ok(html.includes(`href="/_local/mail/${id}"`), "each row links to its message");
  }
  assert.match(html, /<th>Time<\/th><th>To<\/th><th>Subject<\/th><th>Type<\/th><th>Status<\/th>/);
  assert.ok(html.includes("bob@example.test"));
  assert.ok(html.includes('<span class="status status-failed">failed</span>'));
  assert.ok(html.includes("listing_approved"));

  for (const path of ["/_local/mail?format=json", "/_local/mail.json"]) {
    const list = await json<MailList>(path);
    assert.equal(list.limit, MAIL_LIST_LIMIT);
    const mine = list.messages.filter((m) => m.subject.endsWith(tag));
    assert.deepEqual(mine.map((m) => m.id), [newest, failed, oldest], path);
    assert.deepEqual(mine.map((m) => m.status), ["captured", "failed", "captured"]);
    assert.equal(mine[0]!.to, "bob@example.test");
    assert.equal(mine[0]!.type, "custom_note");
    assert.equal(mine[0]!.url, `/_local/mail/${newest}`);
    assert.ok(Date.parse(mine[0]!.createdAt) > Date.parse(mine[2]!.createdAt));
    assert.equal(mine[1]!.sentAt, null);
  }

  const captured = await json<MailList>("/_local/mail.json?status=captured");
  assert.equal(captured.status, "captured");
  assert.ok(captured.messages.every((m) => m.status === "captured"));
  assert.ok(!captured.messages.some((m) => m.id === failed));
  const unknown = await get("/_local/mail.json?status=nope");
  assert.equal(unknown.status, 400);
  assert.equal((await unknown.json()).error.code, "invalid_input");
  assert.match(await page("/_local/mail?status=pending"), /No e-mails\s+with status pending\s+yet/);
});

sqlTest(
  "mail viewer shows a message sent through send-email: headers, sandboxed HTML, text part",
  async () => {
    const body = '<p>Hello <b>Ada</b> &amp; "friends"</p><script>alert(1)</script>' +
      '<a href="https://example.test/verify?a=1&amp;b=2">Verify</a>';
    const sent = await invoke<{ id: string; status: string }>(handler, runtime, {
      token: keys.serviceKey,
      body: {
        to: "ada@example.test",
        subject: "Welcome aboard",
        html: body,
        text: "Hello Ada & friends\nhttps://example.test/verify?a=1&b=2",
        emailType: "custom_note",
        replyTo: "support@example.test",
      },
    });
    assert.equal(sent.status, 200, JSON.stringify(sent.body));
    assert.equal(sent.body.status, "captured");
    const id = sent.body.id;

    const html = await page(`/_local/mail/${id}`);
    const iframe = /<iframe [^>]*>/.exec(html)?.[0] ?? "";
    assert.ok(iframe.includes(`sandbox="${MAIL_IFRAME_SANDBOX}"`), iframe);
    assert.doesNotMatch(iframe, /allow-scripts|allow-same-origin/);
    const srcdoc = /srcdoc="([^"]*)"/.exec(iframe)?.[1];
    assert.ok(srcdoc, "the HTML body is in srcdoc");
    assert.equal(
      srcdoc,
      "&lt;base target=&quot;_blank&quot;&gt;&lt;p&gt;Hello &lt;b&gt;Ada&lt;/b&gt; &amp;amp; " +
        "&quot;friends&quot;&lt;/p&gt;&lt;script&gt;alert(1)&lt;/script&gt;" +
        "&lt;a href=&quot;https://example.test/verify?a=1&amp;amp;b=2&quot;&gt;Verify&lt;/a&gt;",
      "the srcdoc value is HTML-escaped (decoded, it is the message's HTML)",
    );
    assert.doesNotMatch(html, /<script/i, "the message's script is never markup on the page");
    assert.ok(
      html.includes(
        "<pre>\nHello Ada &amp; friends\nhttps://example.test/verify?a=1&amp;b=2</pre>",
      ),
      "the text part is shown, escaped",
    );
    for (
      const field of [
        `<dt>From</dt><dd>${LOCAL_EMAIL_FROM.replace("<", "&lt;").replace(">", "&gt;")}</dd>`,
        "<dt>To</dt><dd>ada@example.test</dd>",
        "<dt>Reply-To</dt><dd>support@example.test</dd>",
        "<dt>Subject</dt><dd>Welcome aboard</dd>",
        "<dt>Type</dt><dd>custom_note</dd>",
        '<dt>Status</dt><dd><span class="status status-captured">captured</span></dd>',
      ]
    ) {
      assert.ok(html.includes(field), field);
    }
    assert.match(html, /<dt>Sent<\/dt><dd><time class="time" datetime="\d{4}-\d\d-\d\dT/);

    for (const path of [`/_local/mail/${id}.json`, `/_local/mail/${id}?format=json`]) {
      const message = await json<MailMessage>(path);
      assert.equal(message.id, id);
      assert.equal(message.subject, "Welcome aboard");
      assert.equal(message.html, body);
      assert.equal(message.text, "Hello Ada & friends\nhttps://example.test/verify?a=1&b=2");
      assert.equal(message.from, LOCAL_EMAIL_FROM);
      assert.equal(message.to, "ada@example.test");
      assert.equal(message.replyTo, "support@example.test");
      assert.equal(message.status, "captured");
      assert.equal(message.type, "custom_note");
    }
    const list = await json<MailList>("/_local/mail.json");
    assert.equal(list.messages[0]?.id, id, "the message just sent is the newest");
  },
);

sqlTest(
  "mail viewer shows a captured sign-in e-mail's link, whose body is not in email_logs",
  async () => {
    const tag = crypto.randomUUID().slice(0, 8);
    const sent = await invoke<{ results: Array<{ id: string; status: string }> }>(
      sendAuthEmail,
      runtime,
      {
        token: keys.serviceKey,
        body: { email: `link-${tag}@example.test`, actionType: "magiclink", tokenHash: tag },
      },
    );
    assert.equal(sent.status, 200, JSON.stringify(sent.body));
    const [{ id, status }] = sent.body.results as [{ id: string; status: string }];
    assert.equal(status, "captured");
    const { rows } = await db.pool.query<{ html: string | null; text_body: string | null }>(
      "select html, text_body from public.email_logs where id = $1",
      [id],
    );
    assert.deepEqual(rows, [{ html: null, text_body: null }], "admins read email_logs");

    const message = await json<MailMessage>(`/_local/mail/${id}.json`);
    assert.equal(message.type, "auth_magiclink");
    assert.ok(message.html?.includes(`token=${tag}&amp;type=magiclink`), message.html ?? "");
    assert.ok(message.text?.includes(`token=${tag}&type=magiclink`), message.text ?? "");
    const page = await get(`/_local/mail/${id}`);
    assert.ok((await page.text()).includes(escapeHtml(`token=${tag}&amp;type=magiclink`)));
  },
);

sqlTest("mail viewer escapes a <script> subject on the list and the message page", async () => {
  const subject = `<script>alert("x")</script> & 'you'`;
  const escaped = "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;you&#39;";
  const id = await insertMail({
    subject,
    to: "o'brien@example.test",
    html: null,
    text: "<b>not bold</b>",
  });
  const list = await page("/_local/mail");
  assert.ok(list.includes(`<a href="/_local/mail/${id}">${escaped}</a>`));
  assert.ok(list.includes("o&#39;brien@example.test"));
  assert.doesNotMatch(list, /<script/i);
  const message = await page(`/_local/mail/${id}`);
  assert.ok(message.includes(`<title>${escaped} — Local console</title>`));
  assert.ok(message.includes(`<dt>Subject</dt><dd>${escaped}</dd>`));
  assert.ok(message.includes("<pre>\n&lt;b&gt;not bold&lt;/b&gt;</pre>"));
  assert.ok(!message.includes("<iframe"), "no HTML body kept: no frame");
  assert.doesNotMatch(message, /<script|<b>/i);
  assert.equal((await json<MailMessage>(`/_local/mail/${id}.json`)).subject, subject);
});

sqlTest("mail viewer answers 404 for an unknown or malformed id, HTML or JSON", async () => {
  const unknownId = crypto.randomUUID();
  for (
    const path of [
      `/_local/mail/${unknownId}`,
      "/_local/mail/not-an-id",
      "/_local/mail/<script>",
      "/_local/mail/%3Cscript%3E",
      `/_local/mail/${unknownId}/more`,
    ]
  ) {
    const res = await get(path);
    assert.equal(res.status, 404, path);
    assert.equal(res.headers.get("content-type"), "text/html; charset=utf-8", path);
    const text = await res.text();
    assert.match(text, /404 not_found/, path);
    assert.doesNotMatch(text, /<script/i, path);
  }
  for (const path of [`/_local/mail/${unknownId}.json`, "/_local/mail/nope?format=json"]) {
    const res = await get(path);
    assert.equal(res.status, 404, path);
    assert.equal((await res.json()).error.code, "not_found", path);
  }
});

sqlTest("mail viewer answers GET and HEAD; other methods are 405 with Allow", async () => {
  const id = await insertMail({ subject: "for HEAD" });
  for (
    const path of [
      "/_local/mail",
      `/_local/mail/${id}`,
      "/_local/mail.json",
      "/_local/mail/samples",
      "/_local/mail/samples/welcome.json",
    ]
  ) {
    const head = await get(path, { method: "HEAD" });
    assert.equal(head.status, 200, path);
    assert.equal(await head.text(), "", path);
    assert.ok(head.headers.get("content-type"), path);
  }
  for (const method of ["POST", "PUT", "DELETE", "PATCH", "OPTIONS"]) {
    for (const path of ["/_local/mail", `/_local/mail/${id}`, "/_local/mail/samples/welcome"]) {
      const res = await get(path, { method });
      assert.equal(res.status, 405, `${method} ${path}`);
      assert.equal(res.headers.get("allow"), "GET, HEAD", `${method} ${path}`);
      await res.body?.cancel();
    }
  }
  const post = await get("/_local/mail.json", { method: "POST", body: "{}" });
  assert.equal(post.status, 405);
  assert.equal((await post.json()).error.code, "method_not_allowed");
  const row = await db.pool.query("select 1 from public.email_logs where id = $1", [id]);
  assert.equal(row.rowCount, 1, "nothing is changed");
});

sqlTest(
  "mail viewer answers carry the runtime's headers with the viewer's CSP, no CORS, no-store",
  async () => {
    const id = await insertMail({ subject: "headers" });
    const own = await get("/nowhere", {
      headers: { origin: "https://evil.example", "x-request-id": "req-mail" },
    });
    await own.body?.cancel();
    for (
      const path of [
        "/_local/mail",
        `/_local/mail/${id}`,
        "/_local/mail.json",
        "/_local/mail/x",
        "/_local/mail/samples",
        "/_local/mail/samples/auth_magiclink",
        "/_local/mail/samples.json",
        "/_local/mail/samples/nope",
      ]
    ) {
      const res = await get(path, {
        headers: { origin: "https://evil.example", "x-request-id": "req-mail" },
      });
      await res.body?.cancel();
      assert.equal(res.headers.get("content-security-policy"), MAIL_VIEWER_CSP, path);
      assert.equal(res.headers.get("x-request-id"), "req-mail", path);
      assert.equal(res.headers.get("cache-control"), "no-store", path);
      assert.equal(res.headers.get("access-control-allow-origin"), null, path);
      for (
        const name of ["strict-transport-security", "x-content-type-options", "permissions-policy"]
      ) {
        assert.equal(res.headers.get(name), own.headers.get(name), `${path}: ${name}`);
      }
    }
    assert.equal(own.headers.get("access-control-allow-origin"), "*", "the gateway's own do");
    assert.notEqual(own.headers.get("content-security-policy"), MAIL_VIEWER_CSP);
    // The viewer's CSP: no script at all, inline styles, the sandboxed frame.
    const csp = new Map(
      MAIL_VIEWER_CSP.split("; ").map((d) => [d.split(" ")[0]!, d.split(" ").slice(1)]),
    );
    assert.deepEqual(csp.get("default-src"), ["'none'"]);
    assert.equal(csp.get("script-src"), undefined, "scripts fall back to default-src 'none'");
    assert.deepEqual(csp.get("style-src"), ["'unsafe-inline'"]);
    assert.ok(csp.has("frame-src"));
  },
);

sqlTest("mail viewer answers only a loopback Host (a rebound name reads nothing)", async () => {
  for (const path of ["/_local/mail.json", "/_local/mail/samples/auth_signup.json"]) {
    const res = await gateway(new Request(`http://rebound.example:54321${path}`));
    assert.equal(res.status, 403, path);
    assert.equal((await res.json()).error.code, "forbidden", path);
  }
  const local = await gateway(new Request("http://localhost:54321/_local/mail.json"));
  assert.equal(local.status, 200);
  await local.body?.cancel();
});

sqlTest("mail viewer shows the newest 200 at most", async () => {
  await db.pool.query(
    `insert into public.email_logs (recipient_email, email_type, send_status, subject, created_at)
     select 'bulk@example.test', 'bulk', 'captured', 'bulk ' || n,
       now() - interval '1 day' - make_interval(secs => n)
     from generate_series(1, $1::int) as n`,
    [MAIL_LIST_LIMIT + 5],
  );
  const list = await json<MailList>("/_local/mail.json");
  assert.equal(list.messages.length, MAIL_LIST_LIMIT);
  assert.ok(list.total >= MAIL_LIST_LIMIT + 5);
  const times = list.messages.map((m) => Date.parse(m.createdAt));
  assert.deepEqual([...times].sort((a, b) => b - a), times, "newest first");
  assert.match(await page("/_local/mail"), new RegExp(`Showing the newest ${MAIL_LIST_LIMIT} of`));
});

sqlTest(
  "the gateway does not serve the mail viewer without LOCAL_DEV or without `mail`",
  async () => {
    const notLocal = await testRuntime(db);
    try {
      for (const gw of [gatewayOn(notLocal), gatewayOn(runtime, false)]) {
        for (
          const path of [
            "/_local/mail",
            "/_local/mail.json",
            `/_local/mail/${crypto.randomUUID()}`,
            "/_local/mail/samples",
            "/_local/mail/samples/welcome",
          ]
        ) {
          const res = await gw(new Request(`http://127.0.0.1${path}`));
          assert.equal(res.status, 404, path);
          assert.equal((await res.json()).error.code, "not_found", path);
        }
      }
    } finally {
      await notLocal.close();
    }
  },
);

/** How many rows `email_logs` has: the samples pages write none. */
async function mailCount(): Promise<number> {
  const { rows } = await db.pool.query<{ n: number }>(
    "select count(*)::int as n from public.email_logs",
  );
  return rows[0]!.n;
}

sqlTest("mail viewer lists a sample of every e-mail type, as HTML and as JSON", async () => {
  const before = await mailCount();
  const types = Object.keys(EMAIL_TYPES) as EmailType[];
  for (const [key, sample] of Object.entries(MAIL_SAMPLES)) {
    assert.equal(sample.type, key, "each sample is filed under its own type");
  }

  const list = await page("/_local/mail");
  assert.ok(list.includes('<a href="/_local/mail/samples">Samples</a>'), "the nav links them");

  const html = await page("/_local/mail/samples");
  assert.match(html, /<th>Type<\/th><th>Subject<\/th><th>Sent when<\/th>/);
  for (const type of types) {
    const sample = MAIL_SAMPLES[type];
    const row = `<tr><td><a href="/_local/mail/samples/${type}">${type}</a></td><td>${
      escapeHtml(sample.render().subject)
    }</td><td>${escapeHtml(sample.description)}</td></tr>`;
    assert.ok(html.includes(row), row);
  }
  assert.doesNotMatch(html, /<b>|<script/i, "subjects with markup are text");

  for (const path of ["/_local/mail/samples.json", "/_local/mail/samples?format=json"]) {
    const samples = await json<MailSampleList>(path);
    assert.equal(samples.siteUrl, SAMPLE_SITE_URL);
    assert.deepEqual(samples.samples.map((s) => s.type), types, `${path}: every type, in order`);
    for (const s of samples.samples) {
      assert.equal(s.subject, MAIL_SAMPLES[s.type].render().subject, s.type);
      assert.equal(s.description, MAIL_SAMPLES[s.type].description, s.type);
      assert.equal(s.preference, EMAIL_TYPES[s.type], s.type);
      assert.equal(s.url, `/_local/mail/samples/${s.type}`);
    }
  }
  assert.equal(await mailCount(), before, "nothing is written");
});

sqlTest(
  "mail viewer shows a sample like a message: headers, sandboxed HTML, text part",
  async () => {
    const before = await mailCount();
    const rendered = MAIL_SAMPLES.listing_resubmission.render();
    const html = await page("/_local/mail/samples/listing_resubmission");
    const iframe = /<iframe [^>]*>/.exec(html)?.[0] ?? "";
    assert.ok(iframe.includes(`sandbox="${MAIL_IFRAME_SANDBOX}"`), iframe);
    assert.doesNotMatch(iframe, /allow-scripts|allow-same-origin/);
    const srcdoc = /srcdoc="([^"]*)"/.exec(iframe)?.[1];
    assert.equal(
      srcdoc,
      escapeHtml(rendered.html.replace("<head>", '<head><base target="_blank">')),
      "the sample's HTML, escaped, links opening outside the frame",
    );
    assert.ok(html.includes(`<pre>\n${escapeHtml(rendered.text)}</pre>`), "the text part");
    for (
      const field of [
        `<dt>Subject</dt><dd>${escapeHtml(rendered.subject)}</dd>`,
        "<dt>Type</dt><dd>listing_resubmission</dd>",
        `<dt>Sent when</dt><dd>${escapeHtml(MAIL_SAMPLES.listing_resubmission.description)}</dd>`,
        "<dt>Preference</dt><dd>listing_review</dd>",
      ]
    ) {
      assert.ok(html.includes(field), field);
    }
    assert.ok(
      html.includes(`<title>${escapeHtml(rendered.subject)} (sample) — Local console</title>`),
    );
    assert.doesNotMatch(html, /<b>/, "the title's markup is never markup on the page");
    assert.ok(html.includes('<a href="/_local/mail/samples/listing_resubmission.json">JSON</a>'));
    assert.match(
      await page("/_local/mail/samples/auth_signup"),
      /<dt>Preference<\/dt><dd>none: always sent<\/dd>/,
    );

    for (const type of Object.keys(EMAIL_TYPES) as EmailType[]) {
      const expected = MAIL_SAMPLES[type].render();
      for (
        const path of [
          `/_local/mail/samples/${type}.json`,
          `/_local/mail/samples/${type}?format=json`,
        ]
      ) {
        const sample = await json<MailSampleMessage>(path);
        assert.equal(sample.type, type, path);
        assert.equal(sample.subject, expected.subject, path);
        assert.equal(sample.html, expected.html, path);
        assert.equal(sample.text, expected.text, path);
        assert.equal(sample.preference, EMAIL_TYPES[type], path);
      }
      assert.ok((await page(`/_local/mail/samples/${type}`)).includes("<iframe "), type);
    }
    assert.equal(await mailCount(), before, "nothing is written");
  },
);

sqlTest("mail viewer answers 404 for a sample type it does not know, HTML or JSON", async () => {
  for (
    const path of [
      "/_local/mail/samples/nope",
      "/_local/mail/samples/<script>",
      "/_local/mail/samples/%3Cscript%3E",
      "/_local/mail/samples/__proto__",
      "/_local/mail/samples/toString",
      "/_local/mail/samples/welcome/more",
      "/_local/mail/samples/WELCOME",
    ]
  ) {
    const res = await get(path);
    assert.equal(res.status, 404, path);
    assert.equal(res.headers.get("content-type"), "text/html; charset=utf-8", path);
    const text = await res.text();
    assert.match(text, /404 not_found/, path);
    assert.doesNotMatch(text, /<script/i, path);
  }
  for (
    const path of [
      "/_local/mail/samples/nope.json",
      "/_local/mail/samples/constructor?format=json",
    ]
  ) {
    const res = await get(path);
    assert.equal(res.status, 404, path);
    const body = await res.json();
    assert.equal(body.error.code, "not_found", path);
    assert.match(body.error.message, /\/_local\/mail\/samples/, path);
  }
});
