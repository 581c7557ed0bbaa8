import assert from "node:assert/strict";
import {
  CallBatcher,
  type ItemOutcome,
} from "../../../../supabase/functions/_shared/lib/call_batcher.ts";

/** A batcher whose batches are recorded and end when the test says. */
function recorded(options: { concurrency: number; maxSize: number }) {
  const batches: number[][] = [];
  const ends: Array<() => void> = [];
  const batcher = new CallBatcher<number, number>((items) => {
    batches.push(items);
    return new Promise<Array<ItemOutcome<number>>>((resolve) => {
      ends.push(() => resolve(items.map((n) => ({ ok: true, value: n * 10 }))));
    });
  }, options);
  return { batcher, batches, ends };
}

const tick = () => new Promise((resolve) => setTimeout(resolve, 0));

Deno.test("CallBatcher: a call on an idle batcher goes alone at once; calls made meanwhile go together when a batch ends", async () => {
  const { batcher, batches, ends } = recorded({ concurrency: 1, maxSize: 10 });
  const first = batcher.call(1);
  assert.deepEqual(batches, [[1]]);
  const waiting = [2, 3, 4].map((n) => batcher.call(n));
  await tick();
  assert.deepEqual(batches, [[1]], "nothing starts while the one batch allowed runs");
  ends[0]!();
  assert.equal(await first, 10);
  await tick();
  assert.deepEqual(batches, [[1], [2, 3, 4]]);
  ends[1]!();
  assert.deepEqual(await Promise.all(waiting), [20, 30, 40]);
});

Deno.test("CallBatcher: at most `concurrency` batches run, each of at most `maxSize` items", async () => {
  const { batcher, batches, ends } = recorded({ concurrency: 2, maxSize: 3 });
  const calls = Array.from({ length: 9 }, (_, i) => batcher.call(i));
  assert.deepEqual(batches, [[0], [1]]);
  ends[0]!();
  await tick();
  assert.deepEqual(batches.at(-1), [2, 3, 4]);
  ends[1]!();
  await tick();
  assert.deepEqual(batches.at(-1), [5, 6, 7]);
  ends[2]!();
  ends[3]!();
  await tick();
  assert.deepEqual(batches.at(-1), [8]);
  ends[4]!();
  assert.deepEqual(await Promise.all(calls), [0, 10, 20, 30, 40, 50, 60, 70, 80]);
});

Deno.test("CallBatcher: an item's failure fails its call alone; a failing batch fails each of its calls, and the next batch still runs", async () => {
  let fail = false;
  const batcher = new CallBatcher<number, number>(
    (items) => {
      if (fail) return Promise.reject(new Error("database down"));
      return Promise.resolve(
        items.map((n) =>
          n < 0
            ? { ok: false as const, error: new Error(`bad ${n}`) }
            : { ok: true as const, value: n }
        ),
      );
    },
    { concurrency: 1, maxSize: 10 },
  );
  const [good, bad] = await Promise.allSettled([batcher.call(1), batcher.call(-1)]);
  assert.deepEqual(good, { status: "fulfilled", value: 1 });
  assert.equal(bad?.status, "rejected");
  fail = true;
  await assert.rejects(batcher.call(2), /database down/);
  fail = false;
  assert.equal(await batcher.call(3), 3);
  assert.throws(
    () => new CallBatcher(() => Promise.resolve([]), { concurrency: 0, maxSize: 1 }),
    /at least 1/,
  );
});
