/**
 * Headless system Chromium for page tests, driven over the DevTools protocol by
 * `puppeteer-core` (which never downloads a browser of its own).
 *
 * ```ts
 * await withBrowser(async (browser) => {
 *   const page = await browser.newPage();
 *   assertEquals(await page.goto(`${site}/console`), 200);
 *   await page.type("#email", "ada@example.test");
 *   await page.click("button[type=submit]");
 *   await page.waitFor("#result", { text: "Sent" });
 *   await page.screenshot("console sends a message");
 *   assertEquals(page.consoleErrors(), []);
 * });
 * ```
 *
 * The browser is found through `CHROME_PATH`, else `chromium`, `chromium-browser`,
 * `google-chrome` or `google-chrome-stable` on `PATH`; without one the test fails with what
 * to install (it is never skipped). It talks to loopback only: every host name other than
 * `localhost` resolves to nothing, everything not on loopback goes to a proxy address
 * where nothing listens (so IP literals fail too), and the background services
 * (component updates, sync, safe browsing, metrics) are off. See docs/testing.md,
 * "Browser tests".
 *
 * @module
 */
import puppeteer, {
  type Browser,
  type ConsoleMessage,
  type HTTPRequest,
  type HTTPResponse,
  type Page,
} from "puppeteer-core";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export interface TestBrowser {
  /** The browser's process id, the leader of the process group `withBrowser` kills at the end. */
  readonly pid: number;
  /** A new tab (its own console log) with a 1280×800 viewport. */
  newPage(): Promise<TestPage>;
}

export interface TestPage {
  /** Navigates, waits for `load`; the main document's HTTP status (after redirects). */
  goto(url: string): Promise<number>;
  /** Replaces the document with `html` and waits for `load`. */
  setContent(html: string): Promise<void>;
  /** The first match's `innerText`; throws naming the selector when nothing matches. */
  innerText(selector: string): Promise<string>;
  exists(selector: string): Promise<boolean>;
  /**
   * Clicks the first match; when the click starts a navigation of the page (a link, a form
   * submission), waits until the new document has loaded.
   */
  click(selector: string): Promise<void>;
  /** Focuses the first match, clears it, and types `text` key by key. */
  type(selector: string, text: string): Promise<void>;
  /** Selects the `<option>` whose value is `value`; throws when there is none. */
  select(selector: string, value: string): Promise<void>;
  /**
   * Runs `fn` (a function, serialised, or an expression string) in the page and returns its
   * JSON-serialisable result. Works with JavaScript turned off for the page too.
   */
  evaluate<T, A extends unknown[] = unknown[]>(
    fn: string | ((...args: A) => T),
    ...args: A
  ): Promise<Awaited<T>>;
  /**
   * Waits until an element matches `selector` (and, with `text`, until one of the matches'
   * `innerText` contains it). Default timeout 10 s; the error says what was last seen.
   */
  waitFor(selector: string, opts?: { text?: string; timeoutMs?: number }): Promise<void>;
  /**
   * A full-page PNG named after `name` (sanitised) in the screenshot directory
   * (`TEST_OUTPUT_DIR`, else `.local/test-output/screenshots/`); returns its path and logs
   * `screenshot: <path> (<w>x<h>, <bytes> bytes)`.
   */
  screenshot(name: string): Promise<string>;
  url(): string;
  /** Console errors, CSP violations and uncaught page errors seen so far, oldest first. */
  consoleErrors(): string[];
  /** Turns the page's scripts off (or on again); applies from the next document loaded. */
  javaScriptEnabled(enabled: boolean): Promise<void>;
}

/** What these helpers touch of a DOM element in the page (the repository has no DOM lib). */
interface DomElement {
  innerText?: string;
  value?: string;
  textContent: string | null;
}

/** Where Chromium shows a navigation that failed (name not resolved, connection refused). */
const ERROR_PAGE = "chrome-error://";
const DEFAULT_TIMEOUT_MS = 10_000;
const NAVIGATION_TIMEOUT_MS = 15_000;
/** How long `click` watches for a navigation to start before deciding there is none. */
const NAVIGATION_GRACE_MS = 150;
const VIEWPORT = { width: 1280, height: 800 };
const CANDIDATES = ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"];
const INSTALL_HINT =
  "install Chromium from the OS packages (`sudo apt-get install -y chromium`; on Ubuntu " +
  "the chromium snap or Google Chrome) or set CHROME_PATH to a Chrome/Chromium binary";

