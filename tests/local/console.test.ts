import assert from "node:assert/strict";
import { createGateway } from "../../local/gateway.ts";
import { readVerifyJwt } from "../../local/config_toml.ts";
import { CONFIG_TOML_PATH } from "../../local/paths.ts";
import { CONSOLE_CSP, createConsole } from "../../local/console/server.ts";
import { LINES_PER_REQUEST, LogTap, REQUEST_LIMIT } from "../../local/console/log_tap.ts";
import { durationChart } from "../../local/console/jobs_page.ts";
import { FUNCTION_NAMES } from "../../shared/functions.ts";
import type { EdgeFunction } from "../../supabase/functions/_shared/platform/function.ts";
import type { LogLevel } from "../../supabase/functions/_shared/platform/log.ts";
import securityHeaders from "../../supabase/functions/security-headers/handler.ts";
import getPriceId from "../../supabase/functions/get-price-id/handler.ts";
import updateViewsCount from "../../supabase/functions/update-views-count/handler.ts";
import cancelDeal from "../../supabase/functions/cancel-deal/handler.ts";
import sendQueuedNotices from "../../supabase/functions/send-queued-notices/handler.ts";
import { ACCESS_REQUEST_STATUSES } from "../../shared/listing_access.ts";
import { createListing } from "../db/core_fixtures.ts";
import { testCredentials } from "../support/credentials.ts";
import { createTestDatabase, sqlTest } from "../support/db.ts";
import { testRuntime } from "../support/runtime.ts";
import { makeConfidential } from "../support/listing_access.ts";
import { createLoiDeal } from "../support/loi.ts";
import { asRole, createUser, type TestUser } from "../support/sql.ts";

const db = await createTestDatabase();
const keys = await testCredentials();
const written: Array<[LogLevel, string]> = [];
const tap = new LogTap((level, line) => written.push([level, line]));
const runtime = await testRuntime(db, { LOCAL_DEV: "true", LOG_LEVEL: "info" }, {
  logSink: tap.sink,
});
const functions = new Map<string, EdgeFunction>(
  [securityHeaders, getPriceId, updateViewsCount, cancelDeal, sendQueuedNotices].map((
    fn,
  ) => [fn.definition.name, fn]),
);
const minted: string[] = [];
const localConsole = createConsole({
  runtime,
  tap,
  functions,
  gateway: (req) => gateway(req),
  tokens: {
    anon: keys.anonKey,
    service: keys.serviceKey,
    scheduler: keys.schedulerToken,
    user: async (email, admin) => {
      minted.push(`${email} ${admin}`);
      const user = await createUser(db.pool, { email: `${crypto.randomUUID()}-${email}`, admin });
      return await keys.userToken(user);
    },
  },
});
const gateway = createGateway({
  functions,
  runtime,
  verifyJwt: readVerifyJwt(await Deno.readTextFile(CONFIG_TOML_PATH)),
  jwks: keys.jwks,
  mail: true,
  console: localConsole,
});

const ORIGIN = "http://127.0.0.1:54321";
const request = (path: string, init: RequestInit = {}) =>
  gateway(new Request(`${ORIGIN}${path}`, init));
/** A console form, as the browser posts it from the console's own page. */
const post = (path: string, fields: Record<string, string>, headers: HeadersInit = {}) =>
  request(path, {
    method: "POST",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      origin: ORIGIN,
      "sec-fetch-site": "same-origin",
      ...headers,
    },
    body: new URLSearchParams(fields),
  });
const jobRuns = async () =>
  (await db.pool.query<{ n: number }>("select count(*)::int as n from public.job_runs")).rows[0]!.n;

async function html(path: string): Promise<string> {
  const res = await request(path);
  assert.equal(res.status, 200, `${path}: ${res.status}`);
  assert.equal(res.headers.get("content-type"), "text/html; charset=utf-8");
  return await res.text();
}

sqlTest(
  "console: every page answers with the console's CSP, no framing, no store and no script",
  async () => {
    for (
      const path of [
        "/_local",
        "/_local/",
        "/_local/functions",
        "/_local/functions/get-price-id",
        "/_local/requests",
        "/_local/webhooks",
        "/_local/jobs",
        "/_local/deals",
        "/_local/access",
        "/_local/conversations",
      ]
    ) {
      const res = await request(path);
      assert.equal(res.status, 200, path);
      assert.equal(res.headers.get("content-security-policy"), CONSOLE_CSP, path);
      assert.equal(res.headers.get("x-frame-options"), "DENY", path);
      assert.equal(res.headers.get("cache-control"), "no-store", path);
      assert.equal(res.headers.get("access-control-allow-origin"), null, path);
      const body = await res.text();
      assert.doesNotMatch(body, /<script/i, path);
      for (
        const link of [
          "/_local/functions",
          "/_local/requests",
          "/_local/webhooks",
          "/_local/jobs",
          "/_local/deals",
          "/_local/access",
          "/_local/conversations",
          "/_local/mail",
        ]
      ) {
        assert.ok(body.includes(`href="${link}"`), `${path} links ${link}`);
      }
    }
    assert.match(CONSOLE_CSP, /default-src 'none'/);
    assert.doesNotMatch(CONSOLE_CSP, /script-src/);
  },
);

