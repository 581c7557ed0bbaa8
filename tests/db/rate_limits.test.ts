import assert from "node:assert/strict";
import pg from "pg";
import { createTestDatabase, sqlTest } from "../support/db.ts";
import { asRole } from "../support/sql.ts";
import { rejectsWith, sqlState } from "./core_fixtures.ts";

const db = await createTestDatabase();

interface Decision {
  allowed: boolean;
  remaining: number;
  retry_after_seconds: number;
}

const TAKE = "select * from public.take_rate_limit($1, $2, $3)";

async function take(key: string, limit: number, windowSeconds: number): Promise<Decision> {
  const { rows } = await db.pool.query<Decision>(TAKE, [key, limit, windowSeconds]);
  assert.equal(rows.length, 1);
  return rows[0]!;
}

function uniqueKey(name: string): string {
  return `test:${name}:${crypto.randomUUID()}`;
}

sqlTest("take_rate_limit(): 20 concurrent calls with limit 5 allow exactly 5", async () => {
  // One connection per call, so the 20 really race for the row; a few rounds,
  // each on a new key (the first insert races too).
  const pool = new pg.Pool({ connectionString: db.url, max: 20 });
  try {
    for (let round = 0; round < 3; round++) {
      const key = uniqueKey(`concurrent-${round}`);
      const clients = await Promise.all(Array.from({ length: 20 }, () => pool.connect()));
      let decisions: Decision[];
      try {
        decisions = await Promise.all(
          clients.map((c) => c.query<Decision>(TAKE, [key, 5, 60]).then((r) => r.rows[0]!)),
        );
      } finally {
        for (const c of clients) c.release();
      }
      const allowed = decisions.filter((d) => d.allowed);
      const refused = decisions.filter((d) => !d.allowed);
      assert.equal(allowed.length, 5);
      assert.equal(refused.length, 15);
      assert.deepEqual(allowed.map((d) => d.remaining).sort(), [0, 1, 2, 3, 4]);
      assert.ok(allowed.every((d) => d.retry_after_seconds === 0));
      for (const d of refused) {
        assert.equal(d.remaining, 0);
        assert.ok(
          d.retry_after_seconds >= 1 && d.retry_after_seconds <= 60,
          `retry after ${d.retry_after_seconds}`,
        );
      }
      const { rows } = await db.pool.query("select hits from public.rate_limits where key = $1", [
        key,
      ]);
      assert.deepEqual(rows, [{ hits: 20 }], "refused calls are counted too");
    }
  } finally {
    await pool.end();
  }
});

sqlTest(
  "take_rate_limit(): a refusal keeps the window; a new window starts once it passed",
  async () => {
    const key = uniqueKey("window");
    assert.deepEqual(await take(key, 2, 60), {
      allowed: true,
      remaining: 1,
      retry_after_seconds: 0,
    });
    assert.deepEqual(await take(key, 2, 60), {
      allowed: true,
      remaining: 0,
      retry_after_seconds: 0,
    });
    const { rows: started } = await db.pool.query(
      "select window_started_at from public.rate_limits where key = $1",
      [key],
    );
    // Half the window later, still refused, and the window does not move.
    await db.pool.query(
      "update public.rate_limits set window_started_at = window_started_at - interval '30 seconds' where key = $1",
      [key],
    );
    const refused = await take(key, 2, 60);
    assert.equal(refused.allowed, false);
    assert.ok(
      refused.retry_after_seconds >= 29 && refused.retry_after_seconds <= 31,
      `retry after ${refused.retry_after_seconds}`,
    );
    const { rows: kept } = await db.pool.query(
      "select window_started_at, hits from public.rate_limits where key = $1",
      [key],
    );
    assert.equal(kept[0].hits, 3);
    assert.equal(
      kept[0].window_started_at.getTime(),
      started[0].window_started_at.getTime() - 30_000,
    );

    // The window has passed: a new one starts with this request.
    await db.pool.query(
      "update public.rate_limits set window_started_at = window_started_at - interval '31 seconds' where key = $1",
      [key],
    );
    assert.deepEqual(await take(key, 2, 60), {
      allowed: true,
      remaining: 1,
      retry_after_seconds: 0,
    });
    const { rows: fresh } = await db.pool.query(
      "select hits, window_started_at > now() - interval '10 seconds' as recent from public.rate_limits where key = $1",
      [key],
    );
    assert.deepEqual(fresh, [{ hits: 1, recent: true }]);
  },
);

