/**
 * A minimal HTTP/1.1 client for one GET over a connection we opened
 * ourselves to an address we checked. `fetch()` cannot be used: it resolves
 * the host name again (DNS rebinding), and hosted Supabase's runtime offers no
 * `Deno.createHttpClient` to pin the address.
 *
 * @module
 */
import { concatBytes, readAtMost } from "../../lib/bytes.ts";

/** A byte stream to a server: a `Deno.Conn`, a `Deno.TlsConn`, or an in-memory pair in tests. */
export interface Connection {
  readable: ReadableStream<Uint8Array>;
  writable: WritableStream<Uint8Array>;
  close(): void;
}

/** Where to connect: the checked `address`, and the URL's host name for TLS. */
export interface ConnectTarget {
  address: string;
  port: number;
  hostname: string;
  tls: boolean;
}

/** Opens a connection to a target; injectable so tests never open one to anything but 127.0.0.1. */
export type Connector = (target: ConnectTarget) => Promise<Connection>;

/** A response: status, headers, and the decoded body (at most `maxBytes` of it). */
export interface HttpAnswer {
  status: number;
  headers: Headers;
  body: Uint8Array;
  truncated: boolean;
}

/** What {@linkcode requestOverConnection} sends and how much it reads. */
export interface RequestOptions {
  userAgent: string;
  /** The most decoded body bytes kept; the rest is not read (`truncated`). */
  maxBytes: number;
  /** Aborting rejects the request with the signal's reason and closes the connection. */
  signal: AbortSignal;
  /** Whether to read the body of this answer (default: always); an unread body is empty. */
  wantBody?: (status: number, headers: Headers) => boolean;
}

/** Opening the connection failed: the TCP connect, or the TLS handshake. */
export class ConnectFailure extends Error {
  override name = "ConnectFailure";

  /** `stage` says which step failed; `cause` is the runtime's error. */
  constructor(readonly stage: "connect" | "tls", message: string, options?: ErrorOptions) {
    super(message, options);
  }
}

/** The server's bytes are not an HTTP/1.x response we can read. */
export class MalformedResponse extends Error {
  override name = "MalformedResponse";
}

/** The most bytes of status line and headers read before the answer counts as malformed. */
export const MAX_HEAD_BYTES = 64 * 1024;

/**
 * Connects with `Deno.connect` to `target.address` (never the name: it was
 * resolved and checked already), then, for TLS, `Deno.startTls` with the
 * URL's host name so the certificate is verified for it, and completes the
 * handshake. Throws {@linkcode ConnectFailure}.
 */
export const systemConnector: Connector = async ({ address, port, hostname, tls }) => {
  let tcp: Deno.TcpConn;
  try {
    tcp = await Deno.connect({ hostname: address, port, transport: "tcp" });
  } catch (error) {
    throw new ConnectFailure("connect", `Cannot connect to ${address} port ${port}`, {
      cause: error,
    });
  }
  if (!tls) return tcp;
  let secure: Deno.TlsConn | undefined;
  try {
    secure = await Deno.startTls(tcp, { hostname });
    await secure.handshake();
    return secure;
  } catch (error) {
    closeQuietly(secure ?? tcp);
    throw new ConnectFailure("tls", `Cannot establish TLS with "${hostname}"`, { cause: error });
  }
};

/**
 * Sends one GET for `url` over `conn` (Host from the URL, `Connection:
 * close`, Accept text/html or text/plain, Accept-Encoding gzip and deflate)
 * and reads the answer: status line and headers (at most 64 KiB, else
 * {@linkcode MalformedResponse}), 1xx interim answers skipped, the body framed
 * by chunked coding, Content-Length or the end of the connection, decoded
 * from gzip/deflate, and cut after `maxBytes` decoded bytes (`truncated`).
 * Rejects with the signal's reason on abort. Always closes `conn`.
 */
