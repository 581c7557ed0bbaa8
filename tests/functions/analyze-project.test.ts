import assert from "node:assert/strict";
import handler from "../../supabase/functions/analyze-project/handler.ts";
import type { Runtime } from "../../supabase/functions/_shared/platform/runtime.ts";
import { ANALYSIS_TOOL_NAME } from "../../supabase/functions/_shared/analysis/prompt.ts";
import type { AiMessageRequest, AiResponder } from "../support/ai_double.ts";
import {
  analysisSetup,
  FALLBACK,
  PRIMARY,
  projectPage,
  PUBLIC_ADDRESS,
  validAnalysis,
} from "../support/analysis.ts";
import { sqlTest } from "../support/db.ts";
import { assertRateLimited } from "../support/rate_limits.ts";
import { invoke } from "../support/runtime.ts";
import { createUser, type TestUser } from "../support/sql.ts";

const setup = await analysisSetup();
const { db, ai, pages, keys } = setup;
// Tests of this file share the doubles: each uses its own page paths and models' replies.
const local = await setup.runtime({}, { pageFetch: { allowLoopback: true } });

interface Answer {
  summary?: string;
  model?: string;
  url?: string;
  cached?: boolean;
  fetchedAt?: string;
  error?: { code: string; message: string; details?: Record<string, unknown> };
}

async function analyze(user: TestUser, url: string, runtime: Runtime = local) {
  return await invoke<Answer>(handler, runtime, {
    token: await keys.userToken(user),
    body: { url },
  });
}

function serve(path: string, body = projectPage()): string {
  pages.set(path, { body });
  return setup.localUrl(path);
}

/** The AI requests whose page text mentions `url`. */
function aiRequestsFor(url: string): AiMessageRequest[] {
  return ai.received.filter((request) => JSON.stringify(request.messages).includes(url));
}

async function ledgerOf(url: string) {
  const { rows } = await db.pool.query(
    `select user_id, outcome, model, attempts, input_tokens, output_tokens, duration_ms, final_url
       from public.project_analyses where url = $1 order by created_at`,
    [url],
  );
  return rows;
}

async function cacheOf(url: string) {
  const { rows } = await db.pool.query(
    "select model, analysis, fetched_at, expires_at from public.project_analysis_cache where url = $1",
    [url],
  );
  return rows[0];
}

/** Replies for the page at a URL (found in the prompt); every other page gets a valid analysis. */
const repliesFor = new Map<string, AiResponder>();
ai.respondWith((request) => {
  const prompt = JSON.stringify(request.messages);
  const reply = [...repliesFor].find(([url]) => prompt.includes(url))?.[1];
  return reply ? reply(request) : { toolInput: validAnalysis() };
});

sqlTest(
  "analyze-project: reads the page, asks the primary model with a forced tool call, records and caches the answer",
  async () => {
    const user = await createUser(db.pool);
    const url = serve("/happy");
    const res = await analyze(user, url);

    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual({ ...res.body, fetchedAt: undefined }, {
      ...validAnalysis(),
      model: PRIMARY,
      url,
      cached: false,
      fetchedAt: undefined,
    });
    const [request, ...others] = aiRequestsFor(url);
    assert.equal(others.length, 0);
    assert.equal(request!.model, PRIMARY);
    assert.deepEqual(request!.tool_choice, { type: "tool", name: ANALYSIS_TOOL_NAME });
    assert.equal(request!.tools?.length, 1);
    const prompt = JSON.stringify(request!.messages);
    assert.match(prompt, /Title: Acme Analytics/);
    assert.match(prompt, /1,200 paying customers/);
    assert.doesNotMatch(prompt, /do not send|color: red/);

    const [row, ...more] = await ledgerOf(url);
    assert.equal(more.length, 0);
    assert.equal(row.user_id, user.id);
    assert.equal(row.outcome, "succeeded");
    assert.equal(row.model, PRIMARY);
    assert.equal(row.attempts, 1);
    assert.ok(row.input_tokens > 0 && row.output_tokens > 0);
    assert.equal(row.final_url, url);
    const cached = await cacheOf(url);
    assert.equal(cached.model, PRIMARY);
    assert.deepEqual(cached.analysis, validAnalysis());
    assert.equal(cached.expires_at.getTime() - cached.fetched_at.getTime(), 24 * 3600 * 1000);
    assert.equal(cached.fetched_at.toISOString(), res.body.fetchedAt);
  },
);

