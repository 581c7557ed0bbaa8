/**
 * Fetches a public web page without letting a URL reach inside our network
 * (SSRF): every hop's URL and every address its host resolves to are checked
 * before a connection is opened, the connection goes to the checked address
 * (no second lookup), redirects are followed by hand, and time, size and
 * content type are bounded. Refusals are 400 `invalid_input` (the URL's
 * fault); failures to read an allowed page are 502 `page_unreachable`.
 *
 * @module
 */
import { HttpError } from "../errors.ts";
import {
  closeQuietly,
  ConnectFailure,
  type Connector,
  type HttpAnswer,
  MalformedResponse,
  requestOverConnection,
  systemConnector,
} from "./http1.ts";
import { type Resolver, systemResolver } from "./resolver.ts";
import { checkUrl, normalizeUrl, pickAddress, refusal } from "./target.ts";

/** How {@linkcode fetchPage} resolves, connects and what it bounds. */
export interface PageFetchOptions {
  resolver: Resolver;
  connect: Connector;
  /** TEST ONLY: lets loopback addresses (any port) through; a runtime option tests inject, never read from the environment. */
  allowLoopback: boolean;
  /** One deadline for the whole fetch: every hop, DNS included. */
  timeoutMs: number;
  /** The most decoded body bytes read. */
  maxBytes: number;
  maxRedirects: number;
  userAgent: string;
}

/** Production settings: the system's resolver and sockets, 5 s, 1 MiB, 3 redirects. */
export const DEFAULT_PAGE_FETCH: PageFetchOptions = Object.freeze({
  resolver: systemResolver,
  connect: systemConnector,
  allowLoopback: false,
  timeoutMs: 5000,
  maxBytes: 1048576,
  maxRedirects: 3,
  userAgent: "MarketplaceAnalyzer/1.0 (+project analysis)",
});

/** A page read by {@linkcode fetchPage}. */
export interface FetchedPage {
  /** The final URL, after redirects (normalized). */
  url: string;
  contentType: "text/html" | "text/plain";
  /** The body decoded by its charset (a BOM wins; default and unknown labels: utf-8). */
  text: string;
  /** Whether the body was cut at `maxBytes`. */
  truncated: boolean;
  /** The URLs redirected to, in order. */
  redirects: string[];
}

/** Why a page could not be read (`details.reason` of the 502). */
export type UnreachableReason =
  | "dns"
  | "connect"
  | "tls"
  | "timeout"
  | "malformed_response"
  | "http_status";

/** A 502 `page_unreachable` "Cannot read the page at this URL: <message>" with details `{ reason, url, status? }`. */
export function unreachable(
  reason: UnreachableReason,
  url: string,
  message: string,
  status?: number,
): HttpError {
  return new HttpError(502, "page_unreachable", `Cannot read the page at this URL: ${message}`, {
    reason,
    url,
    ...(status === undefined ? {} : { status }),
  });
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const CONTENT_TYPES = new Set(["text/html", "text/plain"]);

/**
 * Fetches a page: normalizeUrl → checkUrl → resolve (not for a literal
 * address) → pickAddress → connect to that address → GET. A redirect
 * (301/302/303/307/308) is followed to its Location (relative to the current
 * URL), checked again the same way; more than `maxRedirects` is refused
 * ("too_many_redirects"), one without a usable Location too ("redirect").
 * Other non-2xx answers, DNS, connection, TLS and protocol failures and the
 * one overall deadline are 502 `page_unreachable`; a content type other than
 * text/html or text/plain (or none) is refused ("content_type"). Every
 * refusal is decided before a connection to that hop is opened; every
 * connection is closed.
 */
export async function fetchPage(
  url: string | URL,
  options: Partial<PageFetchOptions> = {},
): Promise<FetchedPage> {
  const settings: PageFetchOptions = { ...DEFAULT_PAGE_FETCH, ...options };
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(), settings.timeoutMs);
  try {
    let current = normalizeUrl(url);
    const redirects: string[] = [];
    for (;;) {
      const answer = await hop(current, settings, deadline.signal);
      if (!REDIRECTS.has(answer.status)) return readPage(current, answer, redirects);
      const next = redirectTarget(current, answer);
      if (redirects.length >= settings.maxRedirects) {
        throw refusal(
          "too_many_redirects",
          current.href,
          `it redirects more than ${settings.maxRedirects} times`,
        );
      }
      redirects.push(next.href);
      current = next;
    }
  } finally {
    clearTimeout(timer);
  }
}

/** One request: check, resolve, check the addresses, connect to the chosen one, GET. */
async function hop(url: URL, settings: PageFetchOptions, signal: AbortSignal): Promise<HttpAnswer> {
  const target = checkUrl(url, settings);
  const timeout = () =>
    unreachable("timeout", url.href, `no answer within ${settings.timeoutMs} ms`);
  if (signal.aborted) throw timeout();
  const addresses = target.literal ? [target.literal] : await withDeadline(
    attempt(() => settings.resolver(target.host, signal)),
    signal,
    timeout,
    (error) => unreachable("dns", url.href, `cannot resolve "${target.host}": ${describe(error)}`),
  );
  const address = pickAddress(url, addresses, target.port, settings);
  if (signal.aborted) throw timeout();
  const conn = await withDeadline(
    attempt(() =>
      settings.connect({ address, port: target.port, hostname: target.host, tls: target.tls })
    ),
    signal,
    timeout,
    (error) => connectionError(url, error),
    closeQuietly,
  );
  try {
    return await requestOverConnection(conn, url, {
      userAgent: settings.userAgent,
      maxBytes: settings.maxBytes,
      signal,
      // Only a page we will use is read: redirects, errors and other types are not.
      wantBody: (status, headers) => isSuccess(status) && mediaType(headers).accepted,
    });
  } catch (error) {
    if (signal.aborted) throw timeout();
    throw connectionError(url, error);
  } finally {
    closeQuietly(conn);
  }
}

