import assert from "node:assert/strict";
import { HttpDouble, type RecordedRequest } from "./http_double.ts";
import { dirname, join } from "node:path";
import { liveGroupMembers, sanitise, screenshotDir, withBrowser } from "./browser.ts";

/** A small site on 127.0.0.1: a page, a form and its result, a CSP-protected page, a 404. */
function site(): HttpDouble {
  return new HttpDouble({ handler: route });
}

function html(body: string, headers: Record<string, string> = {}, status = 200): Response {
  return new Response(`<!doctype html><meta charset="utf-8"><title>t</title>${body}`, {
    status,
    headers: { "content-type": "text/html; charset=utf-8", ...headers },
  });
}

function route(request: RecordedRequest): Response {
  const { method, path } = request;
  if (method === "GET" && path === "/") {
    return html(`<h1 id="title">Listings</h1><p class="n">3 listings</p>
      <p id="js">scripts off</p><script>document.getElementById("js").textContent = "scripts on"</script>`);
  }
  if (method === "GET" && path === "/form") {
    return html(`<form method="post" action="/submit">
      <input id="name" name="name" value="prefilled">
      <select id="plan" name="plan"><option value="free">Free</option><option value="pro">Pro</option></select>
      <button id="send" type="submit">Send</button></form>
      <button id="nothing" type="button">Does nothing</button>`);
  }
  if (method === "POST" && path === "/submit") {
    // Post/redirect/get, as the console's forms do.
    const form = request.body as { name?: string; plan?: string };
    const query = new URLSearchParams({ name: form.name ?? "", plan: form.plan ?? "" });
    return new Response(null, { status: 303, headers: { location: `/done?${query}` } });
  }
  if (method === "GET" && path === "/done") {
    const name = request.query.get("name") ?? "";
    const plan = request.query.get("plan") ?? "";
    return html(`<p id="result">Saved ${escapeHtml(name)} on ${escapeHtml(plan)}</p>`);
  }
  if (method === "GET" && path === "/csp") {
    return html(
      `<p id="x">csp</p><script>document.getElementById("x").textContent = "ran"</script>`,
      { "content-security-policy": "default-src 'self'; script-src 'none'" },
    );
  }
  return html("<p>Not found</p>", {}, 404);
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

Deno.test("browser: loads a loopback page, returns its status, reads and screenshots it", async () => {
  await using server = site();
  await withBrowser(async (browser) => {
    const page = await browser.newPage();
    assert.equal(await page.goto(`${server.url}/`), 200);
    assert.equal(page.url(), `${server.url}/`);
    assert.equal(await page.innerText("#title"), "Listings");
    assert.equal(await page.innerText("p.n"), "3 listings");
    assert.equal(await page.innerText("#js"), "scripts on");
    assert.equal(await page.exists("#title"), true);
    assert.equal(await page.exists("#absent"), false);
    assert.equal(await page.evaluate(() => document.title), "t");
    assert.equal(await page.evaluate((a: number, b: number) => a + b, 2, 3), 5);
    assert.equal(await page.evaluate("1 + 1"), 2);
    await assert.rejects(page.innerText("#absent"), /innerText\("#absent"\): no element matches/);
    await assert.rejects(page.click(".nope"), /click\("\.nope"\): no element matches/);

    const path = await page.screenshot("browser: loads a loopback page / ok?");
    assert.equal(path, join(screenshotDir(), "browser_loads_a_loopback_page_ok.png"));
    const png = await Deno.readFile(path);
    assert.deepEqual([...png.slice(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    const view = new DataView(png.buffer);
    assert.equal(view.getUint32(16), 1280);
    assert.ok(view.getUint32(20) >= 800);

    assert.equal(await page.goto(`${server.url}/missing`), 404);
    assert.deepEqual(page.consoleErrors().filter((e) => !e.includes("404")), []);
  });
});

declare const document: { title: string };

Deno.test("browser: a form filled in and submitted with a click lands on the result page", async () => {
  await using server = site();
  await withBrowser(async (browser) => {
    const page = await browser.newPage();
    assert.equal(await page.goto(`${server.url}/form`), 200);
    await page.type("#name", "Ada & <co>");
    await page.select("#plan", "pro");
    await assert.rejects(page.select("#plan", "gold"), /no <option value="gold">/);

    // A click that starts no navigation returns (after a short look) on the same page.
    await page.click("#nothing");
    assert.equal(page.url(), `${server.url}/form`);

    await page.click("#send");
    // No waitFor needed: click waited for the redirect's page to load.
    assert.equal(await page.innerText("#result"), "Saved Ada & <co> on pro");
    assert.match(page.url(), /\/done\?name=Ada/);
    const post = server.requests.find((r) => r.method === "POST");
    assert.deepEqual(post?.body, { name: "Ada & <co>", plan: "pro" });
    await page.waitFor("#result", { text: "on pro" });
    await assert.rejects(
      page.waitFor("#result", { text: "on free", timeoutMs: 200 }),
      /waitFor\("#result"\) with text "on free": timed out after 200 ms .*Saved Ada/,
    );
    assert.deepEqual(page.consoleErrors(), []);
  });
});

Deno.test("browser: with JavaScript off the page's scripts do not run, the driver still works", async () => {
  await using server = site();
  await withBrowser(async (browser) => {
    const page = await browser.newPage();
    await page.javaScriptEnabled(false);
    assert.equal(await page.goto(`${server.url}/`), 200);
    assert.equal(await page.innerText("#js"), "scripts off");
    await page.waitFor("#js", { text: "off" });

    // Forms still submit without scripts.
    assert.equal(await page.goto(`${server.url}/form`), 200);
    await page.type("#name", "Grace");
    await page.click("#send");
    assert.equal(await page.innerText("#result"), "Saved Grace on free");

    await page.javaScriptEnabled(true);
    assert.equal(await page.goto(`${server.url}/`), 200);
    assert.equal(await page.innerText("#js"), "scripts on");
  });
});

Deno.test("browser: console errors, CSP violations and page errors are collected", async () => {
  await using server = site();
  await withBrowser(async (browser) => {
    const page = await browser.newPage();
    assert.equal(await page.goto(`${server.url}/csp`), 200);
    assert.equal(await page.innerText("#x"), "csp");
    const errors = page.consoleErrors();
    assert.equal(errors.length, 1, JSON.stringify(errors));
    assert.match(errors[0]!, /Content Security Policy/);

    // A page of its own: setContent writes into the current document, which keeps its CSP.
    const other = await browser.newPage();
    await other.setContent(`<p id="p">x</p><script>console.error("boom from console");
      setTimeout(() => { throw new Error("boom uncaught") });</script>`);
    await other.waitFor("#p");
    const deadline = Date.now() + 5_000;
    while (other.consoleErrors().length < 2 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 20));
    }
    const [consoleError, pageError] = other.consoleErrors();
    assert.match(consoleError!, /boom from console/);
    assert.match(pageError!, /^page error: .*boom uncaught/);
    assert.equal(page.consoleErrors().length, 1);
  });
});

Deno.test("browser: nothing but loopback is reachable, by name or by address", async () => {
  await using server = site();
  await withBrowser(async (browser) => {
    const page = await browser.newPage();
    // A name is never looked up (the resolver maps it to nothing), so the failure is decided
    // on this machine; an address goes to the dead proxy port on 127.0.0.1.
    await assert.rejects(
      page.goto("http://example.com/"),
      /net::ERR_NAME_NOT_RESOLVED|net::ERR_PROXY_CONNECTION_FAILED/,
    );
    // 192.0.2.1 is TEST-NET-1: without the proxy this would hang until the timeout.
    const started = Date.now();
    await assert.rejects(page.goto("http://192.0.2.1/"), /net::ERR_PROXY_CONNECTION_FAILED/);
    assert.ok(Date.now() - started < 5_000);

    // From a loopback page, fetches to other hosts fail too, and loopback still works.
    assert.equal(await page.goto(`${server.url}/`), 200);
    const results = await page.evaluate(async (own: string) => {
      const attempt = (url: string) =>
        fetch(url).then((r) => `status ${r.status}`, (e: Error) => `failed: ${e.message}`);
      return [
        await attempt("https://market.example.com/x"),
        await attempt("http://10.0.0.1/x"),
        await attempt(`${own}/missing`),
      ];
    }, server.url);
    assert.match(results[0]!, /^failed/);
    assert.match(results[1]!, /^failed/);
    assert.equal(results[2], "status 404");
  });
});

Deno.test("browser: withBrowser closes Chromium's whole process group when the test throws", async () => {
  let pid = 0;
  await assert.rejects(
    withBrowser(async (browser) => {
      pid = browser.pid;
      const page = await browser.newPage();
      await page.setContent("<p>hi</p>");
      // Chromium leads its own group: browser, zygotes, renderer, network service.
      assert.ok(liveGroupMembers(pid).length > 1, `group ${pid}: ${liveGroupMembers(pid)}`);
      throw new Error("the test failed");
    }),
    /the test failed/,
  );
  assert.deepEqual(liveGroupMembers(pid), []);
});

Deno.test("browser: Chromium exits when the test process dies without closing it", async () => {
  // A test run killed mid-test never reaches withBrowser's cleanup; the browser must not
  // outlive it. The child prints its own id and the browser's, then exits on the spot.
  const module = new URL("./browser.ts", import.meta.url).href;
  const child = await new Deno.Command(Deno.execPath(), {
    args: [
      "eval",
      `import { withBrowser } from ${JSON.stringify(module)};
       await withBrowser(async (browser) => {
         await (await browser.newPage()).setContent("<p>hi</p>");
         console.log(Deno.pid, browser.pid);
         Deno.exit(7);
       });`,
    ],
    stdin: "null",
    stdout: "piped",
    stderr: "inherit",
  }).output();
  assert.equal(child.code, 7);
  const [owner, pid] = new TextDecoder().decode(child.stdout).trim().split(" ").map(Number);
  assert.ok(owner! > 0 && pid! > 0);
  const deadline = Date.now() + 10_000;
  while (liveGroupMembers(pid!).length > 0 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
  }
  const left = liveGroupMembers(pid!);
  // Not ours to keep running if the assertion fails: clean up before reporting.
  if (left.length > 0) Deno.kill(-pid!, "SIGKILL");
  assert.deepEqual(left, []);

  // Its profile directory outlived it; the next launch removes it.
  const probe = await Deno.makeTempDir();
  await Deno.remove(probe);
  const tmp = dirname(probe);
  const orphans = () =>
    [...Deno.readDirSync(tmp)].filter((e) => {
      if (!e.name.startsWith("market-test-chromium-")) return false;
      try {
        return Deno.readTextFileSync(join(tmp, e.name, "market-test-owner.pid")) === String(owner);
      } catch {
        return false;
      }
    });
  assert.equal(orphans().length, 1);
  await withBrowser(() => Promise.resolve());
  assert.deepEqual(orphans(), []);
});

Deno.test("browser: screenshot names are sanitised file names", () => {
  assert.equal(sanitise("console / deals: cancel → refund?"), "console_deals_cancel_refund");
  assert.equal(sanitise("../../etc/passwd"), "etc_passwd");
  assert.equal(sanitise("???"), "screenshot");
  assert.equal(sanitise("x".repeat(300)).length, 120);
});