export async function requestOverConnection(
  conn: Connection,
  url: URL,
  options: RequestOptions,
): Promise<HttpAnswer> {
  const { signal } = options;
  if (signal.aborted) {
    closeQuietly(conn);
    throw signal.reason;
  }
  const reader = new ByteReader(conn.readable.getReader());
  let onAbort = () => {};
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason);
  });
  signal.addEventListener("abort", onAbort, { once: true });
  try {
    return await Promise.race([exchange(conn, reader, url, options), aborted]);
  } finally {
    signal.removeEventListener("abort", onAbort);
    reader.cancel();
    closeQuietly(conn);
  }
}

/** Closes a connection that may be closed already. */
export function closeQuietly(conn: { close(): void }): void {
  try {
    conn.close();
  } catch {
    // already closed
  }
}

async function exchange(
  conn: Connection,
  reader: ByteReader,
  url: URL,
  options: RequestOptions,
): Promise<HttpAnswer> {
  const writer = conn.writable.getWriter();
  await writer.write(requestHead(url, options.userAgent));
  writer.releaseLock();
  const { status, headers } = await readHead(reader);
  const wanted = options.wantBody?.(status, headers) ?? true;
  if (!wanted || status < 200 || status === 204 || status === 304) {
    return { status, headers, body: new Uint8Array(0), truncated: false };
  }
  const raw = rawBody(reader, headers);
  const decoded = decode(raw, contentCoding(headers));
  return { status, headers, ...await collect(decoded, options.maxBytes) };
}

function requestHead(url: URL, userAgent: string): Uint8Array {
  const target = `${url.pathname}${url.search}`;
  if (!/^[!-~]+$/.test(target + url.host) || !/^[ -~]+$/.test(userAgent)) {
    throw new TypeError(
      `Cannot request "${url.href}": only printable ASCII may go in the request head`,
    );
  }
  return new TextEncoder().encode(
    `GET ${target} HTTP/1.1\r\nHost: ${url.host}\r\nUser-Agent: ${userAgent}\r\n` +
      "Accept: text/html,text/plain;q=0.9\r\nAccept-Encoding: gzip, deflate\r\n" +
      "Connection: close\r\n\r\n",
  );
}

/** Status line and headers; interim 1xx answers (e.g. 103 Early Hints) are skipped. */
async function readHead(reader: ByteReader): Promise<{ status: number; headers: Headers }> {
  let budget = MAX_HEAD_BYTES;
  for (;;) {
    const block = await reader.readHeadBlock(budget);
    budget -= block.length;
    const [statusLine, ...lines] = latin1(block).split(/\r?\n/).slice(0, -2);
    const match = /^HTTP\/1\.[01] ([1-9][0-9]{2})(?: .*)?$/.exec(statusLine ?? "");
    if (!match) throw new MalformedResponse(`Not an HTTP/1.x status line: "${statusLine}"`);
    const status = Number(match[1]);
    const headers = new Headers();
    for (const line of lines) {
      const field = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+):[ \t]*(.*?)[ \t]*$/.exec(line);
      if (!field) throw new MalformedResponse(`Not a header line: "${line}"`);
      try {
        headers.append(field[1]!, field[2]!);
      } catch {
        throw new MalformedResponse(`Invalid header value of "${field[1]}"`);
      }
    }
    if (status >= 200 || status === 101) return { status, headers };
  }
}

/** The raw (still content-coded) body, framed as the headers say. */
function rawBody(reader: ByteReader, headers: Headers): AsyncGenerator<Uint8Array> {
  const codings = listOf(headers.get("transfer-encoding")).filter((c) => c !== "identity");
  if (codings.length > 0) {
    if (codings.length > 1 || codings[0] !== "chunked") {
      throw new MalformedResponse(`Unsupported transfer coding "${codings.join(", ")}"`);
    }
    return chunked(reader);
  }
  const lengths = listOf(headers.get("content-length"));
  if (lengths.length === 0) return untilClose(reader);
  if (!lengths.every((l) => /^[0-9]{1,15}$/.test(l) && l === lengths[0])) {
    throw new MalformedResponse(`Invalid Content-Length "${headers.get("content-length")}"`);
  }
  return exactly(reader, Number(lengths[0]));
}

