// requestOverConnection() over in-memory connections: hand-written server bytes, no sockets.
import assert from "node:assert/strict";
import {
  type Connection,
  MalformedResponse,
  type RequestOptions,
  requestOverConnection,
} from "../../../../../supabase/functions/_shared/platform/web/http1.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

interface FakeServer {
  conn: Connection;
  /** The request head the client wrote. */
  request(): Promise<string>;
  /** Whether the client closed the connection. */
  closed(): boolean;
  /** Resolves when the client stopped reading (cancelled the stream), i.e. it will read no more. */
  cancelled: Promise<void>;
}

/** A connection whose server side writes `chunks`, then ends the stream unless `hang`. */
function fakeServer(chunks: (string | Uint8Array)[], { hang = false } = {}): FakeServer {
  // Buffered like a socket: the client's write completes before the server reads it.
  const upstream = new TransformStream<Uint8Array, Uint8Array>({}, undefined, {
    highWaterMark: 16,
  });
  let closed = false;
  let onCancel = () => {};
  const cancelled = new Promise<void>((resolve) => onCancel = resolve);
  let queue = [...chunks];
  const downstream = new ReadableStream<Uint8Array>({
    pull(controller) {
      const next = queue.shift();
      if (next !== undefined) {
        controller.enqueue(typeof next === "string" ? encoder.encode(next) : next);
      } else if (!hang) {
        controller.close();
      }
    },
    cancel() {
      queue = [];
      onCancel();
    },
  }, { highWaterMark: 0 });
  const requestReader = upstream.readable.getReader();
  return {
    conn: {
      readable: downstream,
      writable: upstream.writable,
      close() {
        closed = true;
      },
    },
    async request() {
      let text = "";
      while (!text.includes("\r\n\r\n")) {
        const { value, done } = await requestReader.read();
        if (done) break;
        text += decoder.decode(value);
      }
      return text;
    },
    closed: () => closed,
    cancelled,
  };
}

/** `text` split into one-byte chunks (every boundary the parser must handle). */
function bytewise(text: string): Uint8Array[] {
  return Array.from(encoder.encode(text), (byte) => new Uint8Array([byte]));
}

