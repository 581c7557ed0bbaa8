import assert from "node:assert/strict";
import type pg from "pg";
import { createTestDatabase, sqlTest } from "../support/db.ts";
import { duplicateFixtures } from "../support/duplicates.ts";
import { asRole, createUser } from "../support/sql.ts";
import { rejectsWith, sqlState } from "./core_fixtures.ts";

const db = await createTestDatabase();

/** A group as the SQL functions return it. */
interface GroupRow {
  keep_id: string;
  duplicate_ids: string[];
  changed_ids?: string[];
}

const { listing, alert } = duplicateFixtures(db.pool);

/** Calls a duplicates function on `client` (default: the pool) and returns its groups. */
async function call(
  fn: string,
  client: pg.Pool | pg.PoolClient = db.pool,
): Promise<GroupRow[]> {
  const changed = fn.startsWith("public.archive")
    ? "archived_ids"
    : fn.startsWith("public.deactivate")
    ? "deactivated_ids"
    : null;
  const { rows } = await client.query<GroupRow>(
    `select keep_id::text, duplicate_ids::text[]${
      changed ? `, ${changed}::text[] as changed_ids` : ""
    } from ${fn}()`,
  );
  return rows;
}

/** The groups whose kept row is one of `ids` (other tests' rows share the database). */
function among(groups: GroupRow[], ids: string[]): GroupRow[] {
  return groups.filter((g) => ids.includes(g.keep_id));
}

async function snapshot(table: string): Promise<string> {
  const { rows } = await db.pool.query(`select * from public.${table} order by id`);
  return JSON.stringify(rows);
}

async function listingRow(id: string) {
  const { rows } = await db.pool.query<{ review_status: string; archived_reason: string | null }>(
    "select review_status, archived_reason from public.listings where id = $1",
    [id],
  );
  return rows[0]!;
}

sqlTest("normalize_listing_title() ignores case, punctuation and extra white space", async () => {
  const cases: Array<[string, string]> = [
    ["My SaaS", "my saas"],
    ["  my   SAAS  ", "my saas"],
    ["My\tSaaS!", "my saas"],
    ["My-SaaS", "my saas"],
    ["Shop: fast, cheap.", "shop fast cheap"],
  ];
  for (const [title, expected] of cases) {
    const { rows } = await db.pool.query("select public.normalize_listing_title($1) as key", [
      title,
    ]);
    assert.equal(rows[0].key, expected, title);
  }
});

sqlTest(
  "normalize_listing_url() drops scheme, www, host case, trailing slashes, query and fragment",
  async () => {
    const cases: Array<[string | null, string | null]> = [
      ["https://example.com/app", "example.com/app"],
      ["http://example.com/app", "example.com/app"],
      ["HTTPS://WWW.Example.COM/app/", "example.com/app"],
      ["https://www.example.com/app//?ref=x#top", "example.com/app"],
      ["https://example.com/", "example.com"],
      ["https://example.com", "example.com"],
      ["https://example.com:8080/app", "example.com:8080/app"],
      // The path keeps its case; a www inside the name is not a prefix.
      ["https://example.com/App", "example.com/App"],
      ["https://wwwexample.com", "wwwexample.com"],
      ["https://shop.www.example.com", "shop.www.example.com"],
      [null, null],
    ];
    for (const [url, expected] of cases) {
      const { rows } = await db.pool.query("select public.normalize_listing_url($1) as key", [url]);
      assert.equal(rows[0].key, expected, String(url));
    }
  },
);