sqlTest(
  "console: a Host that is not loopback is refused, GET and POST alike, and nothing runs",
  async () => {
    for (const host of ["evil.example", "127.0.0.1.nip.io", "10.0.0.1"]) {
      const page = await gateway(new Request(`http://${host}:54321/_local/jobs`));
      assert.equal(page.status, 403, host);
      assert.match(await page.text(), /answers on 127\.0\.0\.1 and localhost only/);
      const run = await gateway(
        new Request(`http://${host}:54321/_local/jobs/update-views-count/run`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: "",
        }),
      );
      assert.equal(run.status, 403, host);
      await run.body?.cancel();
    }
    assert.equal(await jobRuns(), 0);
    for (const host of ["localhost", "127.0.0.2", "app.localhost"]) {
      const res = await gateway(new Request(`http://${host}:54321/_local/`));
      assert.equal(res.status, 200, host);
      await res.body?.cancel();
    }
  },
);

sqlTest(
  "console: a form from another site is refused (Origin, Sec-Fetch-Site) and changes nothing",
  async () => {
    const before = await jobRuns();
    const refused: Array<Record<string, string>> = [
      { origin: "http://evil.example", "sec-fetch-site": "cross-site" },
      { origin: "http://evil.example" },
      { origin: "null", "sec-fetch-site": "" },
      { "sec-fetch-site": "cross-site", origin: "" },
      { "sec-fetch-site": "same-site", origin: "" },
    ];
    for (const headers of refused) {
      const res = await post("/_local/jobs/update-views-count/run", {}, headers);
      assert.equal(res.status, 403, JSON.stringify(headers));
      assert.match(await res.text(), /takes forms from its own pages only/);
    }
    assert.equal(await jobRuns(), before);
    // A browser under a no-referrer policy sends Origin "null" with Sec-Fetch-Site: same-origin;
    // curl sends neither.
    for (
      const headers of [{ origin: "null" }, { origin: "", "sec-fetch-site": "" }] as Array<
        Record<string, string>
      >
    ) {
      const res = await post("/_local/jobs/update-views-count/run", {}, headers);
      assert.equal(res.status, 303, JSON.stringify(headers));
      await res.body?.cancel();
    }
    assert.equal(await jobRuns(), before + 2);
  },
);

