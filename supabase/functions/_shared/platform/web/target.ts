/**
 * Which URLs the page fetcher may fetch, decided before any connection is
 * opened: the URL's form ({@linkcode checkUrl}), then every address its host
 * resolves to ({@linkcode pickAddress}). Also the normalized URL that is
 * both the fetch target and the analysis cache key ({@linkcode normalizeUrl}).
 *
 * @module
 */
import { HttpError } from "../errors.ts";
import { type AddressRange, formatIp, parseIp, rangeOf } from "./ip.ts";

/** Why a URL is refused (`details.reason` of the 400). */
export type RefusalReason =
  | "scheme"
  | "credentials"
  | "port"
  | "host"
  | "address"
  | "unresolvable"
  | "too_many_redirects"
  | "redirect"
  | "content_type";

/** Who may be fetched: `allowLoopback` is for tests only (a local server on any port). */
export interface TargetPolicy {
  allowLoopback: boolean;
}

/**
 * A 400 `invalid_input` "Cannot analyze this URL: <message>" with details
 * `{ reason, url, address?, range? }`; `address` only for a literal address
 * in the URL itself, never for one a name resolved to.
 */
export function refusal(
  reason: RefusalReason,
  url: string,
  message: string,
  extra: { address?: string; range?: AddressRange } = {},
): HttpError {
  return new HttpError(400, "invalid_input", `Cannot analyze this URL: ${message}`, {
    reason,
    url,
    ...extra,
  });
}

/** Query parameters that only track the visitor; dropped from the cache key and the fetch. */
const TRACKING_PARAM = /^(utm_.*|fbclid|gclid|mc_eid)$/i;

/**
 * The cache-key form of a URL: lower-case scheme and host, no trailing dot,
 * no default port, no fragment, path "/" when empty, tracking parameters
 * (`utm_*`, `fbclid`, `gclid`, `mc_eid`) dropped and the others sorted by name
 * (stable; each pair kept byte for byte). Throws a refusal ("scheme",
 * "credentials" or "host") for a non-http(s) URL, `user:pass@` or an empty host.
 */
export function normalizeUrl(input: string | URL): URL {
  let url: URL;
  try {
    url = new URL(input);
  } catch {
    throw refusal("host", String(input), `"${input}" is not a URL`);
  }
  checkForm(url);
  url.hash = "";
  const host = url.hostname.replace(/\.+$/, "");
  if (host === "") throw refusal("host", url.href, "it has no host name");
  if (host !== url.hostname) url.hostname = host;
  url.search = normalizeQuery(url.search);
  return url;
}

/**
 * Checks a URL's form before any lookup: http or https, no credentials, a
 * host that is not a local name (`localhost`, `*.localhost`, `*.local`,
 * `*.internal`, `*.home.arpa`, single-label names) and, if a literal address,
 * a public one; then port 80 or 443 (explicit or default). With
 * `allowLoopback` (tests only) a loopback literal, `localhost` and any port
 * pass. Answers the host to resolve (or the canonical literal address), the
 * port and whether to speak TLS.
 */
export function checkUrl(
  url: URL,
  policy: TargetPolicy,
): { host: string; literal: string | null; port: number; tls: boolean } {
  checkForm(url);
  const host = url.hostname.replace(/\.+$/, "").toLowerCase();
  const ip = parseIp(host);
  let literal: string | null = null;
  if (ip) {
    literal = formatIp(ip);
    const range = rangeOf(ip);
    if (range !== null && !(policy.allowLoopback && range === "loopback")) {
      throw refusal("address", url.href, `${literal} is ${RANGE_WORDS[range]} address`, {
        address: literal,
        range,
      });
    }
  } else if (host.startsWith("[") || host.includes(":")) {
    throw refusal("host", url.href, `"${host}" is not a valid address`);
  } else if (isLocalName(host) && !(policy.allowLoopback && host === "localhost")) {
    throw refusal("host", url.href, `"${host}" is a local name, not a public one`);
  }
  const tls = url.protocol === "https:";
  const port = url.port === "" ? (tls ? 443 : 80) : Number(url.port);
  if (!STANDARD_PORTS.has(port) && !policy.allowLoopback) {
    throw refusal("port", url.href, `port ${port} is not allowed (only 80 and 443)`);
  }
  return { host: literal ?? host, literal, port, tls };
}