async function compress(text: string, format: CompressionFormat): Promise<Uint8Array> {
  const stream = new Blob([text]).stream().pipeThrough(new CompressionStream(format));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

const URL_ = new URL("http://shop.example:8080/p?q=1");
const OPTIONS = {
  userAgent: "TestAgent/1.0",
  maxBytes: 1024,
  signal: new AbortController().signal,
};

async function get(server: FakeServer, options: Partial<RequestOptions> = {}) {
  const answer = await requestOverConnection(server.conn, URL_, { ...OPTIONS, ...options });
  return { ...answer, text: decoder.decode(answer.body) };
}

function assertMalformed(error: unknown): true {
  assert.ok(error instanceof MalformedResponse, String(error));
  return true;
}

Deno.test("requestOverConnection() writes one GET and reads a Content-Length body", async () => {
  const server = fakeServer([
    "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: 5\r\n",
    "Set-Cookie: a=1\r\nSet-Cookie: b=2\r\n\r\nhelloIGNORED",
  ]);
  const answer = await get(server);
  assert.equal(answer.status, 200);
  assert.equal(answer.text, "hello");
  assert.equal(answer.truncated, false);
  assert.equal(answer.headers.get("content-type"), "text/html; charset=utf-8");
  assert.deepEqual(answer.headers.getSetCookie(), ["a=1", "b=2"]);
  assert.equal(
    await server.request(),
    "GET /p?q=1 HTTP/1.1\r\nHost: shop.example:8080\r\nUser-Agent: TestAgent/1.0\r\n" +
      "Accept: text/html,text/plain;q=0.9\r\nAccept-Encoding: gzip, deflate\r\n" +
      "Connection: close\r\n\r\n",
  );
  assert.ok(server.closed());
});

Deno.test("requestOverConnection() reads a chunked body, extensions and trailers, split anywhere", async () => {
  const response = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" +
    "5;name=value\r\nhello\r\n6\r\n world\r\nA\r\n, chunked!\r\n0\r\nX-Trailer: 1\r\n\r\n";
  for (const chunks of [[response], bytewise(response)]) {
    const answer = await get(fakeServer(chunks));
    assert.equal(answer.text, "hello world, chunked!");
    assert.equal(answer.truncated, false);
  }
});

Deno.test("requestOverConnection() reads until close without framing, LF line ends too", async () => {
  const answer = await get(fakeServer(["HTTP/1.0 200 OK\nContent-Type: text/plain\n\nabc", "def"]));
  assert.equal(answer.status, 200);
  assert.equal(answer.headers.get("content-type"), "text/plain");
  assert.equal(answer.text, "abcdef");
});

Deno.test("requestOverConnection() decodes gzip and deflate bodies", async () => {
  const text = "<p>compressed</p>".repeat(50);
  for (const format of ["gzip", "deflate"] as const) {
    const body = await compress(text, format);
    const answer = await get(fakeServer([
      `HTTP/1.1 200 OK\r\nContent-Encoding: ${format}\r\nContent-Length: ${body.length}\r\n\r\n`,
      body,
    ]));
    assert.equal(answer.text, text, format);
  }
});

Deno.test("requestOverConnection() stops at maxBytes of body and stops reading", async () => {
  const server = fakeServer([
    "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n",
    "x".repeat(30),
    "y".repeat(70),
  ]);
  const answer = await get(server, { maxBytes: 40 });
  assert.equal(answer.text, "x".repeat(30) + "y".repeat(10));
  assert.equal(answer.truncated, true);
  await server.cancelled;
  assert.ok(server.closed());

  const exact = await get(fakeServer(["HTTP/1.1 200 OK\r\n\r\n", "x".repeat(40)]), {
    maxBytes: 40,
  });
  assert.equal(exact.text.length, 40);
  assert.equal(exact.truncated, false, "a body of exactly maxBytes is whole");
});

Deno.test("requestOverConnection() counts maxBytes after decompression", async () => {
  const body = await compress("0".repeat(1_000_000), "gzip"); // a few KiB on the wire
  const server = fakeServer([
    "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n",
    `${body.length.toString(16)}\r\n`,
    body,
    "\r\n0\r\n\r\n",
  ]);
  const answer = await get(server, { maxBytes: 5000 });
  assert.equal(answer.body.length, 5000);
  assert.equal(answer.truncated, true);
  assert.ok(server.closed());
});

Deno.test("requestOverConnection() skips interim 1xx answers and reads no body for 204", async () => {
  const hinted = await get(fakeServer([
    "HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n",
    "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
  ]));
  assert.equal(hinted.status, 200);
  assert.equal(hinted.text, "ok");
  const empty = await get(fakeServer(["HTTP/1.1 204 No Content\r\n\r\n"], { hang: true }));
  assert.equal(empty.status, 204);
  assert.equal(empty.body.length, 0);
});

Deno.test("requestOverConnection() leaves a body unread when wantBody says no", async () => {
  const server = fakeServer(["HTTP/1.1 404 Not Found\r\n\r\n"], { hang: true });
  const answer = await get(server, { wantBody: (status) => status === 200 });
  assert.equal(answer.status, 404);
  assert.equal(answer.body.length, 0);
  assert.ok(server.closed());
});

Deno.test("requestOverConnection() calls headers over 64 KiB malformed", async () => {
  const oneHeader = fakeServer(["HTTP/1.1 200 OK\r\nX-Big: ", "a".repeat(70_000), "\r\n\r\n"]);
  await assert.rejects(get(oneHeader), assertMalformed);
  assert.ok(oneHeader.closed());
  const manyHeaders = fakeServer([
    "HTTP/1.1 200 OK\r\n",
    ...Array.from({ length: 2000 }, (_, i) => `X-Header-${i}: ${"v".repeat(30)}\r\n`),
    "\r\n",
  ]);
  await assert.rejects(get(manyHeaders), assertMalformed);
  const hints = "HTTP/1.1 103 Early Hints\r\n" + `Link: ${"l".repeat(40_000)}\r\n\r\n`;
  await assert.rejects(get(fakeServer([hints, hints, "HTTP/1.1 200 OK\r\n\r\n"])), assertMalformed);
});

Deno.test("requestOverConnection() refuses malformed answers", async () => {
  const cases: [string, (string | Uint8Array)[]][] = [
    ["no answer", []],
    ["not HTTP", ["SSH-2.0-OpenSSH_9.6\r\n\r\n"]],
    ["HTTP/2 status line", ["HTTP/2 200\r\n\r\n"]],
    ["closed in the headers", ["HTTP/1.1 200 OK\r\nContent-Len"]],
    ["a bad header line", ["HTTP/1.1 200 OK\r\nNo colon here\r\n\r\n"]],
    ["a folded header", ["HTTP/1.1 200 OK\r\nA: 1\r\n  continued\r\n\r\n"]],
    ["a short body", ["HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"]],
    ["a bad length", ["HTTP/1.1 200 OK\r\nContent-Length: ten\r\n\r\n"]],
    ["two lengths", ["HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd"]],
    ["a bad chunk size", ["HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"]],
    ["a chunk overrun", [
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n0\r\n\r\n",
    ]],
    ["a cut chunked body", ["HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab"]],
    ["a transfer coding", ["HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"]],
    ["a content coding", ["HTTP/1.1 200 OK\r\nContent-Encoding: br\r\n\r\nxyz"]],
    ["corrupt gzip", ["HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n\r\nnot gzip at all"]],
  ];
  for (const [name, chunks] of cases) {
    const server = fakeServer(chunks);
    await assert.rejects(get(server), assertMalformed, name);
    assert.ok(server.closed(), name);
  }
});

Deno.test("requestOverConnection() rejects with the abort reason and closes the connection", async () => {
  const controller = new AbortController();
  const server = fakeServer(["HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"], { hang: true });
  const pending = get(server, { signal: controller.signal });
  await server.request();
  const reason = new Error("deadline");
  controller.abort(reason);
  await assert.rejects(pending, (error) => error === reason);
  assert.ok(server.closed());

  const before = fakeServer([], { hang: true });
  await assert.rejects(get(before, { signal: AbortSignal.abort(reason) }), (e) => e === reason);
  assert.ok(before.closed());
});
