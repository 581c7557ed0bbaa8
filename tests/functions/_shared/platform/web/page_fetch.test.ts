// fetchPage() end to end. The only packets sent go to servers on 127.0.0.1 that
// these tests start: other names resolve through stub resolvers, and every
// connection to a "public" address is redirected by an injected connector to
// the local server (or refused before any connector is called).
import assert from "node:assert/strict";
import dgram from "node:dgram";
import { HttpError } from "../../../../../supabase/functions/_shared/platform/errors.ts";
import type {
  Connection,
  Connector,
  ConnectTarget,
} from "../../../../../supabase/functions/_shared/platform/web/http1.ts";
import { closeQuietly } from "../../../../../supabase/functions/_shared/platform/web/http1.ts";
import {
  DEFAULT_PAGE_FETCH,
  fetchPage,
  type PageFetchOptions,
} from "../../../../../supabase/functions/_shared/platform/web/page_fetch.ts";
import {
  dnsResolver,
  type Resolver,
} from "../../../../../supabase/functions/_shared/platform/web/resolver.ts";

const PAGE = "<html><head><title>Shop</title></head><body>Hello</body></html>";

/** The local site: each path answers one way. */
function site(req: Request): Response {
  const url = new URL(req.url);
  const hop = /^\/hop\/(\d+)$/.exec(url.pathname);
  if (hop) {
    const n = Number(hop[1]);
    if (n === 0) return html(PAGE);
    const status = [301, 302, 303, 307, 308][n % 5]!;
    const location = n === 2
      ? `http://${req.headers.get("host")}/hop/1`
      : n === 1
      ? "0"
      : `/hop/${n - 1}`;
    return new Response(null, { status, headers: { location } });
  }
  switch (url.pathname) {
    case "/page":
      return html(PAGE);
    case "/plain":
      return new Response("just text", { headers: { "content-type": "TEXT/Plain" } });
    case "/latin1":
      return bytes([0x63, 0x61, 0x66, 0xe9], 'text/plain; charset="ISO-8859-1"');
    case "/unknown-charset":
      return bytes(new TextEncoder().encode("café"), "text/html; charset=x-no-such-thing");
    case "/bom":
      return bytes(
        [0xef, 0xbb, 0xbf, ...new TextEncoder().encode("café")],
        "text/plain; charset=iso-8859-1",
      );
    case "/big":
      return new Response("é".repeat(3000), { headers: { "content-type": "text/plain" } });
    case "/gzip": {
      const body = new Blob([PAGE]).stream().pipeThrough(new CompressionStream("gzip"));
      return new Response(body, {
        headers: { "content-type": "text/html", "content-encoding": "gzip" },
      });
    }
    case "/pdf":
      return bytes([0x25, 0x50, 0x44, 0x46], "application/pdf");
    case "/untyped":
      return new Response(new TextEncoder().encode(PAGE));
    case "/to":
      return new Response(null, { status: 302, headers: { location: url.searchParams.get("l")! } });
    case "/no-location":
      return new Response(null, { status: 302 });
    case "/bad-location":
      return new Response(null, { status: 301, headers: { location: "http://[oops/" } });
    case "/error":
      return new Response("boom", { status: 500 });
    default:
      return new Response("not here", { status: 404 });
  }
}

function html(text: string): Response {
  return new Response(text, { headers: { "content-type": "text/html; charset=utf-8" } });
}

function bytes(body: Iterable<number>, type: string): Response {
  return new Response(new Uint8Array([...body]), { headers: { "content-type": type } });
}

interface Local {
  origin: string;
  port: number;
  /** Every request the server received: path and headers. */
  seen: { path: string; headers: Headers }[];
}

/** Runs `fn` with the local site on 127.0.0.1 (an ephemeral port), stopped afterwards. */
async function withSite(fn: (local: Local) => Promise<void>): Promise<void> {
  const seen: Local["seen"] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
    const url = new URL(req.url);
    seen.push({ path: url.pathname + url.search, headers: req.headers });
    return site(req);
  });
  try {
    await fn({ origin: `http://127.0.0.1:${server.addr.port}`, port: server.addr.port, seen });
  } finally {
    await server.shutdown();
  }
}

/** A resolver answering from `records`, recording every name asked. */
function stubResolver(records: Record<string, string[]>): Resolver & { asked: string[] } {
  const asked: string[] = [];
  return Object.assign((hostname: string) => {
    asked.push(hostname);
    return Promise.resolve(records[hostname] ?? []);
  }, { asked });
}