/**
 * Flags on top of puppeteer's defaults (which already turn off background networking,
 * sync, component extensions, crash reporting, the first-run page and default apps).
 */
const LOOPBACK_ONLY_ARGS = [
  "--headless=new",
  // CI runs as root, where Chromium refuses to start with its sandbox.
  "--no-sandbox",
  "--disable-gpu",
  "--disable-dev-shm-usage",
  "--no-first-run",
  "--no-default-browser-check",
  // No name but localhost resolves, so nothing is looked up or reached by name.
  "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1, EXCLUDE localhost",
  // Whatever is not loopback (an IP literal, say) goes to a proxy on a port of 127.0.0.1
  // where nothing listens, so it fails on this machine; loopback bypasses proxies.
  "--proxy-server=http://127.0.0.1:9",
  "--proxy-bypass-list=127.0.0.1;localhost;[::1]",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--disable-domain-reliability",
  "--disable-client-side-phishing-detection",
  "--safebrowsing-disable-auto-update",
  "--no-pings",
  "--disable-features=Translate,OptimizationHints,MediaRouter,DialMediaRouteProvider," +
  "AutofillServerCommunication,CertificateTransparencyComponentUpdater,InterestFeedContentSuggestions," +
  "DnsOverHttps,NetworkTimeServiceQuerying,PrivacySandboxSettings4",
];

let cachedPath: string | undefined;

/**
 * The browser binary: `CHROME_PATH` (which must work, it is never second-guessed), else
 * the first candidate on `PATH` that answers `--version` (Ubuntu's `chromium-browser` can
 * be a shim asking for a snap, which does not).
 */
export async function findBrowser(): Promise<string> {
  if (cachedPath) return cachedPath;
  const configured = Deno.env.get("CHROME_PATH");
  if (configured) {
    const version = await browserVersion(configured);
    if (!version) {
      throw new Error(`CHROME_PATH=${configured} does not run as a browser; ${INSTALL_HINT}`);
    }
    return cachedPath = configured;
  }
  const dirs = (Deno.env.get("PATH") ?? "").split(":").filter((d) => d !== "");
  const tried: string[] = [];
  for (const name of CANDIDATES) {
    for (const dir of dirs) {
      const path = join(dir, name);
      if (!isExecutableFile(path)) continue;
      tried.push(path);
      if (await browserVersion(path)) return cachedPath = path;
    }
  }
  const found = tried.length > 0 ? ` (found but not working: ${tried.join(", ")})` : "";
  throw new Error(
    `No Chromium for the browser tests: none of ${CANDIDATES.join(", ")} is on PATH${found} ` +
      `and CHROME_PATH is not set; ${INSTALL_HINT}.`,
  );
}

function isExecutableFile(path: string): boolean {
  try {
    const info = Deno.statSync(path);
    return info.isFile && ((info.mode ?? 0o111) & 0o111) !== 0;
  } catch {
    return false;
  }
}