async function* exactly(reader: ByteReader, length: number): AsyncGenerator<Uint8Array> {
  let left = length;
  while (left > 0) {
    const chunk = await reader.next(left);
    if (!chunk) throw new MalformedResponse(`The body ended ${left} bytes short of ${length}`);
    left -= chunk.length;
    yield chunk;
  }
}

async function* untilClose(reader: ByteReader): AsyncGenerator<Uint8Array> {
  for (;;) {
    let chunk: Uint8Array | null;
    try {
      chunk = await reader.next(Infinity);
    } catch (error) {
      // A TLS peer that closes without close_notify still ends a close-delimited body.
      if (error instanceof Deno.errors.UnexpectedEof) return;
      throw error;
    }
    if (!chunk) return;
    yield chunk;
  }
}

async function* chunked(reader: ByteReader): AsyncGenerator<Uint8Array> {
  for (;;) {
    const sizeLine = await reader.readLine(4096);
    const size = /^([0-9a-fA-F]{1,8})[ \t]*(;.*)?$/.exec(sizeLine);
    if (!size) throw new MalformedResponse(`Invalid chunk size line "${sizeLine}"`);
    const length = parseInt(size[1]!, 16);
    if (length === 0) break;
    yield* exactly(reader, length);
    if (await reader.readLine(2) !== "") throw new MalformedResponse("A chunk overran its size");
  }
  let trailerBytes = 0;
  for (;;) {
    const trailer = await reader.readLine(MAX_HEAD_BYTES);
    trailerBytes += trailer.length;
    if (trailer === "") return;
    if (trailerBytes > MAX_HEAD_BYTES) throw new MalformedResponse("Trailers exceed 64 KiB");
  }
}

/** The Content-Encoding to undo: none, gzip or deflate (zlib). */
function contentCoding(headers: Headers): "gzip" | "deflate" | null {
  const codings = listOf(headers.get("content-encoding")).filter((c) => c !== "identity");
  if (codings.length === 0) return null;
  const [coding] = codings;
  if (codings.length === 1 && (coding === "gzip" || coding === "x-gzip")) return "gzip";
  if (codings.length === 1 && coding === "deflate") return "deflate";
  throw new MalformedResponse(`Unsupported content coding "${codings.join(", ")}"`);
}

/** The largest raw piece handed to the decompressor at once (bounds what one piece expands to). */
const INFLATE_SLICE = 4096;

/** Body chunks as a stream, decompressed when `coding` says so. */
function decode(
  raw: AsyncGenerator<Uint8Array>,
  coding: "gzip" | "deflate" | null,
): { stream: ReadableStream<Uint8Array>; sourceError: () => unknown } {
  let failure: unknown = undefined;
  const fail = (error: unknown) => failure = error;
  if (!coding) {
    return {
      stream: streamOf(raw, (chunk) => [chunk], fail),
      sourceError: () => failure,
    };
  }
  const slices = (chunk: Uint8Array) =>
    Array.from(
      { length: Math.ceil(chunk.length / INFLATE_SLICE) },
      (_, i) => chunk.slice(i * INFLATE_SLICE, (i + 1) * INFLATE_SLICE),
    );
  const compressed = streamOf<BufferSource>(raw, slices, fail);
  return {
    stream: compressed.pipeThrough(new DecompressionStream(coding)),
    sourceError: () => failure,
  };
}

/** A pull stream over `raw`, each chunk mapped to `pieces`; a failure of `raw` is reported to `fail`. */
function streamOf<T>(
  raw: AsyncGenerator<Uint8Array>,
  pieces: (chunk: Uint8Array) => T[],
  fail: (error: unknown) => void,
): ReadableStream<T> {
  return new ReadableStream<T>({
    async pull(controller) {
      let next: IteratorResult<Uint8Array>;
      try {
        next = await raw.next();
      } catch (error) {
        fail(error);
        throw error;
      }
      if (next.done) return controller.close();
      for (const piece of pieces(next.value)) controller.enqueue(piece);
    },
    async cancel() {
      await raw.return(undefined);
    },
  });
}

