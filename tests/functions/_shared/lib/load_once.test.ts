import assert from "node:assert/strict";
import { loadOnce } from "../../../../supabase/functions/_shared/lib/load_once.ts";

Deno.test("loadOnce() calls its loader once for any number of calls, at once or later", async () => {
  let calls = 0;
  const load = loadOnce(() => Promise.resolve(++calls));
  assert.deepEqual(await Promise.all([load(), load(), load()]), [1, 1, 1]);
  assert.equal(await load(), 1);
  assert.equal(calls, 1);
});

Deno.test("loadOnce() forgets a failed load: the next call tries again", async () => {
  let calls = 0;
  const load = loadOnce(() =>
    ++calls === 1 ? Promise.reject(new Error("not yet")) : Promise.resolve(calls)
  );
  await assert.rejects(load(), /not yet/);
  assert.equal(await load(), 2);
  assert.equal(await load(), 2);
  assert.equal(calls, 2);
});
