import assert from "node:assert/strict";
import handler from "../../supabase/functions/cleanup-duplicates/handler.ts";
import { createTestDatabase, sqlTest } from "../support/db.ts";
import { testCredentials } from "../support/credentials.ts";
import { duplicateFixtures } from "../support/duplicates.ts";
import { invoke, testRuntime } from "../support/runtime.ts";
import { createUser } from "../support/sql.ts";

const db = await createTestDatabase();
const keys = await testCredentials();
const admin = await createUser(db.pool, { admin: true });

/** Every log line the function writes, parsed. */
const logLines: Array<Record<string, unknown>> = [];
const runtime = await testRuntime(db, { LOG_LEVEL: "info" }, {
  logSink: (_level, line) => logLines.push(JSON.parse(line)),
});

interface Group {
  keep: string;
  duplicates: string[];
}
interface KindResult {
  groups: Group[];
  changed: string[];
}
interface Answer {
  dryRun: boolean;
  results: { listings?: KindResult; price_alerts?: KindResult };
  error?: { code: string };
}

const { listing, alert } = duplicateFixtures(db.pool);

/** An active alert of `userId` on `listingId` at `targetPrice`. */
const listingAlert = (userId: string, listingId: string, targetPrice: string) =>
  alert(userId, { listingId, targetPrice });

/** An active saved search of `userId`. */
const searchAlert = (userId: string, category: string, keywords: string[]) =>
  alert(userId, { category, keywords, maxPrice: "5000", currency: "USD" });

/** The duplicates tables, for "nothing was written". */
async function snapshot(): Promise<string> {
  const listings = await db.pool.query("select * from public.listings order by id");
  const alerts = await db.pool.query("select * from public.price_alerts order by id");
  return JSON.stringify([listings.rows, alerts.rows]);
}

async function cleanup(body: unknown, token?: string) {
  return await invoke<Answer>(handler, runtime, {
    token: token ?? await keys.userToken(admin),
    body,
  });
}

/** The groups whose kept row is one of `ids` (other tests' rows share the database). */
function among(result: KindResult | undefined, ids: string[]): Group[] {
  return (result?.groups ?? []).filter((g) => ids.includes(g.keep));
}

/** A seller with a duplicated listing, and a user with a duplicated alert on it. */
async function duplicatedRows() {
  const seller = await createUser(db.pool);
  const user = await createUser(db.pool);
  const keep = await listing(seller.id, "Daily Planner", "https://planner.example/app");
  const dup = await listing(seller.id, "daily  planner", "http://www.planner.example/app/");
  const alertKeep = await listingAlert(user.id, keep, "900");
  const alertDup = await listingAlert(user.id, keep, "900.00");
  return { seller, user, keep, dup, alertKeep, alertDup };
}

async function status(id: string) {
  const { rows } = await db.pool.query(
    "select review_status, archived_reason from public.listings where id = $1",
    [id],
  );
  return rows[0];
}

async function active(id: string): Promise<boolean> {
  const { rows } = await db.pool.query("select active from public.price_alerts where id = $1", [
    id,
  ]);
  return rows[0].active;
}

sqlTest(
  "cleanup-duplicates: a dry run (the default) answers the groups of every kind and writes nothing",
  async () => {
    const { keep, dup, alertKeep, alertDup } = await duplicatedRows();
    const before = await snapshot();
    for (const body of [{}, { dryRun: true }]) {
      const res = await cleanup(body);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.dryRun, true);
      assert.deepEqual(among(res.body.results.listings, [keep]), [{ keep, duplicates: [dup] }]);
      assert.deepEqual(among(res.body.results.price_alerts, [alertKeep]), [{
        keep: alertKeep,
        duplicates: [alertDup],
      }]);
      assert.deepEqual(res.body.results.listings?.changed, []);
      assert.deepEqual(res.body.results.price_alerts?.changed, []);
    }
    assert.equal(await snapshot(), before);
  },
);