/** Reads decoded bytes up to `maxBytes`; more than that cancels the rest (`truncated`). */
async function collect(
  { stream, sourceError }: ReturnType<typeof decode>,
  maxBytes: number,
): Promise<{ body: Uint8Array; truncated: boolean }> {
  try {
    const { bytes, truncated } = await readAtMost(stream, maxBytes);
    return { body: bytes, truncated };
  } catch (error) {
    const cause = sourceError();
    if (cause !== undefined) throw cause;
    throw new MalformedResponse("The body cannot be decompressed", { cause: error });
  }
}

/** Buffered reads over a connection's reader: header blocks, lines, and chunks. */
class ByteReader {
  #reader: ReadableStreamDefaultReader<Uint8Array>;
  #buffer: Uint8Array = new Uint8Array(0);

  constructor(reader: ReadableStreamDefaultReader<Uint8Array>) {
    this.#reader = reader;
  }

  /** The next bytes (at most `limit`), from the buffer first; null at the end of the stream. */
  async next(limit: number): Promise<Uint8Array | null> {
    if (this.#buffer.length === 0 && !await this.#fill()) return null;
    const take = Math.min(limit, this.#buffer.length);
    const chunk = this.#buffer.subarray(0, take);
    this.#buffer = this.#buffer.subarray(take);
    return chunk;
  }

  /** Bytes up to and including the blank line that ends a header block. */
  async readHeadBlock(limit: number): Promise<Uint8Array> {
    let from = 0;
    for (;;) {
      const end = headEnd(this.#buffer, from);
      if (end > limit) break;
      if (end >= 0) return this.#take(end);
      if (this.#buffer.length >= limit) break;
      from = Math.max(0, this.#buffer.length - 3);
      if (!await this.#fill()) {
        throw new MalformedResponse(
          this.#buffer.length === 0
            ? "The server closed the connection without answering"
            : "The server closed the connection in the middle of the headers",
        );
      }
    }
    throw new MalformedResponse("The response headers exceed 64 KiB");
  }

  /** One line without its line ending (LF or CRLF), at most `limit` bytes long. */
  async readLine(limit: number): Promise<string> {
    for (;;) {
      const lf = this.#buffer.indexOf(10);
      if (lf >= 0 && lf <= limit + 1) {
        const line = this.#take(lf + 1);
        return latin1(line.subarray(0, line.length - (line[lf - 1] === 13 ? 2 : 1)));
      }
      if (lf > limit + 1 || this.#buffer.length > limit + 1) {
        throw new MalformedResponse("A line of the chunked body is too long");
      }
      if (!await this.#fill()) throw new MalformedResponse("The chunked body ended early");
    }
  }

  /** Stops reading; the connection's stream is cancelled. */
  cancel(): void {
    this.#reader.cancel().catch(() => {});
  }

  async #fill(): Promise<boolean> {
    for (;;) {
      const { value, done } = await this.#reader.read();
      if (done) return false;
      if (value.length === 0) continue;
      this.#buffer = this.#buffer.length === 0 ? value : concatBytes([this.#buffer, value]);
      return true;
    }
  }

  #take(length: number): Uint8Array {
    const taken = this.#buffer.subarray(0, length);
    this.#buffer = this.#buffer.subarray(length);
    return taken;
  }
}

/** The length of the header block in `bytes` (through its blank line), or -1 if incomplete. */
function headEnd(bytes: Uint8Array, from: number): number {
  for (let i = bytes.indexOf(10, from); i >= 0; i = bytes.indexOf(10, i + 1)) {
    if (bytes[i + 1] === 10) return i + 2;
    if (bytes[i + 1] === 13 && bytes[i + 2] === 10) return i + 3;
  }
  return -1;
}

function listOf(value: string | null): string[] {
  return (value ?? "").split(",").map((v) => v.trim().toLowerCase()).filter((v) => v !== "");
}

function latin1(bytes: Uint8Array): string {
  let text = "";
  for (let i = 0; i < bytes.length; i += 8192) {
    text += String.fromCharCode(...bytes.subarray(i, i + 8192));
  }
  return text;
}