sqlTest(
  "find_duplicate_listings() groups one seller's listings by normalized title and URL, and writes nothing",
  async () => {
    const seller = await createUser(db.pool);
    const other = await createUser(db.pool);
    const oldest = await listing(seller.id, "My SaaS", "https://example.com/app");
    const sameButCased = await listing(seller.id, "  my   SAAS ", "http://www.Example.com/app/");
    const sameWithQuery = await listing(seller.id, "My-SaaS!", "https://example.com/app?ref=1");
    // Not duplicates: another seller, another URL, no URL, already archived.
    const otherSeller = await listing(other.id, "My SaaS", "https://example.com/app");
    const otherUrl = await listing(seller.id, "My SaaS", "https://example.com/other");
    const noUrl1 = await listing(seller.id, "Untitled", null);
    const noUrl2 = await listing(seller.id, "Untitled", null);
    const archived = await listing(seller.id, "My SaaS", "https://example.com/app", "archived");
    const mine = [oldest, sameButCased, sameWithQuery, otherSeller, otherUrl, noUrl1, noUrl2];

    const before = await snapshot("listings");
    const groups = among(await call("public.find_duplicate_listings"), [...mine, archived]);
    assert.deepEqual(groups, [{ keep_id: oldest, duplicate_ids: [sameButCased, sameWithQuery] }]);
    assert.equal(await snapshot("listings"), before);
  },
);

sqlTest(
  "find_duplicate_listings() keeps the oldest approved listing of a group, else the oldest",
  async () => {
    const seller = await createUser(db.pool);
    const draft = await listing(seller.id, "Shop", "https://shop.example/", "draft");
    const pending = await listing(seller.id, "Shop", "https://shop.example/", "pending_review");
    const approved = await listing(seller.id, "shop", "http://shop.example", "approved");
    const approvedLater = await listing(seller.id, "SHOP", "https://shop.example", "approved");
    const rejected1 = await listing(seller.id, "Blog", "https://blog.example", "rejected");
    const rejected2 = await listing(seller.id, "Blog", "https://blog.example", "rejected");

    const groups = among(await call("public.find_duplicate_listings"), [
      draft,
      pending,
      approved,
      approvedLater,
      rejected1,
      rejected2,
    ]);
    const order = [approved, rejected1];
    assert.deepEqual(
      groups.sort((a, b) => order.indexOf(a.keep_id) - order.indexOf(b.keep_id)),
      [
        { keep_id: approved, duplicate_ids: [approvedLater, draft, pending] },
        { keep_id: rejected1, duplicate_ids: [rejected2] },
      ],
    );
  },
);

sqlTest(
  "archive_duplicate_listings() archives the approved duplicates with a reason, once; the rest stay",
  async () => {
    const seller = await createUser(db.pool);
    const keep = await listing(seller.id, "Tool", "https://tool.example/");
    const dup1 = await listing(seller.id, "tool", "http://www.tool.example");
    const dup2 = await listing(seller.id, "TOOL", "https://tool.example/#pricing");
    const draftDup = await listing(seller.id, "Tool", "https://tool.example", "draft");

    const first = among(await call("public.archive_duplicate_listings"), [keep]);
    assert.deepEqual(first, [{
      keep_id: keep,
      duplicate_ids: [dup1, dup2, draftDup],
      changed_ids: [dup1, dup2],
    }]);
    for (const id of [dup1, dup2]) {
      assert.deepEqual(await listingRow(id), {
        review_status: "archived",
        archived_reason: `duplicate of listing ${keep}`,
      });
    }
    assert.deepEqual(await listingRow(keep), { review_status: "approved", archived_reason: null });
    assert.deepEqual(await listingRow(draftDup), { review_status: "draft", archived_reason: null });

    // A rerun finds the draft copy again and changes nothing.
    const before = await snapshot("listings");
    const again = await call("public.archive_duplicate_listings");
    assert.deepEqual(again.flatMap((g) => g.changed_ids), []);
    assert.deepEqual(among(again, [keep]), [{
      keep_id: keep,
      duplicate_ids: [draftDup],
      changed_ids: [],
    }]);
    assert.equal(await snapshot("listings"), before);
  },
);