async function browserVersion(path: string): Promise<string | undefined> {
  try {
    const out = await new Deno.Command(path, {
      args: ["--version"],
      stdin: "null",
      stdout: "piped",
      stderr: "null",
      signal: AbortSignal.timeout(15_000),
    }).output();
    const text = new TextDecoder().decode(out.stdout).trim();
    // Not just any output: Ubuntu's snap shim answers with a sentence about the snap.
    return out.success && /^(Chromium|Google Chrome) \d/m.test(text) ? text : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Launches headless Chromium with a fresh profile, runs `fn`, and always closes it again:
 * the browser, then its whole process group (renderers, GPU and network services), then
 * the profile directory — also when `fn` throws.
 */
export async function withBrowser<T>(fn: (browser: TestBrowser) => Promise<T>): Promise<T> {
  const executablePath = await findBrowser();
  const userDataDir = await Deno.makeTempDir({ prefix: PROFILE_PREFIX });
  await Deno.writeTextFile(join(userDataDir, OWNER_FILE), String(Deno.pid));
  await sweepOrphanedProfiles(dirname(userDataDir)).catch(() => {});
  let browser: Browser | undefined;
  try {
    browser = await puppeteer.launch({
      executablePath,
      headless: true,
      // DevTools over a pipe rather than a port: when this process dies without closing the
      // browser (a test run killed mid-test), the pipe closes and Chromium exits with it.
      pipe: true,
      userDataDir,
      args: LOOPBACK_ONLY_ARGS,
      defaultViewport: VIEWPORT,
      // The test runner owns signals; `close()` below is the one way out.
      handleSIGINT: false,
      handleSIGTERM: false,
      handleSIGHUP: false,
      timeout: 30_000,
      protocolTimeout: 60_000,
    });
    const launched = browser;
    const pid = launched.process()?.pid;
    if (pid === undefined) throw new Error("Chromium started without a process id");
    return await fn({ pid, newPage: () => openPage(launched) });
  } finally {
    const pid = browser?.process()?.pid;
    if (browser) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        browser.close().catch(() => {}),
        new Promise((resolve) => timer = setTimeout(resolve, 5_000)),
      ]);
      clearTimeout(timer);
    }
    // puppeteer launches Chromium as the leader of its own process group; whatever of that
    // group is still alive (a renderer stuck in a test's loop, say) goes now.
    if (pid) await killGroup(pid);
    await Deno.remove(userDataDir, { recursive: true }).catch(() => {});
  }
}

const PROFILE_PREFIX = "market-test-chromium-";
/** In each profile directory: the id of the test process that made it. */
const OWNER_FILE = "market-test-owner.pid";

/**
 * Removes profile directories left behind by test processes that died before their cleanup
 * (their Chromium went with them: it is tied to the owner by its DevTools pipe).
 */
async function sweepOrphanedProfiles(tempDir: string): Promise<void> {
  if (!isDirectory("/proc")) return;
  for await (const entry of Deno.readDir(tempDir)) {
    if (!entry.isDirectory || !entry.name.startsWith(PROFILE_PREFIX)) continue;
    const dir = join(tempDir, entry.name);
    const owner = await Deno.readTextFile(join(dir, OWNER_FILE)).catch(() => "");
    if (!/^\d+$/.test(owner) || isDirectory(`/proc/${owner}`)) continue;
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

function isDirectory(path: string): boolean {
  try {
    return Deno.statSync(path).isDirectory;
  } catch {
    return false;
  }
}

async function killGroup(pid: number): Promise<void> {
  try {
    Deno.kill(-pid, "SIGKILL");
  } catch {
    // Already gone (ESRCH): the usual case after a clean close.
  }
  // SIGKILL is delivered asynchronously; wait (briefly) until nothing of the group runs, so
  // that a test finishing means its browser is gone.
  const deadline = Date.now() + 3_000;
  while (liveGroupMembers(pid).length > 0 && Date.now() < deadline) await sleep(20);
}

/**
 * Live processes (not zombies) in process group `pgid`, read from /proc; `[]` where there
 * is no /proc. Orphaned children end up as zombies of init, which are dead already.
 */
export function liveGroupMembers(pgid: number): number[] {
  const members: number[] = [];
  let entries: Iterable<Deno.DirEntry>;
  try {
    entries = Deno.readDirSync("/proc");
  } catch {
    return members;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const stat = Deno.readTextFileSync(`/proc/${entry.name}/stat`);
      // After the parenthesised command: state, ppid, pgrp, …
      const [state, , pgrp] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(pgrp) === pgid && state !== "Z" && state !== "X") members.push(Number(entry.name));
    } catch {
      // The process ended while we looked.
    }
  }
  return members;
}

async function openPage(browser: Browser): Promise<TestPage> {
  const page = await browser.newPage();
  page.setDefaultTimeout(DEFAULT_TIMEOUT_MS);
  page.setDefaultNavigationTimeout(NAVIGATION_TIMEOUT_MS);
  const errors: string[] = [];
  page.on("console", (message: ConsoleMessage) => {
    if (message.type() !== "error") return;
    const where = message.location().url;
    // Chromium asks every site for /favicon.ico on its own; a site without one is not a
    // page error.
    if (where?.endsWith("/favicon.ico") && message.text().startsWith("Failed to load resource")) {
      return;
    }
    errors.push(where ? `${message.text()} (${where})` : message.text());
  });
  page.on("pageerror", (error: unknown) => {
    errors.push(`page error: ${error instanceof Error ? error.message : String(error)}`);
  });
  return new PuppeteerPage(page, errors);
}