/** A connector recording each target and connecting to the local server on `port` instead. */
function redirectingConnector(port: number): Connector & { targets: ConnectTarget[] } {
  const targets: ConnectTarget[] = [];
  return Object.assign((target: ConnectTarget) => {
    targets.push(target);
    return Deno.connect({ hostname: "127.0.0.1", port });
  }, { targets });
}

/** A connector that must never be called: it records the call and fails. */
function forbiddenConnector(): Connector & { targets: ConnectTarget[] } {
  const targets: ConnectTarget[] = [];
  return Object.assign((target: ConnectTarget) => {
    targets.push(target);
    return Promise.reject(new Error(`Must not connect to ${target.address}`));
  }, { targets });
}

/** A resolver that must never be called (literal addresses are not looked up). */
const noLookup: Resolver = (hostname) => Promise.reject(new Error(`Must not resolve ${hostname}`));

const LOCAL: Partial<PageFetchOptions> = { allowLoopback: true, resolver: noLookup };

async function assertRefused(
  pending: Promise<unknown>,
  reason: string,
  extra: Record<string, unknown> = {},
): Promise<void> {
  await assert.rejects(pending, (error: unknown) => {
    assert.ok(error instanceof HttpError, String(error));
    assert.equal(error.status, 400, error.message);
    assert.equal(error.code, "invalid_input");
    const details = error.details as Record<string, unknown>;
    assert.equal(details.reason, reason, error.message);
    for (const [key, value] of Object.entries(extra)) assert.equal(details[key], value, key);
    return true;
  });
}

async function assertUnreachable(
  pending: Promise<unknown>,
  reason: string,
  status?: number,
): Promise<void> {
  await assert.rejects(pending, (error: unknown) => {
    assert.ok(error instanceof HttpError, String(error));
    assert.equal(error.status, 502, error.message);
    assert.equal(error.code, "page_unreachable");
    assert.match(error.message, /^Cannot read the page at this URL: /);
    const details = error.details as Record<string, unknown>;
    assert.equal(details.reason, reason, error.message);
    assert.equal(details.status, status);
    return true;
  });
}

Deno.test("DEFAULT_PAGE_FETCH: 5 s, 1 MiB, 3 redirects, no loopback", () => {
  assert.equal(DEFAULT_PAGE_FETCH.allowLoopback, false);
  assert.equal(DEFAULT_PAGE_FETCH.timeoutMs, 5000);
  assert.equal(DEFAULT_PAGE_FETCH.maxBytes, 1048576);
  assert.equal(DEFAULT_PAGE_FETCH.maxRedirects, 3);
  assert.equal(DEFAULT_PAGE_FETCH.userAgent, "MarketplaceAnalyzer/1.0 (+project analysis)");
});

Deno.test("fetchPage() reads a local page with allowLoopback", async () => {
  await withSite(async ({ origin, port, seen }) => {
    const page = await fetchPage(`${origin}/page?utm_source=mail#top`, LOCAL);
    assert.deepEqual(page, {
      url: `${origin}/page`,
      contentType: "text/html",
      text: PAGE,
      truncated: false,
      redirects: [],
    });
    assert.equal(seen.length, 1);
    assert.equal(seen[0]!.path, "/page");
    const headers = seen[0]!.headers;
    assert.equal(headers.get("host"), `127.0.0.1:${port}`);
    assert.equal(headers.get("user-agent"), DEFAULT_PAGE_FETCH.userAgent);
    assert.equal(headers.get("accept"), "text/html,text/plain;q=0.9");
    assert.equal(headers.get("accept-encoding"), "gzip, deflate");
    assert.equal(headers.get("connection"), "close");
  });
});

Deno.test("fetchPage() decodes gzip and the charset; a BOM wins, an unknown label is utf-8", async () => {
  await withSite(async ({ origin }) => {
    assert.equal((await fetchPage(`${origin}/gzip`, LOCAL)).text, PAGE);
    const plain = await fetchPage(`${origin}/plain`, LOCAL);
    assert.equal(plain.contentType, "text/plain");
    assert.equal(plain.text, "just text");
    assert.equal((await fetchPage(`${origin}/latin1`, LOCAL)).text, "café");
    assert.equal((await fetchPage(`${origin}/bom`, LOCAL)).text, "café");
    assert.equal((await fetchPage(`${origin}/unknown-charset`, LOCAL)).text, "café");
  });
});