sqlTest(
  "analyze-project: the same page again (any user, tracking parameters, fragment) comes from the cache",
  async () => {
    const [first, second] = [await createUser(db.pool), await createUser(db.pool)];
    const url = serve("/cached");
    const answer = await analyze(first, `${url}?utm_source=mail#pricing`);
    assert.equal(answer.status, 200);
    assert.equal(answer.body.url, url);
    const hourly = `analyze-project:hourly:${second.id}`;
    const hits = await db.pool.query("select key, hits from public.rate_limits where key = $1", [
      hourly,
    ]);

    const again = await analyze(second, url);
    assert.equal(again.status, 200);
    assert.deepEqual(again.body, { ...answer.body, cached: true });
    assert.equal(setup.requestsFor("/cached").length, 1, "the page is read once");
    assert.equal(aiRequestsFor(url).length, 1, "the model is asked once");
    assert.equal((await ledgerOf(url)).length, 1);
    const after = await db.pool.query("select hits from public.rate_limits where key = $1", [
      hourly,
    ]);
    assert.equal(hits.rowCount, 0);
    assert.equal(after.rowCount, 0, "a cached answer costs no hourly allowance");
    const burst = await db.pool.query("select hits from public.rate_limits where key = $1", [
      `analyze-project:${second.id}`,
    ]);
    assert.equal(burst.rows[0]?.hits, 1, "it counts against the per-minute limit of every call");
  },
);

sqlTest("analyze-project: a cached answer lapses after 24 hours", async () => {
  let now = new Date("2026-11-24T10:00:00Z");
  const runtime = await setup.runtime({}, {
    clock: () => now,
    pageFetch: { allowLoopback: true },
  });
  const user = await createUser(db.pool);
  const url = serve("/lapsing");
  assert.equal((await analyze(user, url, runtime)).body.cached, false);
  now = new Date("2026-11-25T09:59:00Z");
  assert.equal((await analyze(user, url, runtime)).body.cached, true);
  now = new Date("2026-11-25T10:00:01Z");
  const fresh = await analyze(user, url, runtime);
  assert.equal(fresh.body.cached, false);
  assert.equal(fresh.body.fetchedAt, now.toISOString());
  assert.equal(setup.requestsFor("/lapsing").length, 2);
  assert.equal((await cacheOf(url)).fetched_at.toISOString(), now.toISOString());
});

sqlTest("analyze-project: a busy primary (429) hands the request to the fallback", async () => {
  const user = await createUser(db.pool);
  const url = serve("/fallback");
  ai.failModel(PRIMARY, 429, 1, { retryAfterSeconds: 20 });
  const res = await analyze(user, url);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body.model, FALLBACK);
  assert.deepEqual(aiRequestsFor(url).map((r) => r.model), [FALLBACK]);
  const [row] = await ledgerOf(url);
  assert.equal(row.model, FALLBACK);
  assert.equal((await cacheOf(url)).model, FALLBACK);
});

sqlTest(
  "analyze-project: both models busy is 503 ai_unavailable with retryAfter; nothing is cached",
  async () => {
    const user = await createUser(db.pool);
    const url = serve("/busy");
    ai.failModel(PRIMARY, 429, 1, { retryAfterSeconds: 7 });
    ai.failModel(FALLBACK, 529);
    const res = await analyze(user, url);
    assert.equal(res.status, 503);
    assert.equal(res.body.error?.code, "ai_unavailable");
    assert.deepEqual(res.body.error?.details, { retryAfter: 7 });
    assert.equal(res.headers.get("retry-after"), "7");
    const [row] = await ledgerOf(url);
    assert.equal(row.outcome, "unavailable");
    assert.equal(row.input_tokens, 0);
    assert.equal(await cacheOf(url), undefined);

    // Failing without a retry-after (5xx on both): the default wait.
    const other = serve("/busy-5xx");
    ai.failModel(PRIMARY, 500);
    ai.failModel(FALLBACK, 503);
    const again = await analyze(user, other);
    assert.equal(again.status, 503);
    assert.deepEqual(again.body.error?.details, { retryAfter: 30 });
  },
);

sqlTest(
  "analyze-project: an invalid answer is asked for again with the problem, then used",
  async () => {
    const user = await createUser(db.pool);
    const url = serve("/retry");
    let calls = 0;
    repliesFor.set(url, () => {
      calls += 1;
      return calls === 1
        ? { toolInput: { ...validAnalysis(), confidence: 7, risks: "none" } }
        : { toolInput: validAnalysis({ category: "Analytics SaaS" }) };
    });
    const res = await analyze(user, url);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.cached, false);
    const [, second] = aiRequestsFor(url);
    const turns = second!.messages;
    assert.equal(turns.length, 3);
    assert.equal(turns[1]!.role, "assistant");
    const result = JSON.stringify(turns[2]!.content);
    assert.match(result, /"is_error":true/);
    assert.match(result, /confidence/);
    assert.match(result, /risks/);
    const [row] = await ledgerOf(url);
    assert.equal(row.attempts, 2);
    assert.equal(row.outcome, "succeeded");
    assert.equal((await cacheOf(url)).analysis.category, "Analytics SaaS");
  },
);