/**
 * Judges the addresses a host resolved to: refuses "unresolvable" when there
 * is none and "address" when ANY is not public (with `allowLoopback`,
 * loopback passes); on a port other than 80/443 only loopback (with
 * `allowLoopback`) may pass ("port"). Answers the address to connect to: the
 * first IPv4 one, else the first, in canonical form.
 */
export function pickAddress(
  url: URL,
  addresses: readonly string[],
  port: number,
  policy: TargetPolicy,
): string {
  const host = url.hostname;
  if (addresses.length === 0) {
    throw refusal("unresolvable", url.href, `"${host}" has no address`);
  }
  // A refusal names the rule a name broke (the range), never the address it
  // resolved to: the answer would map the inside of the network for whoever
  // asks (which name points where). A literal address is the caller's own
  // text and is named by checkUrl.
  const parsed = addresses.map((address) => {
    const ip = parseIp(address);
    if (!ip) {
      throw refusal("address", url.href, `"${host}" does not resolve to a valid address`);
    }
    const range = rangeOf(ip);
    const canonical = formatIp(ip);
    if (range !== null && !(policy.allowLoopback && range === "loopback")) {
      throw refusal(
        "address",
        url.href,
        `"${host}" resolves to ${RANGE_WORDS[range]} address; only public addresses may be fetched`,
        { range },
      );
    }
    return { ip, canonical, loopback: range === "loopback" };
  });
  if (!STANDARD_PORTS.has(port) && !parsed.every((a) => a.loopback)) {
    throw refusal("port", url.href, `port ${port} is not allowed (only 80 and 443)`);
  }
  return (parsed.find((a) => a.ip.version === 4) ?? parsed[0]!).canonical;
}

const STANDARD_PORTS = new Set([80, 443]);

/** Scheme and credentials, the checks every entry point repeats. */
function checkForm(url: URL): void {
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw refusal("scheme", url.href, `scheme "${url.protocol.slice(0, -1)}" is not http or https`);
  }
  if (url.username !== "" || url.password !== "") {
    throw refusal("credentials", url.href, "it carries a user name or password");
  }
}

/** Names that resolve inside a network, never to a public site. */
function isLocalName(host: string): boolean {
  return !host.includes(".") ||
    /(^|\.)(localhost|local|internal|home\.arpa)$/.test(host);
}

/** `range` in words for a message, with its article. */
const RANGE_WORDS: Record<AddressRange, string> = {
  unspecified: "an unspecified",
  loopback: "a loopback",
  private: "a private",
  cgnat: "a carrier-grade NAT",
  link_local: "a link-local",
  metadata: "a cloud metadata",
  multicast: "a multicast",
  broadcast: "a broadcast",
  reserved: "a reserved",
  documentation: "a documentation",
  benchmarking: "a benchmarking",
  translation: "a translation",
  unique_local: "a unique-local",
  site_local: "a site-local",
  teredo: "a Teredo",
  discard: "a discard-only",
  this_network: `a "this network"`,
};

/** The query without tracking parameters, the rest sorted by decoded name (stable). */
function normalizeQuery(search: string): string {
  const pairs = search.slice(1).split("&").filter((pair) => pair !== "")
    .map((pair) => ({ pair, name: decodeName(pair.split("=", 1)[0]!) }))
    .filter(({ name }) => !TRACKING_PARAM.test(name));
  pairs.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return pairs.length === 0 ? "" : `?${pairs.map(({ pair }) => pair).join("&")}`;
}

function decodeName(raw: string): string {
  try {
    return decodeURIComponent(raw.replaceAll("+", " "));
  } catch {
    return raw;
  }
}