sqlTest(
  "listings.archived_reason: clients cannot write it; it exists only while archived",
  async () => {
    const seller = await createUser(db.pool);
    const admin = await createUser(db.pool, { admin: true });
    const keep = await listing(seller.id, "Game", "https://game.example");
    const dup = await listing(seller.id, "Game", "https://game.example");
    await call("public.archive_duplicate_listings");
    const before = await snapshot("listings");

    for (const who of [seller, admin]) {
      await asRole(db.pool, { role: "authenticated", userId: who.id }, async (c) => {
        await rejectsWith(
          c,
          "42501",
          "update public.listings set archived_reason = 'mine' where id = $1",
          [dup],
        );
        await rejectsWith(
          c,
          "42501",
          "update public.listings set archived_reason = null where id = $1",
          [dup],
        );
        await rejectsWith(
          c,
          "42501",
          `insert into public.listings (title, category, asking_price, archived_reason)
           values ('Mine', 'saas', 1, 'because')`,
        );
        // Reading it is fine: the seller sees why their listing was archived.
        const { rows } = await c.query(
          "select archived_reason from public.listings where id = $1",
          [dup],
        );
        assert.deepEqual(rows, [{ archived_reason: `duplicate of listing ${keep}` }]);
      });
    }
    await asRole(db.pool, { role: "anon" }, async (c) => {
      await rejectsWith(c, "42501", "update public.listings set archived_reason = 'x'");
    });
    assert.equal(await snapshot("listings"), before);

    // Not on a listing that is not archived, not even by the service connection.
    await assert.rejects(
      db.pool.query("update public.listings set archived_reason = 'x' where id = $1", [keep]),
      sqlState("23514"),
    );

    // The seller reopens the duplicate: the reason goes with the archiving.
    await asRole(db.pool, { role: "authenticated", userId: seller.id }, async (c) => {
      await c.query("update public.listings set review_status = 'draft' where id = $1", [dup]);
      await c.query("commit");
    });
    assert.deepEqual(await listingRow(dup), { review_status: "draft", archived_reason: null });
  },
);

sqlTest("the duplicates functions are the service connection's alone", async () => {
  const user = await createUser(db.pool, { admin: true });
  const functions = [
    "public.find_duplicate_listings()",
    "public.archive_duplicate_listings()",
    "public.find_duplicate_price_alerts()",
    "public.deactivate_duplicate_price_alerts()",
    "public.normalize_listing_title('x')",
    "public.normalize_listing_url('x')",
    "public.normalize_alert_words('{x}')",
  ];
  for (const fn of functions) {
    await asRole(db.pool, { role: "anon" }, async (c) => {
      await rejectsWith(c, "42501", `select * from ${fn}`, [], `anon: ${fn}`);
    });
    await asRole(db.pool, { role: "authenticated", userId: user.id }, async (c) => {
      await rejectsWith(c, "42501", `select * from ${fn}`, [], `authenticated: ${fn}`);
    });
    await asRole(db.pool, { role: "service_role" }, async (c) => {
      await c.query(`select * from ${fn}`);
    });
  }
});