sqlTest(
  "analyze-project: two invalid answers are 502 ai_invalid_answer, recorded with their tokens and not cached",
  async () => {
    const user = await createUser(db.pool);
    const url = serve("/invalid");
    repliesFor.set(url, () => ({ text: "I think it is a nice project." }));
    const res = await analyze(user, url);
    assert.equal(res.status, 502);
    assert.equal(res.body.error?.code, "ai_invalid_answer");
    assert.equal(aiRequestsFor(url).length, 2);
    const [row] = await ledgerOf(url);
    assert.equal(row.outcome, "invalid_answer");
    assert.equal(row.attempts, 2);
    assert.equal(row.model, PRIMARY);
    assert.ok(row.output_tokens > 0);
    assert.equal(await cacheOf(url), undefined);
  },
);

sqlTest(
  "analyze-project: an answer holding a NUL or a lone surrogate is asked again, then 502, never a 500",
  async () => {
    const user = await createUser(db.pool);
    const fixed = serve("/nul-then-fixed");
    let calls = 0;
    repliesFor.set(fixed, () => {
      calls += 1;
      return calls === 1
        ? { toolInput: validAnalysis({ category: "SaaS\u0000" }) }
        : { toolInput: validAnalysis({ category: "Analytics SaaS" }) };
    });
    const corrected = await analyze(user, fixed);
    assert.equal(corrected.status, 200, JSON.stringify(corrected.body));
    const [, second] = aiRequestsFor(fixed);
    assert.match(JSON.stringify(second!.messages), /cannot be stored: category: Contains a NUL/);
    assert.equal((await cacheOf(fixed)).analysis.category, "Analytics SaaS");

    const broken = serve("/lone-surrogate");
    repliesFor.set(broken, () => ({ toolInput: validAnalysis({ risks: ["Churn \uD800"] }) }));
    const res = await analyze(user, broken);
    assert.equal(res.status, 502, JSON.stringify(res.body));
    assert.equal(res.body.error?.code, "ai_invalid_answer");
    const [row] = await ledgerOf(broken);
    assert.equal(row.outcome, "invalid_answer");
    assert.equal(await cacheOf(broken), undefined);
  },
);

sqlTest(
  "analyze-project: a refusal by the provider (404 model) is 502 without trying the fallback",
  async () => {
    const user = await createUser(db.pool);
    const url = serve("/rejected");
    ai.failModel(PRIMARY, 404);
    const res = await analyze(user, url);
    assert.equal(res.status, 502);
    assert.equal(res.body.error?.code, "upstream_rejected");
    assert.equal(aiRequestsFor(url).length, 0);
    assert.equal((await ledgerOf(url))[0].outcome, "rejected");
  },
);

sqlTest(
  "analyze-project: at most ANALYZE_RATE_PER_HOUR analyses per user, counted once each under concurrency",
  async () => {
    const runtime = await setup.runtime({ ANALYZE_RATE_PER_HOUR: "3" }, {
      pageFetch: { allowLoopback: true },
    });
    const user = await createUser(db.pool);
    const urls = [1, 2, 3, 4, 5, 6].map((n) => serve(`/limited-${n}`));
    const answers = await Promise.all(urls.map((url) => analyze(user, url, runtime)));
    const ok = answers.filter((a) => a.status === 200);
    const limited = answers.filter((a) => a.status === 429);
    assert.equal(ok.length, 3);
    assert.equal(limited.length, 3);
    for (const refused of limited) {
      assert.equal(refused.body.error?.code, "rate_limited");
      const retryAfter = Number(refused.headers.get("retry-after"));
      assert.ok(retryAfter >= 1 && retryAfter <= 3600);
      assert.equal(refused.body.error?.details?.retryAfter, retryAfter);
    }
    const limitedUrls = urls.filter((_, i) => answers[i]!.status === 429);
    for (const url of limitedUrls) {
      assert.equal(aiRequestsFor(url).length, 0);
      assert.equal(setup.requestsFor(new URL(url).pathname).length, 0);
    }
    // A cached page is still served to a user over the limit.
    const servedUrl = urls.find((_, i) => answers[i]!.status === 200)!;
    assert.equal((await analyze(user, servedUrl, runtime)).body.cached, true);
  },
);

sqlTest(
  "analyze-project: a public name is fetched from the address it resolved to, without the loopback flag",
  async () => {
    const runtime = await setup.runtime({}, { pageFetch: setup.publicSite(["shop.example"]) });
    const user = await createUser(db.pool);
    pages.set("/public", { body: projectPage("Shop Example") });
    const res = await analyze(user, "http://Shop.Example./public", runtime);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.url, "http://shop.example/public");
    assert.deepEqual(setup.connections.at(-1), {
      address: PUBLIC_ADDRESS,
      port: 80,
      hostname: "shop.example",
      tls: false,
    });
    assert.equal(setup.requestsFor("/public")[0]!.headers.get("host"), "shop.example");
  },
);