sqlTest(
  "console: run now calls the job as the scheduler does, and the outcome shows once",
  async () => {
    const before = await jobRuns();
    const res = await post("/_local/jobs/update-views-count/run", {});
    assert.equal(res.status, 303);
    const location = res.headers.get("location")!;
    assert.match(location, /^\/_local\/jobs\?shown=[0-9a-f-]{36}#update-views-count$/);
    assert.equal(await jobRuns(), before + 1);
    const shown = await html(location);
    assert.match(
      shown,
      /Ran <code>update-views-count<\/code> now: <span class="badge ok">200<\/span>/,
    );
    const requestId = /\/_local\/requests\/([0-9a-f-]{36})/.exec(shown)![1]!;
    // The job's own request is on the Requests page, with its log lines.
    const detail = await html(`/_local/requests/${requestId}`);
    assert.match(detail, /update-views-count/);
    assert.match(detail, /caller scheduler/);
    // Shown once: the same address again has no outcome.
    assert.doesNotMatch(await html(location), /role="status"/);
    // Not a scheduled function: 404, nothing called.
    const other = await post("/_local/jobs/security-headers/run", {});
    assert.equal(other.status, 404);
    await other.body?.cancel();
    const unknown = await post("/_local/jobs/no-such-job/run", {});
    assert.equal(unknown.status, 404);
    await unknown.body?.cancel();
    assert.equal(await jobRuns(), before + 1);
  },
);

sqlTest(
  "console: the call-it form calls through the gateway as the chosen caller and escapes the answer",
  async () => {
    const res = await post("/_local/functions/get-price-id/call", {
      caller: "anon",
      body: JSON.stringify({ plan: "<b>bold</b>" }),
    });
    assert.equal(res.status, 303);
    const shown = await html(res.headers.get("location")!);
    assert.match(shown, /Called <code>get-price-id<\/code> as anon key/);
    assert.ok(shown.includes("&lt;b&gt;bold&lt;/b&gt;"), "the plan comes back escaped");
    assert.ok(!shown.includes("<b>bold</b>"));

    const asAdmin = await post("/_local/functions/security-headers/call", {
      caller: "admin",
      body: "",
    });
    const adminPage = await html(asAdmin.headers.get("location")!);
    assert.match(adminPage, /<span class="badge ok">200<\/span>/);
    assert.deepEqual(minted.at(-1), "console-admin@example.com true");

    const none = await post("/_local/functions/security-headers/call", {
      caller: "none",
      body: "{}",
    });
    assert.match(await html(none.headers.get("location")!), /<span class="badge warn">401<\/span>/);

    const missing = await post("/_local/functions/security-headers/call", {
      caller: "custom",
      token: " ",
    });
    assert.equal(missing.status, 400);
    assert.match(await missing.text(), /Give the token to call with/);
    const wrong = await post("/_local/functions/security-headers/call", { caller: "root" });
    assert.equal(wrong.status, 400);
    await wrong.body?.cancel();
  },
);

sqlTest(
  "console: the Functions page is the OpenAPI document's, served at /_local/openapi.json",
  async () => {
    const res = await request("/_local/openapi.json");
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("content-type"), "application/json; charset=utf-8");
    const doc = await res.json();
    assert.equal(doc.openapi.startsWith("3.1"), true);
    assert.deepEqual(
      JSON.parse(await Deno.readTextFile(new URL("../../docs/openapi.json", import.meta.url))),
      doc,
    );
    const list = await html("/_local/functions");
    for (const name of FUNCTION_NAMES) {
      assert.ok(list.includes(`href="/_local/functions/${name}"`), name);
    }
    const one = await html("/_local/functions/get-price-id");
    assert.ok(one.includes("curl -X POST http://127.0.0.1:54321/functions/v1/get-price-id"));
    assert.match(one, /&quot;plan&quot;/, "its request schema and example");
    assert.match(
      one,
      /<td>400<\/td>\s*<td>&#96;invalid_json&#96; \(not a JSON object\)/,
      "failures described",
    );
    const absent = await request("/_local/functions/no-such-function");
    assert.equal(absent.status, 404);
    await absent.body?.cancel();
  },
);

sqlTest(
  "console: unknown pages, wrong methods and non-form bodies get the documented errors",
  async () => {
    const unknown = await request("/_local/nothing-here");
    assert.equal(unknown.status, 404);
    await unknown.body?.cancel();
    const asJson = await request("/_local/nothing.json");
    assert.equal(asJson.status, 404);
    assert.equal((await asJson.json()).error.code, "not_found");
    const wrongMethod = await request("/_local/jobs/update-views-count/run");
    assert.equal(wrongMethod.status, 405);
    assert.equal(wrongMethod.headers.get("allow"), "POST");
    await wrongMethod.body?.cancel();
    const putPage = await request("/_local/jobs", { method: "PUT" });
    assert.equal(putPage.status, 405);
    assert.equal(putPage.headers.get("allow"), "GET, HEAD");
    await putPage.body?.cancel();
    const json = await request("/_local/jobs/update-views-count/run", {
      method: "POST",
      headers: { "content-type": "application/json", origin: ORIGIN },
      body: "{}",
    });
    assert.equal(json.status, 415);
    await json.body?.cancel();
    const badFilter = await request("/_local/requests?status=abc");
    assert.equal(badFilter.status, 400);
    await badFilter.body?.cancel();
    const badOutcome = await request("/_local/webhooks?outcome=lost");
    assert.equal(badOutcome.status, 400);
    await badOutcome.body?.cancel();
    const badState = await request("/_local/deals?state=sold");
    assert.equal(badState.status, 400);
    await badState.body?.cancel();
    const badDeal = await request("/_local/deals/not-a-uuid");
    assert.equal(badDeal.status, 400);
    await badDeal.body?.cancel();
  },
);