sqlTest(
  "find_duplicate_price_alerts() groups a user's identical active alerts; deactivate keeps the oldest, once",
  async () => {
    const user = await createUser(db.pool);
    const other = await createUser(db.pool);
    const seller = await createUser(db.pool);
    const target = await listing(seller.id, "Watched", "https://watched.example");

    const onListing = await alert(user.id, { listingId: target, targetPrice: "500.00" });
    const onListingAgain = await alert(user.id, { listingId: target, targetPrice: "500" });
    const search = await alert(user.id, {
      category: "SaaS",
      maxPrice: "1000",
      currency: "USD",
      keywords: ["ai", "Tools"],
      channels: ["email", "in_app"],
    });
    const searchAgain = await alert(user.id, {
      category: " saas ",
      maxPrice: "1000.00",
      currency: "USD",
      keywords: ["tools", "AI", "ai"],
      channels: ["in_app", "email"],
    });
    // Not duplicates: another price, another user, other channels, other
    // keywords, another currency, an inactive alert.
    const otherPrice = await alert(user.id, { listingId: target, targetPrice: "400" });
    const otherUser = await alert(other.id, { listingId: target, targetPrice: "500" });
    const otherChannels = await alert(user.id, {
      category: "saas",
      maxPrice: "1000",
      currency: "USD",
      keywords: ["ai", "tools"],
      channels: ["email"],
    });
    const otherKeywords = await alert(user.id, {
      category: "saas",
      maxPrice: "1000",
      currency: "USD",
      keywords: ["ai"],
    });
    const otherCurrency = await alert(user.id, {
      category: "saas",
      maxPrice: "1000",
      currency: "EUR",
      keywords: ["ai", "tools"],
    });
    const inactive = await alert(user.id, {
      listingId: target,
      targetPrice: "500",
      active: false,
    });
    const mine = [
      onListing,
      onListingAgain,
      search,
      searchAgain,
      otherPrice,
      otherUser,
      otherChannels,
      otherKeywords,
      otherCurrency,
      inactive,
    ];
    const byKeep = (a: GroupRow, b: GroupRow) => mine.indexOf(a.keep_id) - mine.indexOf(b.keep_id);

    const before = await snapshot("price_alerts");
    const found = among(await call("public.find_duplicate_price_alerts"), mine).sort(byKeep);
    assert.deepEqual(found, [
      { keep_id: onListing, duplicate_ids: [onListingAgain] },
      { keep_id: search, duplicate_ids: [searchAgain] },
    ]);
    assert.equal(await snapshot("price_alerts"), before);

    const applied = among(await call("public.deactivate_duplicate_price_alerts"), mine)
      .sort(byKeep);
    assert.deepEqual(applied, [
      { keep_id: onListing, duplicate_ids: [onListingAgain], changed_ids: [onListingAgain] },
      { keep_id: search, duplicate_ids: [searchAgain], changed_ids: [searchAgain] },
    ]);
    const { rows } = await db.pool.query<{ id: string; active: boolean }>(
      "select id, active from public.price_alerts where id = any($1)",
      [mine],
    );
    const active = new Map(rows.map((r) => [r.id, r.active]));
    assert.deepEqual(mine.map((id) => active.get(id)), [
      true,
      false,
      true,
      false,
      true,
      true,
      true,
      true,
      true,
      false,
    ]);

    const rerunBefore = await snapshot("price_alerts");
    assert.deepEqual(await call("public.deactivate_duplicate_price_alerts"), []);
    assert.equal(await snapshot("price_alerts"), rerunBefore);
  },
);

/** Waits until a backend of this database waits for an advisory lock. */
async function someoneWaitsForAdvisoryLock(): Promise<void> {
  for (;;) {
    const { rows } = await db.pool.query(
      `select 1 from pg_locks l join pg_stat_activity a on a.pid = l.pid
       where l.locktype = 'advisory' and not l.granted and a.datname = current_database()`,
    );
    if (rows.length > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

sqlTest(
  "two concurrent runs of archive_duplicate_listings() and deactivate_duplicate_price_alerts() change each duplicate once",
  async () => {
    const seller = await createUser(db.pool);
    const keep = await listing(seller.id, "Race", "https://race.example");
    const dups = [
      await listing(seller.id, "Race", "https://race.example/"),
      await listing(seller.id, "race", "http://race.example"),
    ];
    const alertKeep = await alert(seller.id, { listingId: keep, targetPrice: "1" });
    const alertDup = await alert(seller.id, { listingId: keep, targetPrice: "1" });

    for (
      const [fn, expected] of [
        ["public.archive_duplicate_listings", dups],
        ["public.deactivate_duplicate_price_alerts", [alertDup]],
      ] as const
    ) {
      const first = await db.pool.connect();
      const second = await db.pool.connect();
      try {
        await first.query("begin");
        await second.query("begin");
        const firstRun = await call(fn, first);
        // The second run queues on the first's lock until the first commits.
        const secondRun = call(fn, second);
        await someoneWaitsForAdvisoryLock();
        await first.query("commit");
        const secondGroups = await secondRun;
        await second.query("commit");
        const changed = [...firstRun, ...secondGroups].flatMap((g) => g.changed_ids ?? [])
          .filter((id) => [...dups, alertDup].includes(id));
        assert.deepEqual(changed, [...expected], fn);
        assert.deepEqual(
          among(firstRun, [keep, alertKeep]).flatMap((g) => g.changed_ids),
          [...expected],
        );
        assert.deepEqual(secondGroups.flatMap((g) => g.changed_ids), [], fn);
      } finally {
        await first.query("rollback").catch(() => {});
        await second.query("rollback").catch(() => {});
        first.release();
        second.release();
      }
    }
    for (const id of dups) {
      assert.deepEqual(await listingRow(id), {
        review_status: "archived",
        archived_reason: `duplicate of listing ${keep}`,
      });
    }
  },
);
