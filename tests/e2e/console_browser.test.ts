/**
 * The local console in headless Chromium, against the real local stack
 * (`local/start.ts` as a subprocess, on a fresh database it migrates and
 * seeds) with the payment processor double behind it: every page opens and
 * is screenshotted; a function is called through the Functions form; a
 * ledger event is replayed (changing nothing) and an event the ledger never
 * saw is replayed by id (applied); jobs are run with JavaScript off; the
 * seeded deal's timeline shows what the form did; an access request and a
 * conversation (made through their RPCs as signed-in seed users when the
 * seed has none) are listed and opened. No page logs an error or violates
 * its CSP.
 *
 * @module
 */
import assert from "node:assert/strict";
import pg from "pg";
import { FUNCTION_NAMES } from "../../shared/function_names.ts";
import { withBrowser } from "../support/browser.ts";
import { createEmptyDatabase } from "../support/db.ts";
import { startLocalStack } from "../support/local_stack.ts";
import { PayprocDouble, TEST_SECRET_KEY } from "../support/payproc_double.ts";

const WEBHOOK_SECRET = "whsec_console_browser_test";
/** The deal `supabase/seed.sql` creates. */
const SEEDED_DEAL = "20000000-0000-4000-8000-000000000001";
/** Seed users (`supabase/seed.sql`): free@ buys, starter@ sells "Invoice Generator". */
const FREE = "00000000-0000-4000-8000-000000000002";
const STARTER = "00000000-0000-4000-8000-000000000003";
const PRO = "00000000-0000-4000-8000-000000000004";
const INVOICE_GENERATOR = "10000000-0000-4000-8000-000000000005";

/**
 * Runs `sql` on `client` as signed-in user `userId` (the JWT claims and role
 * PostgREST sets) and commits, as supabase-js would; answers the first value.
 */
async function asUser<T = unknown>(
  client: pg.Client,
  userId: string,
  sql: string,
  params: unknown[] = [],
): Promise<T> {
  await client.query("begin");
  try {
    await client.query("select set_config('request.jwt.claims', $1, true)", [
      JSON.stringify({ role: "authenticated", sub: userId, aud: "authenticated" }),
    ]);
    await client.query("set local role authenticated");
    const { rows } = await client.query(sql, params);
    await client.query("commit");
    return Object.values(rows[0] ?? {})[0] as T;
  } catch (error) {
    await client.query("rollback");
    throw error;
  }
}

/**
 * An access request and a conversation for the console to show, beside
 * the seed's: starter@'s "Invoice Generator" made confidential; free@
 * accepts the NDA and asks, starter@ approves (which opens their
 * conversation), they exchange messages and free@ reports it; pro@ asks too
 * and waits. Answers the request's and the conversation's ids (the same
 * ones when a run made them before: every call here answers the open one).
 */
async function ensureAccessAndConversations(
  dbUrl: string,
): Promise<{ request: string; conversation: string }> {
  const client = new pg.Client({ connectionString: dbUrl });
  await client.connect();
  try {
    await client.query("update public.listings set access_mode = 'nda' where id = $1", [
      INVOICE_GENERATOR,
    ]);
    const ask = "select public.request_listing_access($1, public.current_nda_version(), $2)";
    const request = await asUser<string>(client, FREE, ask, [
      INVOICE_GENERATOR,
      "We run two <b>SaaS</b> tools and would like to see the numbers.",
    ]);
    await asUser(client, PRO, ask, [INVOICE_GENERATOR, "Interested, cash buyer."]);
    const { rows: [pending] } = await client.query<{ status: string }>(
      "select status from public.listing_access_requests where id = $1",
      [request],
    );
    if (pending?.status === "pending") {
      await asUser(client, STARTER, "select public.decide_listing_access($1, true, $2)", [
        request,
        "Welcome — happy to answer questions.",
      ]);
    }
    const conversation = await asUser<string>(
      client,
      FREE,
      "select public.start_conversation($1)",
      [INVOICE_GENERATOR],
    );
    const send = "select public.send_message($1, $2)";
    await asUser(client, FREE, send, [
      conversation,
      "Hello <script>alert(1)</script>\nWhat is the churn?",
    ]);
    await asUser(client, STARTER, send, [conversation, "About 3% a month."]);
    await asUser(client, FREE, "select public.mark_conversation_read($1)", [conversation]);
    await asUser(client, STARTER, send, [conversation, "Anything else?"]);
    await asUser(client, FREE, "select public.report_conversation($1, $2)", [
      conversation,
      "Asked me to pay off-platform",
    ]);
    return { request, conversation };
  } finally {
    await client.end();
  }
}