sqlTest(
  "console: ledger and deal values are escaped; a deal's timeline merges its records in time order",
  async () => {
    await db.pool.query(
      `insert into public.payproc_events (id, type, created, outcome, detail)
     values ('evt_console_escape', '<script>alert(1)</script>', now(), 'skipped', '<img src=x onerror=alert(2)>')`,
    );
    const webhooks = await html("/_local/webhooks");
    assert.ok(webhooks.includes("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert.ok(webhooks.includes("&lt;img src=x onerror=alert(2)&gt;"));
    assert.doesNotMatch(webhooks, /<script|<img/);
    assert.ok(
      webhooks.includes('name="id" value="evt_console_escape"'),
      "a replay button per event",
    );
    const skipped = await (await request("/_local/webhooks.json?outcome=skipped")).json();
    assert.deepEqual(skipped.events.map((e: { id: string }) => e.id), ["evt_console_escape"]);

    const seller = await createUser(db.pool);
    const buyer = await createUser(db.pool);
    const listing = await createListing(db.pool, seller.id);
    await db.pool.query("update public.listings set title = $2 where id = $1", [
      listing.id,
      'Shop <i>"quoted"</i>',
    ]);
    const { rows } = await db.pool.query<{ id: string }>(
      `insert into public.deals (listing_id, buyer_id, seller_id, amount, currency)
     values ($1, $2, $3, 1250, 'USD') returning id`,
      [listing.id, buyer.id, seller.id],
    );
    const dealId = rows[0]!.id;
    const cancelled = await post("/_local/functions/cancel-deal/call", {
      caller: "admin",
      body: JSON.stringify({ dealId, reason: "Console <test>" }),
    });
    assert.match(await html(cancelled.headers.get("location")!), /badge ok">200</);
    const list = await html("/_local/deals?state=cancelled");
    assert.ok(list.includes(`href="/_local/deals/${dealId}"`));
    assert.ok(list.includes("Shop &lt;i&gt;&quot;quoted&quot;&lt;/i&gt;"));
    const timeline = (await (await request(`/_local/deals/${dealId}.json`)).json())
      .timeline as Array<
        { at: string; source: string; what: string }
      >;
    assert.equal(timeline[0]!.source, "deal");
    assert.ok(timeline.some((e) => e.what === "pending_payment → cancelled (cancelled)"));
    const times = timeline.map((e) => Date.parse(e.at));
    assert.deepEqual(times, [...times].sort((a, b) => a - b));
    const page = await html(`/_local/deals/${dealId}`);
    assert.ok(page.includes("Console &lt;test&gt;"));

    // A letter of intent's deal: in due diligence, its window and agreed terms on its page.
    const loi = await createLoiDeal(db.pool);
    const diligence = await html("/_local/deals?state=in_diligence");
    assert.ok(diligence.includes(`href="/_local/deals/${loi.dealId}"`));
    const loiPage = await html(`/_local/deals/${loi.dealId}`);
    assert.match(loiPage, /Exclusive until<\/th>\s*<td>\d{4}-\d{2}-\d{2}/);
    assert.ok(
      loiPage.includes(
        "cash at close 900.00 USD · holdback 100.00 for 30 days · inspection 10 days · exclusivity 14 days · 2 conditions",
      ),
      loiPage,
    );
    assert.ok(loiPage.includes("→ in_diligence (offer_accepted)"));
  },
);

sqlTest(
  "console: the Requests page lists the newest requests and filters them by status",
  async () => {
    const ok = await request("/functions/v1/security-headers", {
      method: "POST",
      headers: { authorization: `Bearer ${keys.anonKey}`, "x-request-id": "req-console-ok" },
    });
    await ok.body?.cancel();
    const missing = await request("/functions/v1/no-such-function", {
      method: "POST",
      headers: { "x-request-id": "req-console-404" },
    });
    await missing.body?.cancel();
    const all = await html("/_local/requests");
    assert.ok(all.indexOf("req-console-404") < all.indexOf("req-console-ok"), "newest first");
    const clientErrors = await html("/_local/requests?status=4xx");
    assert.ok(clientErrors.includes("req-console-404"));
    assert.ok(!clientErrors.includes("req-console-ok"));
    const exact = await (await request("/_local/requests.json?status=200")).json();
    assert.ok(exact.requests.every((r: { status: number }) => r.status === 200));
    const lines = await (await request("/_local/requests/req-console-ok.json")).json();
    assert.equal(lines.record.function, "security-headers");
    assert.equal(lines.record.caller, "anon");
    assert.ok(lines.lines.some((l: { msg: string }) => l.msg === "request"));
    const gone = await request("/_local/requests/req-never-made");
    assert.equal(gone.status, 404);
    await gone.body?.cancel();
    // The tap hands every line on unchanged.
    assert.ok(written.some(([, line]) => line.includes("req-console-ok")));
  },
);

/** Runs `sql` as signed-in `user` (with request `headers`) and commits, as supabase-js would. */
async function rpcAs<T = unknown>(
  user: TestUser,
  sql: string,
  params: unknown[] = [],
  headers?: Record<string, string>,
): Promise<T> {
  return await asRole(db.pool, { role: "authenticated", userId: user.id, headers }, async (c) => {
    const { rows } = await c.query(sql, params);
    await c.query("commit");
    return Object.values(rows[0] ?? {})[0] as T;
  });
}

/** A console page's JSON twin, asserted 200. */
async function json<T>(path: string): Promise<T> {
  const res = await request(path);
  assert.equal(res.status, 200, `${path}: ${res.status}`);
  assert.equal(res.headers.get("content-type"), "application/json; charset=utf-8");
  return await res.json() as T;
}

/** Asserts `path` (and its `.json` twin) fail with `status` and `code`. */
async function refused(path: string, jsonPath: string, status: number, code: string) {
  const page = await request(path);
  assert.equal(page.status, status, path);
  assert.equal(page.headers.get("content-type"), "text/html; charset=utf-8");
  await page.body?.cancel();
  const answer = await request(jsonPath);
  assert.equal(answer.status, status, jsonPath);
  assert.equal((await answer.json()).error.code, code, jsonPath);
}

interface ConsoleTimelineEntry {
  at: string;
  source: string;
  what: string;
  detail: string | null;
  link: string | null;
}

/** Asserts `entries` are in time order. */
function assertTimeOrder(entries: ConsoleTimelineEntry[]) {
  const times = entries.map((e) => e.at);
  assert.deepEqual(times, [...times].sort());
  assert.ok(entries.every((e) => !Number.isNaN(Date.parse(e.at))));
}

const REQUEST_ACCESS = "select public.request_listing_access($1, '1', $2)";

sqlTest(
  "console: the Access page counts requests by status, filters them, and shows one request's NDA, decision, revocation, notices and conversation in time order",
  async () => {
    const seller = await createUser(db.pool, {
      email: `seller-${crypto.randomUUID()}@example.test`,
    });
    const approved = await createUser(db.pool);
    const withdrawn = await createUser(db.pool);
    const waiting = await createUser(db.pool);
    const listing = await createListing(db.pool, seller.id);
    await makeConfidential(db.pool, listing.id);
    await db.pool.query("update public.listings set title = $2 where id = $1", [
      listing.id,
      "Confidential <b>shop</b>",
    ]);

    // Three buyers ask, through the RPC, as the frontend does.
    const revokedId = await rpcAs<string>(approved, REQUEST_ACCESS, [
      listing.id,
      '<script>alert("nda")</script> I run two shops',
    ], { "x-forwarded-for": "203.0.113.7" });
    const withdrawnId = await rpcAs<string>(withdrawn, REQUEST_ACCESS, [listing.id, null]);
    const pendingId = await rpcAs<string>(waiting, REQUEST_ACCESS, [listing.id, "Please"]);
    // The seller approves one (which opens the conversation), then revokes it; a buyer withdraws.
    await rpcAs(seller, "select public.decide_listing_access($1, true, $2)", [
      revokedId,
      "Welcome <b>in</b>",
    ]);
    await rpcAs(seller, "select public.revoke_listing_access($1, $2)", [
      revokedId,
      "Changed <my> mind",
    ]);
    await rpcAs(withdrawn, "select public.withdraw_listing_access($1)", [withdrawnId]);
    // The queue's job runs once, as the scheduler would start it.
    const ran = await post("/_local/jobs/send-queued-notices/run", {});
    assert.equal(ran.status, 303);
    await ran.body?.cancel();

    // The list: every status counted (zero included), newest first.
    const { rows: inDb } = await db.pool.query<{ status: string; n: number }>(
      "select status, count(*)::int as n from public.listing_access_requests group by status",
    );
    const list = await json<
      { counts: Record<string, number>; requests: Array<{ id: string; status: string }> }
    >("/_local/access.json");
    assert.deepEqual(Object.keys(list.counts), [...ACCESS_REQUEST_STATUSES]);
    for (const status of ACCESS_REQUEST_STATUSES) {
      assert.equal(list.counts[status], inDb.find((r) => r.status === status)?.n ?? 0, status);
    }
    assert.ok(
      list.counts.revoked! >= 1 && list.counts.withdrawn! >= 1 && list.counts.pending! >= 1,
    );
    const ids = list.requests.map((r) => r.id);
    assert.ok(ids.indexOf(pendingId) < ids.indexOf(withdrawnId), "newest first");
    assert.ok(ids.indexOf(withdrawnId) < ids.indexOf(revokedId), "newest first");
    const all = await html("/_local/access");
    for (const status of ACCESS_REQUEST_STATUSES) {
      assert.ok(all.includes(`href="/_local/access?status=${status}"`), `a card for ${status}`);
    }
    assert.ok(all.includes(`href="/_local/access/${revokedId}"`));
    assert.ok(all.includes("Confidential &lt;b&gt;shop&lt;/b&gt;"));
    assert.ok(all.includes(approved.email) && all.includes(seller.email));
    assert.doesNotMatch(all, /<b>shop/);

    // The filter, in HTML and JSON; an unknown status is 400 invalid_input.
    const pending = await html("/_local/access?status=pending");
    assert.ok(pending.includes(`href="/_local/access/${pendingId}"`));
    assert.ok(!pending.includes(`href="/_local/access/${revokedId}"`));
    const revoked = await json<{ requests: Array<{ id: string; status: string }> }>(
      "/_local/access.json?status=revoked",
    );
    assert.ok(revoked.requests.some((r) => r.id === revokedId));
    assert.ok(revoked.requests.every((r) => r.status === "revoked"));
    await refused(
      "/_local/access?status=lost",
      "/_local/access.json?status=lost",
      400,
      "invalid_input",
    );

    // One request: its facts, escaped.
    const { rows: [nda] } = await db.pool.query<{ sha256: string }>(
      "select sha256 from public.nda_documents where version = '1'",
    );
    const { rows: [conversation] } = await db.pool.query<{ id: string }>(
      "select id from public.conversations where listing_id = $1 and buyer_id = $2",
      [listing.id, approved.id],
    );
    const one = await html(`/_local/access/${revokedId}`);
    assert.match(one, /<span class="badge bad">revoked<\/span>/);
    assert.ok(one.includes("&lt;script&gt;alert(&quot;nda&quot;)&lt;/script&gt; I run two shops"));
    assert.doesNotMatch(one, /<script/i);
    assert.ok(one.includes(nda!.sha256), "the NDA's sha256");
    assert.ok(one.includes("203.0.113.7"), "the client address of the acceptance");
    assert.ok(one.includes(`Approved by the seller (${seller.email})`));
    assert.ok(one.includes("Welcome &lt;b&gt;in&lt;/b&gt;"));
    assert.ok(one.includes("Changed &lt;my&gt; mind"));
    assert.ok(one.includes(`href="/_local/conversations/${conversation!.id}"`));

    // Its timeline: request, decision, conversation, revocation, and every notice, in time order.
    const detail = await json<
      { request: { id: string; status: string }; timeline: ConsoleTimelineEntry[] }
    >(`/_local/access/${revokedId}.json`);
    assert.equal(detail.request.status, "revoked");
    const timeline = detail.timeline;
    assertTimeOrder(timeline);
    const at = (what: RegExp) => timeline.findIndex((e) => what.test(e.what));
    assert.equal(timeline[0]!.source, "request");
    assert.match(timeline[0]!.what, new RegExp(`Requested by the buyer \\(${approved.email}\\)`));
    assert.ok(at(/^Approved by the seller/) > 0);
    assert.ok(at(/^Conversation of this listing and buyer started/) > at(/^Approved by/));
    assert.ok(at(/^Access revoked by the seller/) > at(/^Approved by/));
    assert.equal(
      timeline[at(/^Conversation of/)]!.link,
      `/_local/conversations/${conversation!.id}`,
    );
    const { rows: notices } = await db.pool.query<
      { kind: string; status: string; outcome: string | null }
    >(
      "select kind, status, outcome from public.notice_queue where subject_id = $1 order by created_at",
      [revokedId],
    );
    assert.deepEqual(notices.map((n) => n.kind), [
      "listing_access_requested",
      "listing_access_approved",
      "listing_access_revoked",
    ]);
    for (const n of notices) {
      const to = n.kind === "listing_access_requested" ? "the seller" : "the buyer";
      const queued = at(new RegExp(`^Notice ${n.kind} to ${to} .* queued$`));
      assert.ok(queued >= 0, `${n.kind} queued`);
      assert.notEqual(n.status, "pending", `${n.kind} was handled by the run`);
      const done = timeline.findIndex((e) =>
        e.what.startsWith(`Notice ${n.kind} to ${to}`) && e.what.endsWith(` ${n.status}`)
      );
      assert.ok(done > queued, `${n.kind} ${n.status} after it was queued`);
      assert.equal(timeline[done]!.detail, n.outcome);
    }
    assert.ok(
      at(/^Notice listing_access_approved .* queued$/) > at(/^Approved by/),
      "queued by the decision",
    );

    // The withdrawn request: who withdrew it; its seller's notice was handled too.
    const gone = await json<{ timeline: ConsoleTimelineEntry[] }>(
      `/_local/access/${withdrawnId}.json`,
    );
    assert.ok(gone.timeline.some((e) => e.what === `Withdrawn by the buyer (${withdrawn.email})`));
    assert.ok(!gone.timeline.some((e) => e.source === "conversation"));

    // No such request: 404; not an id: 400.
    const missing = crypto.randomUUID();
    await refused(`/_local/access/${missing}`, `/_local/access/${missing}.json`, 404, "not_found");
    await refused("/_local/access/nope", "/_local/access/nope.json", 400, "invalid_input");
  },
);

sqlTest(
  "console: the Conversations page counts open, closed and reported, filters them, and shows one conversation's messages, read marks, closing, reports and notices in time order",
  async () => {
    const seller = await createUser(db.pool);
    const buyer = await createUser(db.pool);
    const quiet = await createUser(db.pool);
    await createUser(db.pool, { admin: true });
    const listing = await createListing(db.pool, seller.id);
    const other = await createListing(db.pool, seller.id);
    const START = "select public.start_conversation($1)";
    const SEND = "select public.send_message($1, $2)";

    const id = await rpcAs<string>(buyer, START, [listing.id]);
    await rpcAs(buyer, SEND, [id, 'Hello <script>alert("body")</script>\nSecond line']);
    await rpcAs(seller, SEND, [id, "Hi, ask away"]);
    await rpcAs(buyer, "select public.mark_conversation_read($1)", [id]);
    await rpcAs(seller, SEND, [id, "Are you still there?"]);
    const reportId = await rpcAs<string>(buyer, "select public.report_conversation($1, $2)", [
      id,
      "Asked me to pay <b>off-platform</b>",
    ]);
    await rpcAs(seller, "select public.block_conversation($1, $2)", [id, "Spam <i>bye</i>"]);
    const openId = await rpcAs<string>(quiet, START, [other.id]);

    // The list: the counts as the tables hold them, most recently active first.
    const { rows: [inDb] } = await db.pool.query<
      { open: number; closed: number; reported: number }
    >(
      `select count(*) filter (where closed_at is null)::int as open,
         count(*) filter (where closed_at is not null)::int as closed,
         (select count(distinct conversation_id) from public.conversation_reports)::int as reported
       from public.conversations`,
    );
    interface Listed {
      id: string;
      messages: number;
      unread_for_buyer: number;
      unread_for_seller: number;
      reports: number;
      closed_at: string | null;
    }
    const list = await json<{ counts: Record<string, number>; conversations: Listed[] }>(
      "/_local/conversations.json",
    );
    assert.deepEqual(list.counts, inDb);
    assert.ok(list.counts.open! >= 1 && list.counts.closed! >= 1 && list.counts.reported! >= 1);
    const ids = list.conversations.map((c) => c.id);
    assert.ok(ids.indexOf(openId) < ids.indexOf(id), "the newest activity first");
    const row = list.conversations.find((c) => c.id === id)!;
    assert.deepEqual(
      [row.messages, row.unread_for_buyer, row.unread_for_seller, row.reports],
      [3, 1, 0, 1],
      "3 messages; the seller's last one is unread for the buyer; one report",
    );
    assert.ok(row.closed_at !== null);
    const all = await html("/_local/conversations");
    for (const state of ["open", "closed", "reported"]) {
      assert.ok(all.includes(`href="/_local/conversations?state=${state}"`), state);
    }
    assert.ok(all.includes(`href="/_local/conversations/${id}"`));
    assert.ok(all.includes(buyer.email) && all.includes(seller.email));
    assert.match(all, /<span class="badge bad">closed<\/span>/);
    assert.match(all, /<span class="badge warn">1 reported<\/span>/);

    // The filters; an unknown state is 400 invalid_input.
    const closed = await html("/_local/conversations?state=closed");
    assert.ok(closed.includes(`href="/_local/conversations/${id}"`));
    assert.ok(!closed.includes(`href="/_local/conversations/${openId}"`));
    const open = await json<{ conversations: Listed[] }>("/_local/conversations.json?state=open");
    assert.ok(open.conversations.some((c) => c.id === openId));
    assert.ok(open.conversations.every((c) => c.closed_at === null));
    const reported = await json<{ conversations: Listed[] }>(
      "/_local/conversations.json?state=reported",
    );
    assert.ok(reported.conversations.some((c) => c.id === id));
    assert.ok(reported.conversations.every((c) => c.reports > 0));
    await refused(
      "/_local/conversations?state=archived",
      "/_local/conversations.json?state=archived",
      400,
      "invalid_input",
    );

    // One conversation: its facts and messages, every value escaped.
    const one = await html(`/_local/conversations/${id}`);
    assert.ok(
      one.includes(
        "<pre>Hello &lt;script&gt;alert(&quot;body&quot;)&lt;/script&gt;\nSecond line</pre>",
      ),
      "the body in a <pre>, escaped",
    );
    assert.doesNotMatch(one, /<script/i);
    assert.ok(one.includes("Asked me to pay &lt;b&gt;off-platform&lt;/b&gt;"));
    assert.ok(one.includes("Spam &lt;i&gt;bye&lt;/i&gt;"));
    assert.ok(one.includes(`the seller (${seller.email})`));

    // Its timeline: every record in time order, each read mark where it stands.
    const detail = await json<{ timeline: ConsoleTimelineEntry[] }>(
      `/_local/conversations/${id}.json`,
    );
    assertTimeOrder(detail.timeline);
    const own = detail.timeline.filter((e) => e.source !== "notice");
    assert.deepEqual(own.map((e) => [e.source, e.what]), [
      [
        "started",
        `Conversation started by the buyer (${buyer.email}) with the seller (${seller.email})`,
      ],
      ["message", `Message from the buyer (${buyer.email})`],
      ["message", `Message from the seller (${seller.email})`],
      ["read mark", "The buyer's read mark: read up to here"],
      ["message", `Message from the seller (${seller.email})`],
      ["read mark", "The seller's read mark: read up to here"],
      ["report", `Reported by the buyer (${buyer.email})`],
      ["closed", `Closed by the seller (${seller.email})`],
    ]);
    assert.equal(own[1]!.detail, 'Hello <script>alert("body")</script>\nSecond line');
    assert.equal(own[3]!.detail, "1 of the seller's messages after it unread");
    // The notices about it and about its report, queued.
    const notices = detail.timeline.filter((e) => e.source === "notice").map((e) => e.what);
    assert.ok(notices.some((w) => /^Notice conversation_unread to the buyer .* queued$/.test(w)));
    assert.ok(notices.some((w) => /^Notice conversation_unread to the seller .* queued$/.test(w)));
    const { rows: alerts } = await db.pool.query(
      "select 1 from public.notice_queue where subject_id = $1 and kind = 'conversation_reported'",
      [reportId],
    );
    assert.ok(alerts.length >= 1);
    assert.equal(
      notices.filter((w) => /^Notice conversation_reported to an admin .* queued$/.test(w)).length,
      alerts.length,
      "one alert per admin",
    );

    // No such conversation: 404; not an id: 400.
    const missing = crypto.randomUUID();
    await refused(
      `/_local/conversations/${missing}`,
      `/_local/conversations/${missing}.json`,
      404,
      "not_found",
    );
    await refused("/_local/conversations/1", "/_local/conversations/1.json", 400, "invalid_input");
  },
);

Deno.test("log tap: keeps the newest requests and at most so many lines of each", () => {
  const seen: string[] = [];
  const tap = new LogTap((_level, line) => seen.push(line));
  const line = (id: string, fields: Record<string, unknown> = {}) =>
    JSON.stringify({
      level: "info",
      time: "2026-11-26T10:00:00.000Z",
      msg: "work",
      request_id: id,
      ...fields,
    });
  for (let i = 0; i <= REQUEST_LIMIT; i++) {
    tap.sink("info", line(`r${i}`, { msg: "request", function: "f", status: i % 2 ? 500 : 200 }));
  }
  assert.equal(tap.request("r0"), null, "the oldest is dropped");
  assert.equal(tap.requests().length, REQUEST_LIMIT);
  assert.equal(tap.requests()[0]!.requestId, `r${REQUEST_LIMIT}`);
  assert.ok(tap.requests({ status: 5 }).every((r) => r.status === 500));
  for (let i = 0; i < LINES_PER_REQUEST + 10; i++) tap.sink("debug", line("busy"));
  assert.equal(tap.request("busy")!.lines.length, LINES_PER_REQUEST);
  assert.equal(tap.request("busy")!.record, null);
  tap.sink("info", "not json");
  tap.sink("info", JSON.stringify({ msg: "no request id" }));
  assert.equal(seen.length, REQUEST_LIMIT + 1 + LINES_PER_REQUEST + 10 + 2, "every line passed on");
});

Deno.test("jobs chart: one bar per finished run, scaled to the longest, none for a running one", () => {
  const run = (ms: number | null, status = "succeeded") => ({
    id: crypto.randomUUID(),
    status,
    started_at: new Date("2026-11-26T10:00:00Z"),
    duration_ms: ms,
    match_ms: null,
    delivery_ms: null,
    alerts_scanned: 0,
    matches: 0,
    delivered: 0,
    failed: 0,
  });
  const svg = durationChart([
    run(100),
    run(400, "partial"),
    run(null, "running"),
    run(200, "failed"),
  ])
    .toString();
  assert.equal(svg.match(/<rect /g)?.length, 3);
  const heights = [...svg.matchAll(/height="([\d.]+)" fill/g)].map((m) => Number(m[1]));
  assert.equal(Math.max(...heights), heights[1], "the longest run is the tallest bar");
  assert.ok(Math.abs(heights[0]! * 4 - heights[1]!) < 0.5);
  assert.match(svg, /#bf8700/);
  assert.match(svg, /aria-label="Durations of the last 3 price-alert runs, longest 400 ms"/);
  assert.match(durationChart([]).toString(), /No finished price-alert run/);
});