class PuppeteerPage implements TestPage {
  /** Whether the page's scripts run (see javaScriptEnabled). */
  private scripts = true;

  constructor(private readonly page: Page, private readonly errors: string[]) {}

  async goto(url: string): Promise<number> {
    let response: HTTPResponse | null;
    try {
      response = await this.page.goto(url, { waitUntil: "load" });
    } catch (error) {
      await this.settleErrorPage();
      throw error;
    }
    if (this.page.url().startsWith(ERROR_PAGE)) {
      // Resolved by the `load` of an earlier navigation's late error page (see
      // settleErrorPage); the navigation asked for is still on its way.
      await this.page.waitForNavigation({ waitUntil: "load" });
    }
    if (!response) {
      throw new Error(`goto(${url}): no HTTP response (a same-document navigation?)`);
    }
    return response.status();
  }

  /**
   * A failed navigation rejects before Chromium has committed and loaded its error page; that
   * page's `load` would then be taken for the next navigation's. Wait (briefly) until the
   * error page has loaded.
   */
  private async settleErrorPage(): Promise<void> {
    const deadline = Date.now() + 3_000;
    while (Date.now() < deadline) {
      if (this.page.url().startsWith(ERROR_PAGE)) {
        const state = await this.page.evaluate("document.readyState").catch(() => undefined);
        if (state === "complete") break;
      }
      await sleep(25);
    }
    // The lifecycle event follows the document's `complete` state.
    await sleep(50);
  }

  async setContent(html: string): Promise<void> {
    await this.page.setContent(html, { waitUntil: "load" });
  }

  async innerText(selector: string): Promise<string> {
    const element = await this.page.$(selector);
    if (!element) throw this.missing("innerText", selector);
    try {
      return await element.evaluate((e) => (e as unknown as DomElement).innerText ?? "");
    } finally {
      await element.dispose();
    }
  }

  async exists(selector: string): Promise<boolean> {
    const element = await this.page.$(selector);
    await element?.dispose();
    return element !== null;
  }

  async click(selector: string): Promise<void> {
    const element = await this.page.$(selector);
    if (!element) throw this.missing("click", selector);
    // Arm before clicking: a form submission's request can start before `click` returns.
    let started = false;
    const onRequest = (request: HTTPRequest) => {
      if (request.isNavigationRequest() && request.frame() === this.page.mainFrame()) {
        started = true;
      }
    };
    const abort = new AbortController();
    const navigation = this.page
      .waitForNavigation({ waitUntil: "load", signal: abort.signal })
      .then(() => undefined, (error: unknown) => error);
    this.page.on("request", onRequest);
    try {
      await element.click();
      // Let the page run what the click queued (a form submission is a queued task) before
      // the grace period starts. With scripts off no page timer runs: a round trip it is.
      const settle = this.scripts ? "new Promise((resolve) => setTimeout(resolve, 0))" : "0";
      await Promise.race([this.page.evaluate(settle).catch(() => {}), sleep(1_000)]);
      const deadline = Date.now() + NAVIGATION_GRACE_MS;
      while (!started && Date.now() < deadline) await sleep(10);
      if (!started) abort.abort();
      const failure = await navigation;
      if (started && failure !== undefined) {
        throw new Error(`click(${JSON.stringify(selector)}) started a navigation that failed`, {
          cause: failure,
        });
      }
    } finally {
      this.page.off("request", onRequest);
      abort.abort();
      await element.dispose();
    }
  }

  async type(selector: string, text: string): Promise<void> {
    const element = await this.page.$(selector);
    if (!element) throw this.missing("type", selector);
    try {
      await element.focus();
      // Clearing through the DOM works with scripts off too (DevTools evaluation is not a
      // page script); the keys that follow fire the usual input events.
      await element.evaluate((e) => {
        const field = e as unknown as DomElement;
        if ("value" in field) field.value = "";
        else field.textContent = "";
      });
      await element.type(text);
    } finally {
      await element.dispose();
    }
  }