Deno.test("fetchPage() cuts the body at maxBytes, never inside a character", async () => {
  await withSite(async ({ origin }) => {
    const page = await fetchPage(`${origin}/big`, { ...LOCAL, maxBytes: 1001 });
    assert.equal(page.truncated, true);
    assert.equal(page.text, "é".repeat(500)); // 1000 bytes; the cut half character is dropped
  });
});

Deno.test("fetchPage() follows up to maxRedirects relative and absolute redirects", async () => {
  await withSite(async ({ origin, seen }) => {
    const page = await fetchPage(`${origin}/hop/3`, LOCAL);
    assert.equal(page.url, `${origin}/hop/0`);
    assert.equal(page.text, PAGE);
    assert.deepEqual(page.redirects, [`${origin}/hop/2`, `${origin}/hop/1`, `${origin}/hop/0`]);
    assert.deepEqual(seen.map((s) => s.path), ["/hop/3", "/hop/2", "/hop/1", "/hop/0"]);

    seen.length = 0;
    await assertRefused(fetchPage(`${origin}/hop/4`, LOCAL), "too_many_redirects");
    assert.deepEqual(seen.map((s) => s.path), ["/hop/4", "/hop/3", "/hop/2", "/hop/1"]);

    seen.length = 0;
    await assertRefused(
      fetchPage(`${origin}/hop/1`, { ...LOCAL, maxRedirects: 0 }),
      "too_many_redirects",
    );
    assert.equal(seen.length, 1);
  });
});

Deno.test("fetchPage() refuses a redirect without a usable Location", async () => {
  await withSite(async ({ origin }) => {
    await assertRefused(fetchPage(`${origin}/no-location`, LOCAL), "redirect");
    await assertRefused(fetchPage(`${origin}/bad-location`, LOCAL), "redirect");
  });
});

Deno.test("fetchPage() refuses content types other than text/html and text/plain", async () => {
  await withSite(async ({ origin }) => {
    await assertRefused(fetchPage(`${origin}/pdf`, LOCAL), "content_type");
    await assertRefused(fetchPage(`${origin}/untyped`, LOCAL), "content_type");
  });
});

Deno.test("fetchPage() answers 502 http_status for other statuses", async () => {
  await withSite(async ({ origin }) => {
    await assertUnreachable(fetchPage(`${origin}/missing`, LOCAL), "http_status", 404);
    await assertUnreachable(fetchPage(`${origin}/error`, LOCAL), "http_status", 500);
  });
});

Deno.test("fetchPage() refuses the local server without allowLoopback; it gets no request", async () => {
  await withSite(async ({ origin, port, seen }) => {
    const connect = forbiddenConnector();
    await assertRefused(fetchPage(`${origin}/page`, { connect }), "address", {
      address: "127.0.0.1",
      range: "loopback",
    });
    await assertRefused(fetchPage(`http://localhost:${port}/page`, { connect }), "host");
    await assertRefused(fetchPage(`http://[::1]:${port}/page`, { connect }), "address");
    await assertRefused(fetchPage(`http://2130706433:${port}/page`, { connect }), "address", {
      range: "loopback",
    });
    assert.deepEqual(connect.targets, []);
    assert.equal(seen.length, 0);
  });
});

Deno.test("fetchPage() refuses names that resolve to special addresses, before connecting", async () => {
  const resolver = stubResolver({
    "internal.example": ["10.1.2.3"],
    "meta.example": ["169.254.169.254"],
    "mixed.example": ["93.184.216.34", "192.168.0.10"],
    "v6meta.example": ["fd00:ec2::254"],
    "mapped.example": ["2606:4700::1111", "::ffff:7f00:1"],
    "cgnat.example": ["100.64.0.7"],
  });
  const connect = forbiddenConnector();
  const cases: [string, string, string][] = [
    ["internal.example", "10.1.2.3", "private"],
    ["meta.example", "169.254.169.254", "metadata"],
    ["mixed.example", "192.168.0.10", "private"],
    ["v6meta.example", "fd00:ec2::254", "metadata"],
    ["mapped.example", "::ffff:127.0.0.1", "loopback"],
    ["cgnat.example", "100.64.0.7", "cgnat"],
  ];
  for (const [host, address, range] of cases) {
    // The range is named; the address the name resolved to is not.
    await assertRefused(fetchPage(`https://${host}/`, { resolver, connect }), "address", {
      address: undefined,
      range,
    });
    await assert.rejects(
      fetchPage(`https://${host}/`, { resolver, connect }),
      (error: unknown) => error instanceof HttpError && !error.message.includes(address),
    );
  }
  await assertRefused(fetchPage("https://nowhere.example/", { resolver, connect }), "unresolvable");
  assert.deepEqual(resolver.asked, [
    ...cases.flatMap(([host]) => [host, host]),
    "nowhere.example",
  ]);
  assert.deepEqual(connect.targets, []);
});