sqlTest(
  "cleanup-duplicates: a run archives and deactivates all but the oldest, with the reason; a rerun changes nothing",
  async () => {
    const seller = await createUser(db.pool);
    const other = await createUser(db.pool);
    const keep = await listing(seller.id, "Recipe Box", "https://recipes.example/");
    const variants = [
      await listing(seller.id, "RECIPE BOX", "https://recipes.example"), // case
      await listing(seller.id, "  Recipe   Box ", "https://recipes.example/"), // white space
      await listing(seller.id, "Recipe Box", "http://recipes.example/"), // http vs https
      await listing(seller.id, "Recipe Box", "https://www.recipes.example/"), // www
      await listing(seller.id, "Recipe Box", "https://recipes.example///"), // trailing slashes
    ];
    const draftCopy = await listing(seller.id, "Recipe box", "https://recipes.example", "draft");
    // Not duplicates of it: another seller's, another URL, no URL.
    const otherSeller = await listing(other.id, "Recipe Box", "https://recipes.example/");
    const otherUrl = await listing(seller.id, "Recipe Box", "https://recipes.example/v2");
    const noUrl = await listing(seller.id, "Recipe Box", null);
    const alertKeep = await searchAlert(other.id, "SaaS", ["Cooking", "box"]);
    const alertDup = await searchAlert(other.id, "saas", ["box", "cooking"]);
    const alertOther = await searchAlert(other.id, "saas", ["cooking"]);

    logLines.length = 0;
    const res = await cleanup({ dryRun: false });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.dryRun, false);
    const mine = [keep, otherSeller, otherUrl, noUrl];
    assert.deepEqual(among(res.body.results.listings, mine), [{
      keep,
      duplicates: [...variants, draftCopy],
    }]);
    const changed = res.body.results.listings?.changed ?? [];
    assert.deepEqual(changed.filter((id) => [...variants, draftCopy].includes(id)), variants);
    for (const id of variants) {
      assert.deepEqual(await status(id), {
        review_status: "archived",
        archived_reason: `duplicate of listing ${keep}`,
      });
    }
    // The draft copy is reported, not archived (the state machine archives approved listings only).
    for (const [id, review_status] of [[keep, "approved"], [draftCopy, "draft"]]) {
      assert.deepEqual(await status(id!), { review_status, archived_reason: null });
    }
    for (const id of [otherSeller, otherUrl, noUrl]) {
      assert.equal((await status(id)).review_status, "approved");
    }
    assert.deepEqual(among(res.body.results.price_alerts, [alertKeep, alertOther]), [{
      keep: alertKeep,
      duplicates: [alertDup],
    }]);
    assert.ok(res.body.results.price_alerts?.changed.includes(alertDup));
    assert.deepEqual(
      [await active(alertKeep), await active(alertDup), await active(alertOther)],
      [true, false, true],
    );

    // What changed is in the log, with the admin who asked.
    const archivedLine = logLines.find((l) => l.msg === "archived duplicate listings");
    assert.deepEqual(archivedLine?.changed, changed);
    assert.equal(archivedLine?.by, admin.id);
    const deactivatedLine = logLines.find((l) => l.msg === "deactivated duplicate price_alerts");
    assert.ok((deactivatedLine?.changed as string[]).includes(alertDup));

    const before = await snapshot();
    const rerun = await cleanup({ dryRun: false });
    assert.equal(rerun.status, 200);
    assert.deepEqual(rerun.body.results.listings?.changed, []);
    assert.deepEqual(rerun.body.results.price_alerts?.changed, []);
    assert.deepEqual(among(rerun.body.results.listings, [keep]), [{
      keep,
      duplicates: [draftCopy],
    }]);
    assert.equal(await snapshot(), before);
  },
);

sqlTest("cleanup-duplicates: kinds limits a run to the kinds asked for", async () => {
  const { keep, dup, alertKeep, alertDup } = await duplicatedRows();
  const res = await cleanup({ dryRun: false, kinds: ["price_alerts"] });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.deepEqual(Object.keys(res.body.results), ["price_alerts"]);
  assert.deepEqual(among(res.body.results.price_alerts, [alertKeep]), [{
    keep: alertKeep,
    duplicates: [alertDup],
  }]);
  assert.equal(await active(alertDup), false);
  assert.equal((await status(dup)).review_status, "approved");

  const listings = await cleanup({ dryRun: false, kinds: ["listings", "listings"] });
  assert.deepEqual(Object.keys(listings.body.results), ["listings"]);
  assert.ok(listings.body.results.listings?.changed.includes(dup));
  assert.equal((await status(keep)).review_status, "approved");
  assert.equal((await status(dup)).review_status, "archived");
});

sqlTest(
  "cleanup-duplicates: invalid input answers 400 invalid_input and writes nothing",
  async () => {
    await duplicatedRows();
    const before = await snapshot();
    for (
      const body of [
        { dryRun: false, kinds: ["offers"] },
        { dryRun: "yes" },
        { dryRun: false, kinds: [] },
        { dryRun: false, kinds: "listings" },
        { dryRun: 0 },
      ]
    ) {
      const res = await cleanup(body);
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.equal(res.body.error?.code, "invalid_input", JSON.stringify(body));
    }
    assert.equal(await snapshot(), before);
  },
);

sqlTest(
  "cleanup-duplicates: admins only — a signed-in user, the anon key and the service key get 403; no token 401; nothing written",
  async () => {
    const { seller } = await duplicatedRows();
    const before = await snapshot();
    for (
      const token of [await keys.userToken(seller), keys.anonKey, keys.serviceKey]
    ) {
      const res = await cleanup({ dryRun: false }, token);
      assert.equal(res.status, 403);
      assert.equal(res.body.error?.code, "forbidden");
    }
    const none = await invoke<Answer>(handler, runtime, { body: { dryRun: false } });
    assert.equal(none.status, 401);
    assert.equal(none.body.error?.code, "unauthorized");
    assert.equal(await snapshot(), before);
  },
);

sqlTest("cleanup-duplicates: two concurrent runs change each duplicate once", async () => {
  const { seller, keep, dup, alertDup } = await duplicatedRows();
  const extra = await listing(seller.id, "Daily Planner!", "https://planner.example/app?utm=1");
  const both = await Promise.all([cleanup({ dryRun: false }), cleanup({ dryRun: false })]);
  assert.deepEqual(both.map((r) => r.status), [200, 200], JSON.stringify(both.map((r) => r.body)));
  for (
    const [kind, expected] of [["listings", [dup, extra]], ["price_alerts", [alertDup]]] as const
  ) {
    const changed = both.map((r) => r.body.results[kind]?.changed ?? []);
    // One run changed them all, the other nothing.
    assert.deepEqual(changed.filter((ids) => ids.length > 0).length, 1, kind);
    assert.deepEqual(changed.flat().filter((id) => expected.includes(id)), [...expected], kind);
  }
  for (const id of [dup, extra]) {
    assert.deepEqual(await status(id), {
      review_status: "archived",
      archived_reason: `duplicate of listing ${keep}`,
    });
  }
  assert.equal(await active(alertDup), false);
});