Deno.test({
  name: "console: every page in headless Chromium; call, replay and run now through the forms",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const double = new PayprocDouble();
    const dbUrl = await createEmptyDatabase("console");
    const stack = await startLocalStack({
      SUPABASE_DB_URL: dbUrl,
      PORT: "0",
      LOCAL_STATE_DIR: await Deno.makeTempDir(),
      PAYPROC_SECRET_KEY: TEST_SECRET_KEY,
      PAYPROC_API_BASE: double.url,
      PAYPROC_WEBHOOK_SECRET: WEBHOOK_SECRET,
    });
    try {
      // One event delivered as the processor would (the ledger holds it), one never delivered.
      const delivered = double.event(
        "customer.created",
        double.addCustomer({ email: "a@example.test" }),
      );
      const missed = double.event(
        "customer.created",
        double.addCustomer({ email: "b@example.test" }),
      );
      const signed = await double.signedWebhook(delivered, WEBHOOK_SECRET);
      const first = await fetch(`${stack.url}/functions/v1/payproc-webhook`, {
        method: "POST",
        headers: signed.headers,
        body: signed.body,
      });
      assert.equal(first.status, 200);
      assert.equal((await first.json()).outcome, "ignored");
      const made = await ensureAccessAndConversations(dbUrl);

      const base = `${stack.url}/_local`;
      await withBrowser(async (browser) => {
        const page = await browser.newPage();

        assert.equal(await page.goto(`${base}/`), 200);
        for (
          const title of [
            "Functions",
            "Requests",
            "Webhooks",
            "Jobs",
            "Deals",
            "Access",
            "Conversations",
            "Mail",
          ]
        ) {
          assert.ok(await page.exists(`header a[href="/_local/${title.toLowerCase()}"]`), title);
        }
        await page.screenshot("console-index");

        // Functions: the OpenAPI document's list, then one function called through its form.
        assert.equal(await page.goto(`${base}/functions`), 200);
        const listed = await page.evaluate(() =>
          // deno-lint-ignore no-explicit-any
          (globalThis as any).document.querySelectorAll('td a[href^="/_local/functions/"]').length
        );
        assert.equal(listed, FUNCTION_NAMES.length, "every function");
        await page.screenshot("console-functions");
        await page.click('a[href="/_local/functions/cancel-deal"]');
        assert.match(await page.innerText("pre"), /curl -X POST .*\/functions\/v1\/cancel-deal/);
        await page.select('select[name="caller"]', "admin");
        await page.type(
          'textarea[name="body"]',
          JSON.stringify({ dealId: SEEDED_DEAL, reason: "Cancelled <from> the console" }),
        );
        await page.click('form[action$="/call"] button[type="submit"]');
        await page.waitFor('[role="status"]', { text: "200" });
        const called = await page.innerText('[role="status"]');
        assert.match(called, /Called cancel-deal as an admin/);
        assert.match(called, /"status": "cancelled"/);
        await page.screenshot("console-function-called");

        // Requests: that call, newest first; its log lines one click away.
        assert.equal(await page.goto(`${base}/requests`), 200);
        assert.match(await page.innerText("tbody tr"), /cancel-deal\s+200/);
        await page.screenshot("console-requests");
        await page.click("tbody tr a");
        assert.match(await page.innerText("main"), /"msg": "request"/);
        assert.match(await page.innerText("main"), /"function": "cancel-deal"/);
        await page.screenshot("console-request-lines");

        // Webhooks: replaying a recorded event changes nothing and says so.
        assert.equal(await page.goto(`${base}/webhooks`), 200);
        assert.match(await page.innerText("tbody"), new RegExp(delivered.id));
        await page.click(`form:has(input[value="${delivered.id}"]) button`);
        await page.waitFor('[role="status"]');
        assert.match(await page.innerText('[role="status"]'), /nothing changed/);
        await page.screenshot("console-webhook-replayed");
        // ...and one the ledger never saw is applied through the handler.
        await page.type('input[name="id"][required]', missed.id);
        await page.click("form:has(input[required]) button");
        await page.waitFor('[role="status"]');
        assert.match(await page.innerText('[role="status"]'), /the ledger did not hold it/);
        assert.match(await page.innerText("tbody"), new RegExp(missed.id));
        await page.screenshot("console-webhooks");

        // Jobs, with JavaScript off: run now is a plain form.
        await page.javaScriptEnabled(false);
        assert.equal(await page.goto(`${base}/jobs`), 200);
        for (const job of ["update-views-count", "run-price-alerts"]) {
          await page.click(`form[action="/_local/jobs/${job}/run"] button`);
          await page.waitFor('[role="status"]', { text: `Ran ${job} now: 200` });
        }
        assert.match(await page.innerText("main"), /update-views-count/);
        assert.ok(
          await page.exists('svg[aria-label^="Durations of the last 1 price-alert run"] rect'),
        );
        await page.screenshot("console-jobs");
        await page.javaScriptEnabled(true);

        // Deals: the seeded deal is cancelled now, and its timeline says why.
        assert.equal(await page.goto(`${base}/deals?state=cancelled`), 200);
        await page.screenshot("console-deals");
        await page.click(`a[href="/_local/deals/${SEEDED_DEAL}"]`);
        const timeline = await page.innerText("main");
        assert.match(timeline, /pending_payment → cancelled \(cancelled\)/);
        assert.match(timeline, /Cancelled <from> the console/);
        await page.screenshot("console-deal-timeline");

        // Access: requests by status; one request's NDA, decision and notices.
        assert.equal(await page.goto(`${base}/access`), 200);
        assert.match(await page.innerText(".cards"), /approved/);
        assert.match(await page.innerText("tbody"), /free@example\.com/);
        await page.screenshot("console-access");
        await page.click('a.card[href="/_local/access?status=approved"]');
        assert.match(await page.innerText("main"), /Showing\s+approved/);
        assert.ok(await page.exists(`tbody a[href="/_local/access/${made.request}"]`));
        assert.equal(await page.goto(`${base}/access/${made.request}`), 200);
        const access = await page.innerText("main");
        assert.match(access, /Approved by the seller \(starter@example\.com\)/);
        assert.match(access, /Requested by the buyer \(free@example\.com\)/);
        assert.match(access, /Notice listing_access_requested to the seller/);
        await page.screenshot("console-access-request");

        // Conversations: open, closed and reported; one conversation's messages, escaped.
        assert.equal(await page.goto(`${base}/conversations`), 200);
        assert.match(await page.innerText(".cards"), /reported/);
        await page.screenshot("console-conversations");
        assert.ok(await page.exists(`tbody a[href="/_local/conversations/${made.conversation}"]`));
        assert.equal(await page.goto(`${base}/conversations/${made.conversation}`), 200);
        const thread = await page.innerText("main");
        assert.match(thread, /Message from the buyer \(free@example\.com\)/);
        assert.match(thread, /Hello <script>alert\(1\)<\/script>/, "markup shown as text");
        assert.match(thread, /The buyer's read mark: read up to here/);
        assert.match(thread, /Reported by the buyer/);
        assert.equal(await page.exists("main script"), false);
        await page.screenshot("console-conversation");

        assert.equal(await page.goto(`${base}/mail`), 200);
        await page.screenshot("console-mail");

        assert.deepEqual(page.consoleErrors(), []);
      });
    } finally {
      await stack.stop();
      await double.close();
    }
  },
});