Deno.test("fetchPage() refuses by form before resolving or connecting", async () => {
  const resolver = stubResolver({});
  const connect = forbiddenConnector();
  const cases: [string, string][] = [
    ["ftp://shop.example/", "scheme"],
    ["http://user:secret@shop.example/", "credentials"],
    ["http://shop.example:8080/", "port"],
    ["http://metadata.google.internal/computeMetadata/v1/", "host"],
    ["http://printer.local/", "host"],
    ["http://0x7f.1/", "address"],
    ["http://[fe80::1]/", "address"],
  ];
  for (const [url, reason] of cases) {
    await assertRefused(fetchPage(url, { resolver, connect }), reason, { url: new URL(url).href });
  }
  assert.deepEqual(resolver.asked, []);
  assert.deepEqual(connect.targets, []);
});

Deno.test("fetchPage() connects to the checked address, with the URL's name for TLS", async () => {
  await withSite(async ({ port, seen }) => {
    const resolver = stubResolver({ "shop.example": ["2606:2800:220:1::1", "93.184.216.34"] });
    const connect = redirectingConnector(port);
    const page = await fetchPage("https://Shop.Example./page?utm_medium=x", { resolver, connect });
    assert.equal(page.url, "https://shop.example/page");
    assert.equal(page.text, PAGE);
    assert.deepEqual(resolver.asked, ["shop.example"]);
    assert.deepEqual(connect.targets, [
      { address: "93.184.216.34", port: 443, hostname: "shop.example", tls: true },
    ]);
    assert.equal(seen[0]!.headers.get("host"), "shop.example");
    assert.equal(seen[0]!.path, "/page");
  });
});

Deno.test("fetchPage() checks every redirect hop before connecting to it", async () => {
  await withSite(async ({ port, seen }) => {
    const resolver = stubResolver({
      "shop.example": ["93.184.216.34"],
      "loop.example": ["127.0.0.1"],
    });
    const cases: [string, string, Record<string, unknown>][] = [
      ["http://10.0.0.1/", "address", { range: "private", url: "http://10.0.0.1/" }],
      ["http://169.254.169.254/latest/meta-data/", "address", { range: "metadata" }],
      ["http://[::ffff:169.254.169.254]/", "address", { range: "metadata" }],
      // A name's refusal names the range, not the address it resolved to.
      ["http://loop.example/admin", "address", { range: "loopback", address: undefined }],
      ["http://2130706433/", "address", { range: "loopback" }],
      ["http://shop.example:6379/", "port", {}],
      ["file:///etc/passwd", "scheme", {}],
      ["http://user:pw@shop.example/", "credentials", {}],
      ["http://metadata.google.internal/", "host", {}],
    ];
    for (const [location, reason, extra] of cases) {
      const connect = redirectingConnector(port);
      const start = `http://shop.example/to?l=${encodeURIComponent(location)}`;
      await assertRefused(fetchPage(start, { resolver, connect }), reason, extra);
      assert.equal(connect.targets.length, 1, `only the first hop connected (${location})`);
    }
    assert.equal(seen.length, cases.length, "the local server saw only the first hops");
    assert.ok(resolver.asked.includes("loop.example"));
  });
});

Deno.test("fetchPage() answers 502 timeout when the server never answers, and hangs up", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  try {
    const accepted = listener.accept();
    const pending = fetchPage(`http://127.0.0.1:${listener.addr.port}/`, {
      ...LOCAL,
      timeoutMs: 200,
    });
    const conn = await accepted;
    await assertUnreachable(pending, "timeout");
    for await (const _ of conn.readable) {
      // the request; the loop ends when the fetcher has closed the connection
    }
    closeQuietly(conn);
  } finally {
    listener.close();
  }
});

Deno.test("fetchPage() counts DNS and connecting against the same deadline", async () => {
  const connect = forbiddenConnector();
  const hanging: Resolver = () => new Promise(() => {});
  await assertUnreachable(
    fetchPage("https://slow.example/", { resolver: hanging, connect, timeoutMs: 100 }),
    "timeout",
  );
  assert.deepEqual(connect.targets, []);

  // A connection that opens only after the deadline is closed at once.
  let deliver = (_: Connection) => {};
  const late: Connector = () => new Promise((resolve) => deliver = resolve);
  const resolver = stubResolver({ "late.example": ["93.184.216.34"] });
  await assertUnreachable(
    fetchPage("https://late.example/", { resolver, connect: late, timeoutMs: 100 }),
    "timeout",
  );
  const closed = new Promise<void>((resolve) =>
    deliver({ readable: new ReadableStream(), writable: new WritableStream(), close: resolve })
  );
  await closed;
});

