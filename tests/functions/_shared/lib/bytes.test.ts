import assert from "node:assert/strict";
import { concatBytes, readAtMost } from "../../../../supabase/functions/_shared/lib/bytes.ts";

/** A stream of `chunks` that records whether it was cancelled. */
function chunked(...chunks: number[][]) {
  const state = { cancelled: false, pulled: 0 };
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      const next = chunks[state.pulled++];
      if (next === undefined) controller.close();
      else controller.enqueue(new Uint8Array(next));
    },
    cancel() {
      state.cancelled = true;
    },
  }, { highWaterMark: 0 });
  return { stream, state };
}

Deno.test("concatBytes() joins parts in order, with or without their total", () => {
  const parts = [new Uint8Array([1, 2]), new Uint8Array([]), new Uint8Array([3])];
  assert.deepEqual(concatBytes(parts), new Uint8Array([1, 2, 3]));
  assert.deepEqual(concatBytes(parts, 3), new Uint8Array([1, 2, 3]));
  assert.deepEqual(concatBytes([]), new Uint8Array());
});

Deno.test("readAtMost() reads a stream of exactly the limit whole", async () => {
  const { stream, state } = chunked([1, 2], [3, 4]);
  assert.deepEqual(await readAtMost(stream, 4), {
    bytes: new Uint8Array([1, 2, 3, 4]),
    truncated: false,
  });
  assert.equal(state.cancelled, false);
});

Deno.test("readAtMost() stops past the limit, keeps the first bytes and cancels the rest", async () => {
  const { stream, state } = chunked([1, 2], [3, 4, 5], [6]);
  assert.deepEqual(await readAtMost(stream, 3), {
    bytes: new Uint8Array([1, 2, 3]),
    truncated: true,
  });
  assert.equal(state.pulled, 2, "nothing is read after the chunk that went past the limit");
  assert.equal(state.cancelled, true);
});

Deno.test("readAtMost() leaves the rest unread, not cancelled, when asked", async () => {
  const { stream, state } = chunked([1, 2, 3], [4]);
  const read = await readAtMost(stream, 2, { cancelRest: false });
  assert.deepEqual(read, { bytes: new Uint8Array([1, 2]), truncated: true });
  assert.equal(state.cancelled, false);
  assert.equal(stream.locked, false, "the stream is free for whoever reads the rest");
});

Deno.test("readAtMost() throws the stream's error", async () => {
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(new Uint8Array([1]));
      controller.error(new Error("connection reset"));
    },
  });
  await assert.rejects(readAtMost(stream, 10), /connection reset/);
});
