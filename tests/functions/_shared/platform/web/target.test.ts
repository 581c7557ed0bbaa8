// URLs and addresses here are only parsed and judged, never contacted.
import assert from "node:assert/strict";
import { HttpError } from "../../../../../supabase/functions/_shared/platform/errors.ts";
import {
  checkUrl,
  normalizeUrl,
  pickAddress,
  refusal,
  type RefusalReason,
} from "../../../../../supabase/functions/_shared/platform/web/target.ts";

const STRICT = { allowLoopback: false };
const TESTING = { allowLoopback: true };

/** Asserts `fn` throws the 400 refusal with `reason` (and `extra` details, when given). */
function assertRefused(
  fn: () => unknown,
  reason: RefusalReason,
  extra: Record<string, unknown> = {},
): void {
  assert.throws(fn, (error: unknown) => {
    assert.ok(error instanceof HttpError, String(error));
    assert.equal(error.status, 400);
    assert.equal(error.code, "invalid_input");
    assert.match(error.message, /^Cannot analyze this URL: /);
    const details = error.details as Record<string, unknown>;
    assert.equal(details.reason, reason, error.message);
    for (const [key, value] of Object.entries(extra)) assert.equal(details[key], value, key);
    return true;
  });
}

Deno.test("refusal() is a 400 invalid_input with reason, url and address details", () => {
  const error = refusal("address", "http://10.0.0.1/", "10.0.0.1 is a private address", {
    address: "10.0.0.1",
    range: "private",
  });
  assert.equal(error.status, 400);
  assert.equal(error.code, "invalid_input");
  assert.equal(error.message, "Cannot analyze this URL: 10.0.0.1 is a private address");
  assert.deepEqual(error.details, {
    reason: "address",
    url: "http://10.0.0.1/",
    address: "10.0.0.1",
    range: "private",
  });
});

Deno.test("normalizeUrl() gives the cache-key form", () => {
  const cases: [string, string][] = [
    ["HTTP://Example.COM", "http://example.com/"],
    ["https://example.com.:443/a#section", "https://example.com/a"],
    ["http://example.com:80/a/b?", "http://example.com/a/b"],
    ["http://example.com:8080/", "http://example.com:8080/"],
    [
      "https://shop.example/p?utm_source=x&b=2&UTM_Medium=y&a=1&fbclid=z",
      "https://shop.example/p?a=1&b=2",
    ],
    ["https://shop.example/?gclid=1&mc_eid=2&utm_campaign=3", "https://shop.example/"],
    ["https://shop.example/?b=1&a=2&a=1&c", "https://shop.example/?a=2&a=1&b=1&c"], // stable
    ["https://shop.example/?q=a%20b&p=x+y", "https://shop.example/?p=x+y&q=a%20b"], // bytes kept
    ["https://shop.example/?utm=1&utmost=2", "https://shop.example/?utm=1&utmost=2"],
    ["https://shop.example/?%61=1&b=2", "https://shop.example/?%61=1&b=2"],
    ["https://shop.example/?&&a=1&&", "https://shop.example/?a=1"],
  ];
  for (const [input, expected] of cases) assert.equal(normalizeUrl(input).href, expected, input);
  const url = new URL("http://example.com/#x");
  assert.equal(normalizeUrl(url).href, "http://example.com/");
  assert.equal(url.href, "http://example.com/#x", "the argument is not changed");
});

Deno.test("normalizeUrl() refuses other schemes, credentials, an empty host and non-URLs", () => {
  assertRefused(() => normalizeUrl("ftp://example.com/"), "scheme");
  assertRefused(() => normalizeUrl("file:///etc/passwd"), "scheme");
  assertRefused(() => normalizeUrl("javascript:alert(1)"), "scheme");
  assertRefused(() => normalizeUrl("gopher://127.0.0.1:6379/_"), "scheme");
  assertRefused(() => normalizeUrl("http://user:pass@example.com/"), "credentials");
  assertRefused(() => normalizeUrl("http://user@example.com/"), "credentials");
  assertRefused(() => normalizeUrl("http://./"), "host");
  assertRefused(() => normalizeUrl("not a url"), "host");
});

Deno.test("new URL() rewrites legacy IPv4 and mapped IPv6 hosts, which checkUrl() still refuses", () => {
  const cases: [string, string, string][] = [
    ["http://0177.0.0.1/", "127.0.0.1", "127.0.0.1"],
    ["http://2130706433/", "127.0.0.1", "127.0.0.1"],
    ["http://0x7f.1/", "127.0.0.1", "127.0.0.1"],
    ["http://[::ffff:127.0.0.1]/", "[::ffff:7f00:1]", "::ffff:127.0.0.1"],
  ];
  for (const [input, hostname, address] of cases) {
    const url = new URL(input);
    assert.equal(url.hostname, hostname, input);
    assertRefused(() => checkUrl(url, STRICT), "address", { address, range: "loopback" });
  }
});