Deno.test("fetchPage() answers 502 for DNS, connection, TLS and protocol failures", async () => {
  const failing: Resolver = () => Promise.reject(new Error("SERVFAIL"));
  await assertUnreachable(
    fetchPage("https://shop.example/", { resolver: failing, connect: forbiddenConnector() }),
    "dns",
  );

  const closedPort = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = closedPort.addr.port;
  closedPort.close();
  await assertUnreachable(fetchPage(`http://127.0.0.1:${port}/`, LOCAL), "connect");

  await withSite(async ({ port }) => {
    // TLS to a plain HTTP server: the handshake fails.
    await assertUnreachable(fetchPage(`https://127.0.0.1:${port}/page`, LOCAL), "tls");
  });

  const garbage = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  try {
    const served = garbage.accept().then(async (conn) => {
      await readRequest(conn);
      await conn.write(new TextEncoder().encode("SSH-2.0-OpenSSH_9.6\r\n\r\n"));
      conn.close();
    });
    await assertUnreachable(
      fetchPage(`http://127.0.0.1:${garbage.addr.port}/`, LOCAL),
      "malformed_response",
    );
    await served;
  } finally {
    garbage.close();
  }
});

/** Reads a request head from `conn`. */
async function readRequest(conn: Deno.Conn): Promise<void> {
  const buffer = new Uint8Array(4096);
  let text = "";
  while (!text.includes("\r\n\r\n")) {
    const n = await conn.read(buffer);
    if (n === null) return;
    text += new TextDecoder().decode(buffer.subarray(0, n));
  }
}

/** A DNS server on 127.0.0.1 answering A queries from `records` (NXDOMAIN for other names). */
async function withLocalDns(
  records: Record<string, [number, number, number, number]>,
  fn: (resolver: Resolver) => Promise<void>,
): Promise<void> {
  const socket = dgram.createSocket("udp4");
  socket.on("message", (query: Uint8Array, peer: { port: number; address: string }) => {
    const labels: string[] = [];
    let at = 12;
    while (query[at]) {
      labels.push(new TextDecoder().decode(query.subarray(at + 1, at + 1 + query[at]!)));
      at += query[at]! + 1;
    }
    const questionEnd = at + 5;
    const type = (query[at + 1]! << 8) | query[at + 2]!;
    const address = records[labels.join(".").toLowerCase()];
    const answer = address && type === 1
      ? [0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, ...address]
      : [];
    const flags = [0x81, address ? 0x80 : 0x83]; // a response; NOERROR or NXDOMAIN
    const counts = [0, 1, 0, answer.length ? 1 : 0, 0, 0, 0, 0];
    const reply = new Uint8Array([
      ...query.subarray(0, 2),
      ...flags,
      ...counts,
      ...query.subarray(12, questionEnd),
      ...answer,
    ]);
    socket.send(reply, peer.port, peer.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, "127.0.0.1", resolve));
  try {
    await fn(dnsResolver({ ipAddr: "127.0.0.1", port: socket.address().port }));
  } finally {
    await new Promise<void>((resolve) => socket.close(resolve));
  }
}

Deno.test("dnsResolver() answers A and AAAA, [] for an unknown name; fetchPage() judges them", async () => {
  await withLocalDns(
    { "site.test": [127, 0, 0, 1], "public.test": [93, 184, 216, 34] },
    async (resolver) => {
      assert.deepEqual(await resolver("public.test"), ["93.184.216.34"]);
      assert.deepEqual(await resolver("nx.test"), []);
      await withSite(async ({ port }) => {
        const page = await fetchPage(`http://site.test:${port}/page`, {
          resolver,
          allowLoopback: true,
        });
        assert.equal(page.text, PAGE);
        const connect = forbiddenConnector();
        await assertRefused(fetchPage("http://site.test/page", { resolver, connect }), "address", {
          range: "loopback",
        });
        await assertRefused(fetchPage("http://nx.test/", { resolver, connect }), "unresolvable");
        assert.deepEqual(connect.targets, []);
      });
    },
  );
});
