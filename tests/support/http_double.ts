/**
 * A small base for local HTTP test doubles: a real `Deno.serve` server on
 * 127.0.0.1 with an ephemeral port that records every request and can be told
 * to fail, delay or hang upcoming requests (429s, 500s, timeouts).
 *
 * Concrete doubles (payment processor, email, AI) extend {@linkcode HttpDouble}
 * and override {@linkcode HttpDouble.handle}; simple ones can pass a handler.
 *
 * @module
 */
/** One request as the double received it. */
export interface RecordedRequest {
  /** Upper-case HTTP method. */
  readonly method: string;
  /** URL path, e.g. `/v1/customers`. */
  readonly path: string;
  /** The query string's parameters. */
  readonly query: URLSearchParams;
  /** The request headers. */
  readonly headers: Headers;
  /** The raw body ("" when there is none). */
  readonly bodyText: string;
  /**
   * The parsed body: bracket-decoded object for form bodies
   * (`a[b][0]=x` → `{ a: { b: ["x"] } }`), parsed JSON for JSON bodies,
   * `undefined` when empty, the raw text otherwise.
   */
  readonly body: unknown;
  /** When the request arrived. */
  readonly receivedAt: Date;
}

/** What {@linkcode HttpDouble.failNext} should do to the matching requests. */
export interface FailureRule {
  /** Only requests with this method (any when omitted). */
  method?: string;
  /** Only requests whose path starts with this string or matches this pattern. */
  path?: string | RegExp;
  /**
   * Status to answer with. When omitted and `delayMs` is set, the request is
   * delayed and then handled normally; otherwise defaults to 500.
   */
  status?: number;
  /** Response body (JSON-encoded); defaults to the double's own error shape. */
  body?: unknown;
  /** Extra response headers, e.g. `{ "retry-after": "1" }`. */
  headers?: Record<string, string>;
  /** How many matching requests this applies to (default 1). */
  times?: number;
  /** Wait this long before answering; `Infinity` hangs until the double closes. */
  delayMs?: number;
}

/** A request handler for a double built without subclassing. */
export type DoubleHandler = (
  request: RecordedRequest,
) => Response | Promise<Response>;

/** Options for {@linkcode HttpDouble}. */
export interface HttpDoubleOptions {
  /** Handles requests not consumed by a failure rule (default: 404). */
  handler?: DoubleHandler;
}

interface PendingFailure extends FailureRule {
  remaining: number;
}

/** Which requests {@linkcode HttpDouble.holdNext} holds. */
export interface HoldRule {
  /** Only requests with this method (any when omitted). */
  method?: string;
  /** Only requests whose path starts with this string or matches this pattern. */
  path?: string | RegExp;
}

/** A request held at the door: see {@linkcode HttpDouble.holdNext}. */
export interface Hold {
  /** Resolves with the request once it arrived (and is being held). */
  readonly reached: Promise<RecordedRequest>;
  /** Lets the request through, to be handled as any other. */
  release(): void;
}

interface PendingHold extends HoldRule {
  arrived(request: RecordedRequest): void;
  gate: Promise<void>;
}

/** Builds a JSON response. */
export function jsonResponse(
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", ...headers },
  });
}

/** A value decoded from bracket-notation form parameters. */
export type FormValue = string | FormValue[] | { [key: string]: FormValue };

/** An object decoded from bracket-notation form parameters. */
export type FormObject = { [key: string]: FormValue };

/**
 * Decodes Stripe-style bracket notation (`a[b][0]=x&a[c]=y&k[]=z`) into
 * nested objects and arrays. Numeric or empty segments make arrays.
 */