  async select(selector: string, value: string): Promise<void> {
    if (!(await this.exists(selector))) throw this.missing("select", selector);
    // Checked first: selecting a value that is not there would deselect everything.
    const values = await this.page.$eval(
      selector,
      (e) => [...(e as unknown as { options: Iterable<DomElement> }).options].map((o) => o.value),
    );
    if (!values.includes(value)) {
      throw new Error(
        `select(${JSON.stringify(selector)}): no <option value=${JSON.stringify(value)}> ` +
          `(options: ${JSON.stringify(values)})`,
      );
    }
    await this.page.select(selector, value);
  }

  evaluate<T, A extends unknown[] = unknown[]>(
    fn: string | ((...args: A) => T),
    ...args: A
  ): Promise<Awaited<T>> {
    // puppeteer's own overloads are keyed to element handles; the page-level call is the
    // same at run time.
    const run = this.page.evaluate as unknown as (
      fn: string | ((...args: A) => T),
      ...args: A
    ) => Promise<Awaited<T>>;
    return run.call(this.page, fn, ...args);
  }

  async waitFor(selector: string, opts: { text?: string; timeoutMs?: number } = {}): Promise<void> {
    const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const deadline = Date.now() + timeoutMs;
    let seen: string[] = [];
    // Polled from here rather than with a script in the page, so that it works with the
    // page's scripts off as well.
    while (true) {
      try {
        seen = await this.page.$$eval(
          selector,
          (elements) => elements.map((e) => (e as unknown as DomElement).innerText ?? ""),
        );
      } catch {
        // Mid-navigation the document can vanish under the query; try again.
        seen = [];
      }
      const text = opts.text;
      if (seen.length > 0 && (text === undefined || seen.some((t) => t.includes(text)))) return;
      if (Date.now() >= deadline) break;
      await sleep(50);
    }
    const wanted = opts.text === undefined ? "" : ` with text ${JSON.stringify(opts.text)}`;
    const last = seen.length === 0
      ? "nothing matched"
      : `matches' text: ${JSON.stringify(seen.map((t) => t.slice(0, 200)))}`;
    throw new Error(
      `waitFor(${JSON.stringify(selector)})${wanted}: timed out after ${timeoutMs} ms on ` +
        `${this.page.url()}; ${last}`,
    );
  }

  async screenshot(name: string): Promise<string> {
    const dir = screenshotDir();
    await Deno.mkdir(dir, { recursive: true });
    const path = join(dir, `${sanitise(name)}.png`);
    const png = await this.page.screenshot({ fullPage: true, type: "png" });
    await Deno.writeFile(path, png);
    const { width, height } = pngSize(png);
    console.log(`screenshot: ${path} (${width}x${height}, ${png.byteLength} bytes)`);
    return path;
  }

  url(): string {
    return this.page.url();
  }

  consoleErrors(): string[] {
    return [...this.errors];
  }

  async javaScriptEnabled(enabled: boolean): Promise<void> {
    await this.page.setJavaScriptEnabled(enabled);
    this.scripts = enabled;
  }

  private missing(action: string, selector: string): Error {
    return new Error(
      `${action}(${JSON.stringify(selector)}): no element matches on ${this.page.url()}`,
    );
  }
}

/** `TEST_OUTPUT_DIR`, else `.local/test-output/screenshots/` at the repository root. */
export function screenshotDir(): string {
  return Deno.env.get("TEST_OUTPUT_DIR") ??
    fileURLToPath(new URL("../../.local/test-output/screenshots", import.meta.url));
}

/** A test name as a file name: letters, digits, `.`, `_` and `-` only, at most 120 chars. */
export function sanitise(name: string): string {
  const clean = name.normalize("NFKD").replace(/[^A-Za-z0-9._-]+/g, "_")
    .replace(/^[_.-]+|[_.-]+$/g, "").slice(0, 120);
  return clean === "" ? "screenshot" : clean;
}

/** Width and height from a PNG's IHDR chunk (bytes 16–23, big-endian). */
export function pngSize(png: Uint8Array): { width: number; height: number } {
  const view = new DataView(png.buffer, png.byteOffset, png.byteLength);
  return { width: view.getUint32(16), height: view.getUint32(20) };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