sqlTest("take_rate_limit(): keys are independent", async () => {
  const a = uniqueKey("a");
  const b = uniqueKey("b");
  assert.equal((await take(a, 1, 60)).allowed, true);
  assert.equal((await take(a, 1, 60)).allowed, false);
  assert.deepEqual(await take(b, 1, 60), { allowed: true, remaining: 0, retry_after_seconds: 0 });
  assert.equal((await take(b, 1, 60)).allowed, false);
  assert.equal((await take(a, 1, 60)).allowed, false);
});

sqlTest("take_rate_limit(): invalid arguments raise 22023", async () => {
  const cases: [unknown, unknown, unknown][] = [
    ["", 5, 60],
    [null, 5, 60],
    ["x".repeat(513), 5, 60],
    ["k", 0, 60],
    ["k", -1, 60],
    ["k", null, 60],
    ["k", 5, 0],
    ["k", 5, -60],
    ["k", 5, null],
  ];
  for (const args of cases) {
    await assert.rejects(db.pool.query(TAKE, args), sqlState("22023"), JSON.stringify(args));
  }
  const { rows } = await db.pool.query(
    "select count(*)::int as n from public.rate_limits where key in ('', 'k')",
  );
  assert.equal(rows[0].n, 0);
});

sqlTest("prune_rate_limits() deletes only windows that ended long enough ago", async () => {
  const old = uniqueKey("old");
  const recent = uniqueKey("recent");
  const long = uniqueKey("long-window");
  await take(old, 5, 60);
  await take(recent, 5, 60);
  await take(long, 5, 3 * 86_400);
  await db.pool.query(
    `update public.rate_limits set window_started_at = now() - interval '2 days'
     where key = any($1)`,
    [[old, long]],
  );
  const { rows } = await db.pool.query<{ n: number }>("select public.prune_rate_limits() as n");
  assert.equal(rows[0]!.n, 1);
  const { rows: left } = await db.pool.query<{ key: string }>(
    "select key from public.rate_limits where key = any($1) order by key",
    [[old, recent, long]],
  );
  assert.deepEqual(left.map((r) => r.key), [recent, long].sort());
  const { rows: all } = await db.pool.query<{ n: number }>(
    "select public.prune_rate_limits(interval '0 seconds') as n",
  );
  assert.equal(all[0]!.n, 0, "the remaining windows have not ended");
  await assert.rejects(
    db.pool.query("select public.prune_rate_limits(interval '-1 day')"),
    sqlState("22023"),
  );
});

sqlTest("rate limits: anon and authenticated cannot call them or read the table", async () => {
  const key = uniqueKey("clients");
  await take(key, 5, 60);
  for (const role of ["anon", "authenticated"] as const) {
    await asRole(db.pool, {
      role,
      userId: role === "authenticated" ? crypto.randomUUID() : undefined,
    }, async (c) => {
      await rejectsWith(c, "42501", TAKE, [key, 5, 60]);
      await rejectsWith(c, "42501", "select public.prune_rate_limits()");
      await rejectsWith(c, "42501", "select * from public.rate_limits");
      await rejectsWith(c, "42501", "delete from public.rate_limits");
      await rejectsWith(
        c,
        "42501",
        "insert into public.rate_limits (key, window_started_at, window_seconds, hits) values ('x', now(), 1, 1)",
      );
    });
  }
  await asRole(db.pool, { role: "service_role" }, async (c) => {
    const { rows } = await c.query<Decision>(TAKE, [key, 5, 60]);
    assert.deepEqual(rows[0], { allowed: true, remaining: 3, retry_after_seconds: 0 });
    const pruned = await c.query("select public.prune_rate_limits() as n");
    assert.equal(pruned.rows[0].n, 0);
  });
  const { rows } = await db.pool.query<{ relrowsecurity: boolean }>(
    "select relrowsecurity from pg_class where oid = 'public.rate_limits'::regclass",
  );
  assert.equal(rows[0]!.relrowsecurity, true);
});