export function decodeBracketParams(params: URLSearchParams): FormObject {
  const root: FormObject = {};
  for (const [key, value] of params) {
    const segments = splitBracketKey(key);
    let container: FormObject | FormValue[] = root;
    segments.forEach((segment, i) => {
      const last = i === segments.length - 1;
      const slot = segment === "" && Array.isArray(container) ? String(container.length) : segment;
      const existing = (container as Record<string, FormValue>)[slot];
      if (last) {
        (container as Record<string, FormValue>)[slot] = value;
        return;
      }
      if (existing === undefined || typeof existing === "string") {
        const next = segments[i + 1] ?? "";
        const fresh: FormObject | FormValue[] = next === "" || /^\d+$/.test(next) ? [] : {};
        (container as Record<string, FormValue>)[slot] = fresh;
        container = fresh;
      } else {
        container = existing;
      }
    });
  }
  return root;
}

function splitBracketKey(key: string): string[] {
  const open = key.indexOf("[");
  if (open <= 0 || !key.endsWith("]")) return [key];
  const rest = key.slice(open + 1, -1).split("][");
  return [key.slice(0, open), ...rest];
}

/** Whether `path` starts with `prefix` or matches the pattern. */
export function pathMatches(path: string, pattern: string | RegExp): boolean {
  return typeof pattern === "string" ? path.startsWith(pattern) : pattern.test(path);
}

/** A recording, failure-injecting local HTTP server; see the module doc. */
export class HttpDouble implements AsyncDisposable {
  /** Every request received since start (or the last {@linkcode reset}). */
  readonly requests: RecordedRequest[] = [];
  /** Errors thrown by the handler (answered as 500); a test can assert none. */
  readonly handlerErrors: unknown[] = [];
  readonly #server: Deno.HttpServer<Deno.NetAddr>;
  readonly #closing = new AbortController();
  readonly #handler: DoubleHandler | undefined;
  #failures: PendingFailure[] = [];
  #holds: PendingHold[] = [];
  #closed: Promise<void> | undefined;
  #inFlight = 0;
  readonly #idleWaiters: (() => void)[] = [];