sqlTest(
  "analyze-project: unsafe addresses are refused with 400 invalid_input and a reason, before any connection",
  async () => {
    const strict = await setup.runtime({}, {
      pageFetch: {
        ...setup.publicSite(["shop.example"]),
        resolver: (host) =>
          Promise.resolve(
            host === "intranet.example"
              ? ["10.1.2.3"]
              : host === "mixed.example"
              ? [PUBLIC_ADDRESS, "169.254.169.254"]
              : [],
          ),
      },
    });
    const user = await createUser(db.pool);
    const localPage = serve("/refused");
    const connectionsBefore = setup.connections.length;
    const cases: Array<[string, string]> = [
      [localPage, "address"],
      ["http://169.254.169.254/latest/meta-data/", "address"],
      ["http://2130706433/", "address"],
      ["http://0177.0.0.1/", "address"],
      ["http://[::ffff:127.0.0.1]/", "address"],
      ["http://[fe80::1]/", "address"],
      ["http://100.64.0.1/", "address"],
      ["http://localhost/", "host"],
      ["http://shop.example:8080/", "port"],
      ["http://user:secret@shop.example/", "credentials"],
      ["http://intranet.example/", "address"],
      ["http://mixed.example/", "address"],
      ["http://nowhere.example/", "unresolvable"],
    ];
    for (const [url, reason] of cases) {
      const res = await analyze(user, url, strict);
      assert.equal(res.status, 400, `${url}: ${JSON.stringify(res.body)}`);
      assert.equal(res.body.error?.code, "invalid_input", url);
      assert.equal(res.body.error?.details?.reason, reason, url);
    }
    const scheme = await analyze(user, "ftp://shop.example/", strict);
    assert.equal(scheme.status, 400);
    assert.equal(scheme.body.error?.code, "invalid_input");

    assert.equal(setup.connections.length, connectionsBefore, "no connection was opened");
    assert.equal(setup.requestsFor("/refused").length, 0);
    const { rows } = await db.pool.query(
      "select count(*)::int as n from public.project_analyses where user_id = $1",
      [user.id],
    );
    assert.equal(rows[0].n, 0);
  },
);

sqlTest("analyze-project: pages that are not text, or have no text, are refused", async () => {
  const user = await createUser(db.pool);
  pages.set("/data.json", { body: "{}", contentType: "application/json" });
  const json = await analyze(user, setup.localUrl("/data.json"));
  assert.equal(json.status, 400);
  assert.equal(json.body.error?.details?.reason, "content_type");

  pages.set("/blank", { body: "<html><head><script>x()</script></head><body> </body></html>" });
  const blank = await analyze(user, setup.localUrl("/blank"));
  assert.equal(blank.status, 400);
  assert.equal(blank.body.error?.details?.reason, "empty_page");
  assert.equal(aiRequestsFor(setup.localUrl("/blank")).length, 0);

  const missing = await analyze(user, setup.localUrl("/missing"));
  assert.equal(missing.status, 502);
  assert.equal(missing.body.error?.code, "page_unreachable");
});

sqlTest(
  "analyze-project: signed-in users only; no key means 503 not_configured before any fetch",
  async () => {
    const url = serve("/access");
    const anon = await invoke<Answer>(handler, local, { token: keys.anonKey, body: { url } });
    assert.equal(anon.status, 403);
    const none = await invoke<Answer>(handler, local, { body: { url } });
    assert.equal(none.status, 401);

    const unconfigured = await setup.runtime({ AIMODEL_API_KEY: undefined }, {
      pageFetch: { allowLoopback: true },
    });
    const user = await createUser(db.pool);
    const res = await analyze(user, url, unconfigured);
    assert.equal(res.status, 503);
    assert.equal(res.body.error?.code, "not_configured");
    assert.equal(setup.requestsFor("/access").length, 0);
  },
);

sqlTest(
  "analyze-project: at most 30 calls a minute per user, cached or not; the 31st answers 429 before any fetch or model call",
  async () => {
    const user = await createUser(db.pool);
    const url = serve("/burst");
    await assertRateLimited(
      { limit: 30, windowSeconds: 60 },
      () => analyze(user, url),
      () => ai.received.length + setup.site.requests.length,
    );
    // One analysis, then 29 answers from the cache: the hourly allowance counted one.
    assert.equal(aiRequestsFor(url).length, 1);
    const { rows } = await db.pool.query("select hits from public.rate_limits where key = $1", [
      `analyze-project:hourly:${user.id}`,
    ]);
    assert.equal(rows[0]?.hits, 1);
    assert.equal((await analyze(await createUser(db.pool), url)).status, 200);
  },
);