/**
 * `work`, or `timeout()` once `signal` aborts; any other failure goes
 * through `failed`. A result that arrives after the deadline is handed to
 * `discard` (a connection opened too late is closed).
 */
async function withDeadline<T>(
  work: Promise<T>,
  signal: AbortSignal,
  timeout: () => HttpError,
  failed: (error: unknown) => HttpError,
  discard?: (late: T) => void,
): Promise<T> {
  if (signal.aborted) {
    work.then(discard, () => {});
    throw timeout();
  }
  let onAbort = () => {};
  const aborted = new Promise<"aborted">((resolve) => {
    onAbort = () => resolve("aborted");
  });
  signal.addEventListener("abort", onAbort, { once: true });
  const settled = work.then((value) => ({ value }), (error: unknown) => ({ error }));
  try {
    const first = await Promise.race([settled, aborted]);
    if (first === "aborted") {
      settled.then((late) => "value" in late && discard?.(late.value));
      throw timeout();
    }
    if ("error" in first) throw signal.aborted ? timeout() : failed(first.error);
    return first.value;
  } finally {
    signal.removeEventListener("abort", onAbort);
  }
}

/** A failure while connecting or talking to the server, as a 502. */
function connectionError(url: URL, error: unknown): HttpError {
  if (error instanceof HttpError) return error;
  if (error instanceof MalformedResponse) {
    return unreachable(
      "malformed_response",
      url.href,
      `the answer is not valid HTTP: ${error.message}`,
    );
  }
  if (error instanceof ConnectFailure && error.stage === "tls") {
    return unreachable("tls", url.href, `${error.message}: ${describe(error.cause)}`);
  }
  if (error instanceof Deno.errors.InvalidData) {
    return unreachable("tls", url.href, `the secure connection failed: ${describe(error)}`);
  }
  const detail = error instanceof ConnectFailure
    ? `${error.message}: ${describe(error.cause)}`
    : `the connection failed: ${describe(error)}`;
  return unreachable("connect", url.href, detail);
}

/** The Location of a redirect, resolved against the current URL and normalized. */
function redirectTarget(current: URL, answer: HttpAnswer): URL {
  const location = answer.headers.get("location");
  let next: URL | null = null;
  if (location) {
    try {
      next = new URL(location, current);
    } catch {
      // not a URL: refused below
    }
  }
  if (!next) {
    throw refusal(
      "redirect",
      current.href,
      `it redirects (${answer.status}) without a usable Location`,
    );
  }
  return normalizeUrl(next);
}

/** A final answer as a page: 2xx with text/html or text/plain, decoded by its charset. */
function readPage(url: URL, answer: HttpAnswer, redirects: string[]): FetchedPage {
  if (!isSuccess(answer.status)) {
    throw unreachable(
      "http_status",
      url.href,
      `the server answered ${answer.status}`,
      answer.status,
    );
  }
  const { essence, charset, accepted } = mediaType(answer.headers);
  if (!accepted) {
    throw refusal(
      "content_type",
      url.href,
      essence
        ? `its content type "${essence}" is not text/html or text/plain`
        : "it has no content type",
    );
  }
  return {
    url: url.href,
    contentType: essence as FetchedPage["contentType"],
    text: decodeText(answer.body, charset, answer.truncated),
    truncated: answer.truncated,
    redirects,
  };
}

function isSuccess(status: number): boolean {
  return status >= 200 && status <= 299;
}

/** The Content-Type's essence (lower case), its charset, and whether it is one we read. */
function mediaType(headers: Headers): { essence: string; charset?: string; accepted: boolean } {
  const [type = "", ...params] = (headers.get("content-type") ?? "").split(";");
  const essence = type.trim().toLowerCase();
  const charset = params.map((p) => /^\s*charset\s*=\s*"?([^";]*)"?\s*$/i.exec(p)?.[1])
    .find(Boolean);
  return { essence, charset, accepted: CONTENT_TYPES.has(essence) };
}

/** `work()`, with a synchronous throw turned into a rejection. */
function attempt<T>(work: () => Promise<T>): Promise<T> {
  try {
    return work();
  } catch (error) {
    return Promise.reject(error);
  }
}

/** Text of `body` in `charset` (a BOM wins; unknown labels fall back to utf-8). */
function decodeText(body: Uint8Array, charset: string | undefined, truncated: boolean): string {
  const bom = body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf
    ? "utf-8"
    : body[0] === 0xff && body[1] === 0xfe
    ? "utf-16le"
    : body[0] === 0xfe && body[1] === 0xff
    ? "utf-16be"
    : undefined;
  let decoder: TextDecoder;
  try {
    decoder = new TextDecoder(bom ?? charset ?? "utf-8");
  } catch {
    decoder = new TextDecoder("utf-8");
  }
  // A cut body may end inside a character: streaming mode leaves that tail out.
  return decoder.decode(body, { stream: truncated });
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