  /** Starts listening on 127.0.0.1 with an ephemeral port. */
  constructor(options: HttpDoubleOptions = {}) {
    this.#handler = options.handler;
    this.#server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen: () => {} },
      (request) => this.#serve(request),
    );
  }

  /** Base URL without trailing slash, e.g. `http://127.0.0.1:43123`. */
  get url(): string {
    return `http://${this.host}:${this.port}`;
  }

  /** Always `127.0.0.1`. */
  get host(): string {
    return this.#server.addr.hostname;
  }

  /** The ephemeral port the server listens on. */
  get port(): number {
    return this.#server.addr.port;
  }

  /** Makes the next matching request(s) fail, delay or hang. */
  failNext(rule: FailureRule = {}): void {
    this.#failures.push({ ...rule, remaining: rule.times ?? 1 });
  }

  /**
   * Holds the next request that matches `rule` until the test lets it
   * through: a deterministic way to make something happen while a client
   * waits for this double (no timers). Closing the double lets held
   * requests through too. Keep the client's own timeout longer than the hold.
   */
  holdNext(rule: HoldRule = {}): Hold {
    let arrived!: (request: RecordedRequest) => void;
    let release!: () => void;
    const reached = new Promise<RecordedRequest>((resolve) => arrived = resolve);
    const gate = new Promise<void>((resolve) => release = resolve);
    this.#closing.signal.addEventListener("abort", () => release(), { once: true });
    this.#holds.push({ ...rule, arrived, gate });
    return { reached, release };
  }

  /** Recorded requests with this method and a path prefix or pattern. */
  requestsTo(method: string, path: string | RegExp): RecordedRequest[] {
    const wanted = method.toUpperCase();
    return this.requests.filter((r) => r.method === wanted && pathMatches(r.path, path));
  }

  /**
   * Resolves once no request is being handled, e.g. after a client timed out
   * on a delayed request that the double still processes (then replays).
   */
  idle(): Promise<void> {
    if (this.#inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  /** Forgets recorded requests, handler errors and pending failure rules. */
  reset(): void {
    this.requests.length = 0;
    this.handlerErrors.length = 0;
    this.#failures = [];
  }

  /** Stops the server, first releasing any delayed or hanging requests. */
  close(): Promise<void> {
    if (!this.#closed) {
      this.#closing.abort();
      this.#closed = this.#server.shutdown();
    }
    return this.#closed;
  }

  /** Same as {@linkcode close}, for `await using`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  /** Answers a request; subclasses override this (default: the handler option or 404). */
  protected handle(request: RecordedRequest): Response | Promise<Response> {
    if (this.#handler) return this.#handler(request);
    return jsonResponse(404, { error: `no route for ${request.method} ${request.path}` });
  }

  /** The error body used by failure rules without `body`; subclasses give their API's shape. */
  protected failureBody(status: number): unknown {
    return { error: { status, message: "Injected failure" } };
  }

  async #serve(raw: Request): Promise<Response> {
    this.#inFlight += 1;
    try {
      return await this.#answer(await recordRequest(raw));
    } finally {
      this.#inFlight -= 1;
      if (this.#inFlight === 0) { for (const wake of this.#idleWaiters.splice(0)) wake(); }
    }
  }

  async #answer(recorded: RecordedRequest): Promise<Response> {
    this.requests.push(recorded);
    const hold = this.#holds.find((h) => matches(h, recorded));
    if (hold) {
      this.#holds = this.#holds.filter((h) => h !== hold);
      hold.arrived(recorded);
      await hold.gate;
    }
    const failure = this.#takeFailure(recorded);
    if (failure?.delayMs !== undefined) {
      const finished = await this.#wait(failure.delayMs);
      if (!finished) return jsonResponse(503, this.failureBody(503));
    }
    if (failure && (failure.status !== undefined || failure.delayMs === undefined)) {
      const status = failure.status ?? 500;
      return jsonResponse(status, failure.body ?? this.failureBody(status), failure.headers);
    }
    try {
      return await this.handle(recorded);
    } catch (error) {
      this.handlerErrors.push(error);
      return jsonResponse(500, this.failureBody(500));
    }
  }

  #takeFailure(request: RecordedRequest): PendingFailure | undefined {
    const rule = this.#failures.find((f) => matches(f, request));
    if (!rule) return undefined;
    rule.remaining -= 1;
    if (rule.remaining <= 0) this.#failures = this.#failures.filter((f) => f !== rule);
    return rule;
  }

  /**
   * Resolves true after `ms`, or false once the double closes. (It does not
   * watch `request.signal`: Deno warns about that signal's legacy semantics,
   * and closing releases every waiting request anyway.)
   */
  #wait(ms: number): Promise<boolean> {
    const closing = this.#closing.signal;
    if (closing.aborted) return Promise.resolve(false);
    return new Promise((resolve) => {
      const timer = Number.isFinite(ms) ? setTimeout(() => settle(true), ms) : undefined;
      const abort = () => settle(false);
      const settle = (finished: boolean) => {
        clearTimeout(timer);
        closing.removeEventListener("abort", abort);
        resolve(finished);
      };
      closing.addEventListener("abort", abort);
    });
  }
}

/** Whether `request` has the rule's method (if any) and path (if any). */
function matches(rule: HoldRule, request: RecordedRequest): boolean {
  return (rule.method === undefined || rule.method.toUpperCase() === request.method) &&
    (rule.path === undefined || pathMatches(request.path, rule.path));
}

async function recordRequest(raw: Request): Promise<RecordedRequest> {
  const url = new URL(raw.url);
  const bodyText = raw.body ? await raw.text() : "";
  return {
    method: raw.method.toUpperCase(),
    path: url.pathname,
    query: url.searchParams,
    headers: raw.headers,
    bodyText,
    body: parseBody(bodyText, raw.headers.get("content-type") ?? ""),
    receivedAt: new Date(),
  };
}

function parseBody(text: string, contentType: string): unknown {
  if (text === "") return undefined;
  if (contentType.includes("application/x-www-form-urlencoded")) {
    return decodeBracketParams(new URLSearchParams(text));
  }
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