Deno.test("checkUrl() refuses local names, literal special addresses and other ports", () => {
  const refused: [string, RefusalReason, Record<string, unknown>?][] = [
    ["ftp://example.com/", "scheme"],
    ["http://u:p@example.com/", "credentials"],
    ["http://localhost/", "host"],
    ["http://LOCALHOST./", "host"],
    ["http://app.localhost/", "host"],
    ["http://printer.local/", "host"],
    ["http://metadata.google.internal/computeMetadata/v1/", "host"],
    ["http://db.internal/", "host"],
    ["http://router.home.arpa/", "host"],
    ["http://intranet/", "host"],
    ["http://10.0.0.1/", "address", { address: "10.0.0.1", range: "private" }],
    ["http://169.254.169.254/latest/meta-data/", "address", { range: "metadata" }],
    ["http://100.100.100.200/", "address", { range: "metadata" }],
    ["http://[fd00:ec2::254]/", "address", { address: "fd00:ec2::254", range: "metadata" }],
    ["http://[::1]/", "address", { range: "loopback" }],
    ["http://[fe80::1]/", "address", { range: "link_local" }],
    ["http://0.0.0.0/", "address", { range: "unspecified" }],
    ["http://100.64.0.1/", "address", { range: "cgnat" }],
    ["http://224.0.0.1/", "address", { range: "multicast" }],
    ["http://example.com:8080/", "port"],
    ["https://example.com:22/", "port"],
    ["http://93.184.216.34:6379/", "port"],
  ];
  for (const [input, reason, extra] of refused) {
    assertRefused(() => checkUrl(new URL(input), STRICT), reason, {
      url: new URL(input).href,
      ...extra,
    });
  }
});

Deno.test("checkUrl() answers host, port and TLS of an allowed URL", () => {
  assert.deepEqual(checkUrl(new URL("https://Shop.Example/x"), STRICT), {
    host: "shop.example",
    literal: null,
    port: 443,
    tls: true,
  });
  assert.deepEqual(checkUrl(new URL("http://shop.example.:443/"), STRICT), {
    host: "shop.example",
    literal: null,
    port: 443,
    tls: false,
  });
  assert.deepEqual(checkUrl(new URL("http://93.184.216.34/"), STRICT), {
    host: "93.184.216.34",
    literal: "93.184.216.34",
    port: 80,
    tls: false,
  });
  assert.deepEqual(checkUrl(new URL("https://[2606:4700:0::1111]/"), STRICT), {
    host: "2606:4700::1111",
    literal: "2606:4700::1111",
    port: 443,
    tls: true,
  });
});

Deno.test("checkUrl() with allowLoopback lets loopback and any port through, nothing else", () => {
  assert.deepEqual(checkUrl(new URL("http://127.0.0.1:5555/"), TESTING), {
    host: "127.0.0.1",
    literal: "127.0.0.1",
    port: 5555,
    tls: false,
  });
  assert.equal(checkUrl(new URL("http://localhost:5555/"), TESTING).host, "localhost");
  assert.equal(checkUrl(new URL("http://[::1]/"), TESTING).literal, "::1");
  assertRefused(() => checkUrl(new URL("http://10.0.0.1/"), TESTING), "address");
  assertRefused(() => checkUrl(new URL("http://169.254.169.254/"), TESTING), "address");
  assertRefused(() => checkUrl(new URL("http://printer.local/"), TESTING), "host");
});

Deno.test("pickAddress() refuses when ANY address is not public, and no address at all", () => {
  const url = new URL("https://shop.example/");
  assertRefused(() => pickAddress(url, [], 443, STRICT), "unresolvable", { url: url.href });
  const refused: [string[], string, string][] = [
    [["10.1.2.3"], "10.1.2.3", "private"],
    [["93.184.216.34", "192.168.1.1"], "192.168.1.1", "private"],
    [["93.184.216.34", "2606:4700::1111", "::1"], "::1", "loopback"],
    [["169.254.169.254"], "169.254.169.254", "metadata"],
    [["fd00:ec2::254"], "fd00:ec2::254", "metadata"],
    [["::ffff:7f00:1"], "::ffff:127.0.0.1", "loopback"],
    [["127.0.0.1"], "127.0.0.1", "loopback"],
    [["100.64.1.1"], "100.64.1.1", "cgnat"],
  ];
  for (const [addresses, address, range] of refused) {
    // The rule is named (the range); the address the name resolved to is not,
    // in the message or the details.
    assertRefused(() => pickAddress(url, addresses, 443, STRICT), "address", {
      address: undefined,
      range,
    });
    assert.throws(
      () => pickAddress(url, addresses, 443, STRICT),
      (error: unknown) => {
        assert.ok(error instanceof HttpError);
        assert.ok(!error.message.includes(address), error.message);
        assert.ok(!JSON.stringify(error.details).includes(address), JSON.stringify(error.details));
        assert.match(error.message, /only public addresses may be fetched$/);
        return true;
      },
    );
  }
  assertRefused(() => pickAddress(url, ["not-an-ip"], 443, STRICT), "address");
  assert.throws(
    () => pickAddress(url, ["not-an-ip"], 443, STRICT),
    (error: unknown) => error instanceof HttpError && !error.message.includes("not-an-ip"),
  );
});

Deno.test("pickAddress() answers the first IPv4 address, else the first, canonical", () => {
  const url = new URL("https://shop.example/");
  assert.equal(
    pickAddress(url, ["2606:4700::1111", "93.184.216.34", "1.1.1.1"], 443, STRICT),
    "93.184.216.34",
  );
  assert.equal(
    pickAddress(url, ["2606:4700:0:0::1111", "2001:4860::8888"], 443, STRICT),
    "2606:4700::1111",
  );
  assert.equal(pickAddress(url, ["127.0.0.1"], 443, TESTING), "127.0.0.1");
});

Deno.test("pickAddress() lets other ports reach loopback only, and only with allowLoopback", () => {
  const url = new URL("http://shop.example:8080/");
  assert.equal(pickAddress(url, ["127.0.0.1", "::1"], 8080, TESTING), "127.0.0.1");
  assertRefused(() => pickAddress(url, ["93.184.216.34"], 8080, TESTING), "port");
  assertRefused(() => pickAddress(url, ["127.0.0.1", "93.184.216.34"], 8080, TESTING), "port");
  assertRefused(() => pickAddress(url, ["93.184.216.34"], 8080, STRICT), "port");
  assertRefused(() => pickAddress(url, ["127.0.0.1"], 8080, STRICT), "address");
});
