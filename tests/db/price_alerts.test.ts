import assert from "node:assert/strict";
import type pg from "pg";
import { createTestDatabase, sqlTest } from "../support/db.ts";
import { asRole, createUser, type TestUser } from "../support/sql.ts";
import { createListing, rejectsWith, setSubscription, type TestListing } from "./core_fixtures.ts";

const db = await createTestDatabase();

const seller = await createUser(db.pool);
const alice = await createUser(db.pool);
const bob = await createUser(db.pool);
const admin = await createUser(db.pool, { admin: true });
const onSale = await createListing(db.pool, seller.id, "approved");
const inReview = await createListing(db.pool, seller.id, "pending_review");
const alicesOwn = await createListing(db.pool, alice.id, "approved");

interface AlertRow {
  id: string;
  user_id: string;
  listing_id: string | null;
  target_price: string | null;
  category: string | null;
  max_price: string | null;
  currency: string | null;
  keywords: string[];
  channels: string[];
  active: boolean;
  created_at: Date;
  updated_at: Date;
}

interface EventRow {
  id: string;
  alert_id: string;
  user_id: string;
  listing_id: string;
  channel: string;
  price: string;
  currency: string;
  status: string;
}

const as = (user: TestUser) => ({ role: "authenticated" as const, userId: user.id });

/** `user` saves an alert through RLS (as supabase-js would) and commits it. */
async function saveAlert(user: TestUser, fields: Record<string, unknown>): Promise<AlertRow> {
  const columns = Object.keys(fields);
  return await asRole(db.pool, as(user), async (c) => {
    const { rows } = await c.query<AlertRow>(
      `insert into public.price_alerts (${columns.join(", ")})
       values (${columns.map((_, i) => `$${i + 1}`).join(", ")}) returning *`,
      Object.values(fields),
    );
    await c.query("commit");
    return rows[0]!;
  });
}

/** An alert written by the service connection (no RLS), created `hoursAgo`. */
async function serviceAlert(
  userId: string,
  fields: Record<string, unknown>,
  hoursAgo = 2,
): Promise<AlertRow> {
  const all = { user_id: userId, ...fields };
  const columns = Object.keys(all);
  const { rows } = await db.pool.query<AlertRow>(
    `insert into public.price_alerts (${columns.join(", ")}, created_at)
     values (${columns.map((_, i) => `$${i + 1}`).join(", ")},
             now() - make_interval(hours => $${columns.length + 1}))
     returning *`,
    [...Object.values(all), hoursAgo],
  );
  return rows[0]!;
}

async function match(since = "now() - interval '1 day'") {
  const { rows } = await db.pool.query<
    { alerts_scanned: number; matches: number; events_created: number }
  >(`select * from public.match_price_alerts(${since})`);
  return rows[0]!;
}

async function eventsOf(alertId: string): Promise<EventRow[]> {
  const { rows } = await db.pool.query<EventRow>(
    `select id, alert_id, user_id, listing_id, channel, price::text as price, currency, status
     from public.price_alert_events where alert_id = $1 order by created_at, channel, price`,
    [alertId],
  );
  return rows;
}

/** A fresh approved listing of `sellerId` with the given fields (as the service connection). */
async function listing(
  sellerId: string,
  fields: Partial<
    { asking_price: string; category: string; currency: string; title: string; description: string }
  > = {},
): Promise<TestListing> {
  const created = await createListing(db.pool, sellerId, "approved");
  const columns = Object.keys(fields);
  if (columns.length > 0) {
    await db.pool.query(
      `update public.listings set ${columns.map((c, i) => `${c} = $${i + 2}`).join(", ")}
       where id = $1`,
      [created.id, ...Object.values(fields)],
    );
  }
  return created;
}

/** Moves a listing's updated_at into the past, around the triggers (as a restore would). */
async function changedAgo(listingId: string, hours: number): Promise<void> {
  const client = await db.pool.connect();
  try {
    await client.query("begin");
    await client.query("set local session_replication_role = replica");
    await client.query(
      "update public.listings set updated_at = now() - make_interval(hours => $2) where id = $1",
      [listingId, hours],
    );
    await client.query("commit");
  } finally {
    client.release();
  }
}

async function setPrice(listingId: string, price: string): Promise<void> {
  await db.pool.query("update public.listings set asking_price = $2 where id = $1", [
    listingId,
    price,
  ]);
}

// -----------------------------------------------------------------------------
// price_alerts: RLS, grants, normalization, the cap
// -----------------------------------------------------------------------------

sqlTest("price_alerts: users create, read, change and delete only their own alerts", async () => {
  const search = await saveAlert(alice, {
    category: "saas",
    max_price: "50000",
    currency: "USD",
  });
  assert.equal(search.user_id, alice.id, "user_id defaults to the caller");
  assert.deepEqual(search.channels, ["email", "in_app"], "both channels by default");
  assert.equal(search.active, true);
  const watch = await saveAlert(alice, { listing_id: onSale.id, target_price: "30000" });

  await asRole(db.pool, as(alice), async (c) => {
    const { rows } = await c.query<{ id: string }>("select id from public.price_alerts");
    assert.deepEqual(rows.map((r) => r.id).sort(), [search.id, watch.id].sort());
    const changed = await c.query(
      "update public.price_alerts set target_price = 25000, channels = '{in_app}' where id = $1",
      [watch.id],
    );
    assert.equal(changed.rowCount, 1);
  });
  await asRole(db.pool, as(bob), async (c) => {
    assert.equal((await c.query("select id from public.price_alerts")).rowCount, 0);
    const update = await c.query("update public.price_alerts set active = false");
    assert.equal(update.rowCount, 0, "bob's update reaches none of alice's alerts");
    assert.equal((await c.query("delete from public.price_alerts")).rowCount, 0);
  });
  await asRole(db.pool, { role: "anon" }, async (c) => {
    await rejectsWith(c, "42501", "select id from public.price_alerts");
    await rejectsWith(
      c,
      "42501",
      "insert into public.price_alerts (category, max_price, currency) values ('saas', 1, 'USD')",
    );
  });
  await asRole(db.pool, as(admin), async (c) => {
    const { rows } = await c.query("select id from public.price_alerts where user_id = $1", [
      alice.id,
    ]);
    assert.equal(rows.length, 2, "admins read every alert");
  });
  await asRole(db.pool, as(alice), async (c) => {
    assert.equal(
      (await c.query("delete from public.price_alerts where id = $1", [search.id])).rowCount,
      1,
    );
  });
});

sqlTest("price_alerts: a listing alert only on an approved listing of someone else", async () => {
  await asRole(db.pool, as(alice), async (c) => {
    const insert = "insert into public.price_alerts (listing_id, target_price) values ($1, 100)";
    await rejectsWith(c, "42501", insert, [inReview.id], "not approved");
    await rejectsWith(c, "42501", insert, [alicesOwn.id], "her own listing");
    await rejectsWith(c, "42501", insert, [crypto.randomUUID()], "no such listing");
    await c.query(insert, [onSale.id]);
  });
});

sqlTest("price_alerts: users cannot move an alert to another listing or user", async () => {
  const watch = await saveAlert(alice, { listing_id: onSale.id, target_price: "30000" });
  const other = await listing(seller.id);
  await asRole(db.pool, as(alice), async (c) => {
    await rejectsWith(c, "42501", "update public.price_alerts set listing_id = $2 where id = $1", [
      watch.id,
      other.id,
    ]);
    await rejectsWith(c, "42501", "update public.price_alerts set user_id = $2 where id = $1", [
      watch.id,
      bob.id,
    ]);
    await rejectsWith(
      c,
      "42501",
      "insert into public.price_alerts (user_id, category, max_price, currency) values ($1, 'saas', 1, 'USD')",
      [bob.id],
    );
  });
});

sqlTest("price_alerts: keywords are stored lower-case, trimmed, distinct and sorted", async () => {
  const search = await saveAlert(alice, {
    category: "  SaaS  ",
    max_price: "1000",
    currency: "usd",
    keywords: ["  Growth ", "SAAS", "saas", "", "   "],
    channels: ["in_app", "email", "in_app"],
  });
  assert.deepEqual(search.keywords, ["growth", "saas"]);
  assert.equal(search.category, "SaaS");
  assert.equal(search.currency, "USD");
  assert.deepEqual(search.channels, ["email", "in_app"]);
  await asRole(db.pool, as(alice), async (c) => {
    const { rows } = await c.query<{ keywords: string[] }>(
      "update public.price_alerts set keywords = '{\" B \",A}' where id = $1 returning keywords",
      [search.id],
    );
    assert.deepEqual(rows[0]?.keywords, ["a", "b"]);
  });
});

sqlTest("price_alerts: invalid alerts are refused (23514)", async () => {
  await asRole(db.pool, as(alice), async (c) => {
    const cases: Array<[string, unknown[]]> = [
      // Both kinds at once, and neither.
      [
        "insert into public.price_alerts (listing_id, target_price, category) values ($1, 1, 'saas')",
        [onSale.id],
      ],
      ["insert into public.price_alerts (active) values (true)", []],
      // A saved search without its currency or maximum.
      ["insert into public.price_alerts (category, max_price) values ('saas', 1)", []],
      [
        "insert into public.price_alerts (category, max_price, currency) values ('saas', -1, 'USD')",
        [],
      ],
      [
        "insert into public.price_alerts (category, max_price, currency) values ('saas', 1, 'US')",
        [],
      ],
      ["insert into public.price_alerts (category, max_price, currency) values ('', 1, 'USD')", []],
      [
        "insert into public.price_alerts (listing_id, target_price) values ($1, -5)",
        [onSale.id],
      ],
      [
        "insert into public.price_alerts (category, max_price, currency, channels) values ('saas', 1, 'USD', '{sms}')",
        [],
      ],
      [
        "insert into public.price_alerts (category, max_price, currency, channels) values ('saas', 1, 'USD', '{}')",
        [],
      ],
      [
        "insert into public.price_alerts (category, max_price, currency, keywords) values ('saas', 1, 'USD', $1)",
        [["x".repeat(51)]],
      ],
      [
        "insert into public.price_alerts (category, max_price, currency, keywords) values ('saas', 1, 'USD', $1)",
        [Array.from({ length: 11 }, (_, i) => `word${i}`)],
      ],
    ];
    for (const [sql, params] of cases) await rejectsWith(c, "23514", sql, params, sql);
  });
});

sqlTest(
  "price_alerts: at most 50 active alerts per user (PT409); inactive ones do not count",
  async () => {
    const carol = await createUser(db.pool);
    await db.pool.query(
      `insert into public.price_alerts (user_id, category, max_price, currency)
     select $1, 'cat' || g, 100, 'USD' from generate_series(1, 50) g`,
      [carol.id],
    );
    await asRole(db.pool, as(carol), async (c) => {
      await rejectsWith(
        c,
        "PT409",
        "insert into public.price_alerts (category, max_price, currency) values ('more', 1, 'USD')",
      );
      await c.query(
        "insert into public.price_alerts (category, max_price, currency, active) values ('later', 1, 'USD', false)",
      );
      await rejectsWith(
        c,
        "PT409",
        "update public.price_alerts set active = true where category = 'later'",
        [],
        "reactivating counts too",
      );
      // Switching one off makes room.
      await c.query("update public.price_alerts set active = false where category = 'cat1'");
      await c.query("update public.price_alerts set active = true where category = 'later'");
      // Changing an active alert is not a new one.
      await c.query("update public.price_alerts set max_price = 200 where category = 'cat2'");
    });
    const error = await asRole(db.pool, as(carol), (c) =>
      c.query(
        "insert into public.price_alerts (category, max_price, currency) values ('more', 1, 'USD')",
      ).then(() => null, (e: Error) => e.message));
    assert.match(error ?? "", /50 active price alerts, the most allowed/);
  },
);

sqlTest("price_alerts: updated_at moves on every change", async () => {
  const search = await serviceAlert(alice.id, {
    category: "saas",
    max_price: "10",
    currency: "USD",
  });
  await db.pool.query(
    "update public.price_alerts set updated_at = now() - interval '1 hour' where id = $1",
    [search.id],
  );
  const { rows } = await db.pool.query<{ fresh: boolean }>(
    `update public.price_alerts set max_price = 20 where id = $1
     returning updated_at > now() - interval '1 minute' as fresh`,
    [search.id],
  );
  assert.equal(rows[0]?.fresh, true);
});

// -----------------------------------------------------------------------------
// match_price_alerts(): the matching rules
// -----------------------------------------------------------------------------

sqlTest(
  "match_price_alerts(): a listing alert matches at or below its target, per channel",
  async () => {
    const l = await listing(seller.id, { asking_price: "1000.00" });
    const at = await serviceAlert(alice.id, { listing_id: l.id, target_price: "1000.00" });
    const above = await serviceAlert(bob.id, { listing_id: l.id, target_price: "999.99" });
    const inApp = await serviceAlert(bob.id, {
      listing_id: l.id,
      target_price: "5000",
      channels: ["in_app"],
    });
    await match();
    const events = await eventsOf(at.id);
    assert.deepEqual(
      events.map((e) => [e.channel, e.price, e.currency, e.status, e.user_id, e.listing_id]),
      [
        ["email", "1000.00", "USD", "pending", alice.id, l.id],
        ["in_app", "1000.00", "USD", "pending", alice.id, l.id],
      ],
    );
    assert.equal((await eventsOf(above.id)).length, 0, "the price is above the target");
    assert.deepEqual((await eventsOf(inApp.id)).map((e) => e.channel), ["in_app"]);

    // A rerun inserts nothing; a further drop is a new event; back up, nothing.
    const again = await match();
    assert.equal(again.events_created, 0);
    assert.ok(again.matches >= 2);
    await setPrice(l.id, "900.00");
    const dropped = await match();
    assert.ok(dropped.events_created >= 4, JSON.stringify(dropped));
    assert.deepEqual((await eventsOf(at.id)).map((e) => e.price), [
      "1000.00",
      "1000.00",
      "900.00",
      "900.00",
    ]);
    assert.equal((await eventsOf(above.id)).length, 2, "900 is below bob's 999.99");
    await setPrice(l.id, "950.00");
    await match();
    assert.equal((await eventsOf(at.id)).length, 6, "950 is a price not told before");
    await setPrice(l.id, "900.00");
    await match();
    assert.equal((await eventsOf(at.id)).length, 6, "900 was told already");
  },
);

sqlTest(
  "match_price_alerts(): a listing alert matches whenever its listing's price is low, even an old one",
  async () => {
    const l = await listing(seller.id, { asking_price: "10.00" });
    await changedAgo(l.id, 24 * 30);
    const watch = await serviceAlert(alice.id, { listing_id: l.id, target_price: "10.00" });
    await match("now()");
    assert.equal((await eventsOf(watch.id)).length, 2, "listing alerts are not incremental");
  },
);

sqlTest(
  "match_price_alerts(): a saved search matches category, currency, price and every keyword",
  async () => {
    const search = await serviceAlert(alice.id, {
      category: "Content",
      max_price: "5000",
      currency: "EUR",
      keywords: ["recipe", "blog"],
      channels: ["in_app"],
    });
    const hit = await listing(seller.id, {
      category: "content",
      currency: "EUR",
      asking_price: "5000.00",
      title: "Recipe BLOG with newsletter",
      description: "Cooking",
    });
    const inDescription = await listing(seller.id, {
      category: "CONTENT",
      currency: "EUR",
      asking_price: "10.00",
      title: "A blog",
      description: "About RECIPES",
    });
    const misses = [
      // Another category, another currency, too dear, a keyword missing.
      await listing(seller.id, {
        category: "saas",
        currency: "EUR",
        asking_price: "10",
        title: "recipe blog",
      }),
      await listing(seller.id, {
        category: "content",
        currency: "USD",
        asking_price: "10",
        title: "recipe blog",
      }),
      await listing(seller.id, {
        category: "content",
        currency: "EUR",
        asking_price: "5000.01",
        title: "recipe blog",
      }),
      await listing(seller.id, {
        category: "content",
        currency: "EUR",
        asking_price: "10",
        title: "recipe site",
        description: "no such word",
      }),
    ];
    await match();
    const matched = (await eventsOf(search.id)).map((e) => e.listing_id).sort();
    assert.deepEqual(matched, [hit.id, inDescription.id].sort());
    for (const miss of misses) assert.ok(!matched.includes(miss.id));
  },
);

sqlTest(
  "match_price_alerts(): a saved search matches only listings changed after it was saved",
  async () => {
    const before = await listing(seller.id, { category: "apps", asking_price: "100" });
    // Saved now: the listing above changed before it.
    const search = await serviceAlert(bob.id, {
      category: "apps",
      max_price: "1000",
      currency: "USD",
    }, 0);
    await match();
    assert.equal((await eventsOf(search.id)).length, 0, "the back catalogue is not told");
    await setPrice(before.id, "90");
    const after = await listing(seller.id, { category: "apps", asking_price: "100" });
    await match();
    assert.deepEqual(
      (await eventsOf(search.id)).map((e) => e.listing_id).sort(),
      [before.id, before.id, after.id, after.id].sort(),
      "a price change and a new listing since",
    );
  },
);

sqlTest(
  "match_price_alerts(): saved searches look only at listings changed since p_since",
  async () => {
    const search = await serviceAlert(bob.id, {
      category: "games",
      max_price: "1000",
      currency: "USD",
    }, 48);
    const old = await listing(seller.id, { category: "games", asking_price: "100" });
    await changedAgo(old.id, 30);
    const recent = await listing(seller.id, { category: "games", asking_price: "100" });
    await changedAgo(recent.id, 1);
    await match("now() - interval '2 hours'");
    assert.deepEqual(
      [...new Set((await eventsOf(search.id)).map((e) => e.listing_id))],
      [recent.id],
    );
  },
);

sqlTest(
  "match_price_alerts(): own listings, inactive alerts and unapproved listings never match",
  async () => {
    const own = await listing(alice.id, { category: "tools", asking_price: "10" });
    const ownSearch = await serviceAlert(alice.id, {
      category: "tools",
      max_price: "100",
      currency: "USD",
    });
    const ownWatch = await serviceAlert(alice.id, { listing_id: own.id, target_price: "100" });
    const inactive = await serviceAlert(bob.id, {
      category: "tools",
      max_price: "100",
      currency: "USD",
      active: false,
    });
    const inactiveWatch = await serviceAlert(bob.id, {
      listing_id: own.id,
      target_price: "100",
      active: false,
    });
    const hidden = await createListing(db.pool, seller.id, "pending_review");
    await db.pool.query(
      "update public.listings set category = 'tools', asking_price = 10 where id = $1",
      [hidden.id],
    );
    const archived = await createListing(db.pool, seller.id, "archived");
    const watchHidden = await serviceAlert(bob.id, { listing_id: hidden.id, target_price: "100" });
    const watchArchived = await serviceAlert(bob.id, {
      listing_id: archived.id,
      target_price: "1000000",
    });
    const bobsSearch = await serviceAlert(bob.id, {
      category: "tools",
      max_price: "100",
      currency: "USD",
    });
    await match();
    for (
      const alert of [ownSearch, ownWatch, inactive, inactiveWatch, watchHidden, watchArchived]
    ) {
      assert.equal((await eventsOf(alert.id)).length, 0, JSON.stringify(alert));
    }
    assert.deepEqual(
      [...new Set((await eventsOf(bobsSearch.id)).map((e) => e.listing_id))],
      [own.id],
      "alice's listing matches bob, not the pending one",
    );
  },
);

sqlTest(
  "match_price_alerts(): counts the active alerts, the pairs matched and the events created",
  async () => {
    const { rows } = await db.pool.query<{ n: number }>(
      "select count(*)::integer as n from public.price_alerts where active",
    );
    const l = await listing(seller.id, { category: "count", asking_price: "1" });
    await serviceAlert(alice.id, { listing_id: l.id, target_price: "1", channels: ["email"] });
    const result = await match();
    assert.equal(result.alerts_scanned, rows[0]!.n + 1);
    const rerun = await match();
    assert.equal(rerun.events_created, 0);
    assert.equal(rerun.matches, result.matches);
  },
);

/** Runs `fn` with `plan` hiding `field`, then restores the seeded flag. */
async function hiding<T>(field: string, plan: "free" | "pro", fn: () => Promise<T>): Promise<T> {
  const { rows } = await db.pool.query<{ seeded: boolean }>(
    `select ${plan} as seeded from public.blurred_fields where field_key = $1`,
    [field],
  );
  await db.pool.query(`update public.blurred_fields set ${plan} = true where field_key = $1`, [
    field,
  ]);
  try {
    return await fn();
  } finally {
    await db.pool.query(`update public.blurred_fields set ${plan} = $2 where field_key = $1`, [
      field,
      rows[0]!.seeded,
    ]);
  }
}

sqlTest(
  "match_price_alerts(): a price the user's plan hides matches nothing, until the plan shows it",
  async () => {
    const pro = await createUser(db.pool);
    await setSubscription(db.pool, pro.id, "pro");
    const l = await listing(seller.id, { category: "blurred", asking_price: "300.00" });
    const alerts = {
      freeWatch: await serviceAlert(alice.id, { listing_id: l.id, target_price: "300" }),
      freeSearch: await serviceAlert(alice.id, {
        category: "blurred",
        max_price: "300",
        currency: "USD",
      }),
      proWatch: await serviceAlert(pro.id, { listing_id: l.id, target_price: "300" }),
      proSearch: await serviceAlert(pro.id, {
        category: "blurred",
        max_price: "300",
        currency: "USD",
      }),
    };
    const counted = await hiding("asking_price", "free", async () => {
      const hidden = await match();
      const shown = await match();
      return { hidden, shown };
    });
    for (const alert of [alerts.freeWatch, alerts.freeSearch]) {
      assert.deepEqual(await eventsOf(alert.id), [], "alice is on the free plan");
    }
    for (const alert of [alerts.proWatch, alerts.proSearch]) {
      assert.deepEqual((await eventsOf(alert.id)).map((e) => [e.channel, e.price]), [
        ["email", "300.00"],
        ["in_app", "300.00"],
      ]);
    }
    assert.equal(counted.shown.events_created, 0);
    assert.equal(counted.shown.matches, counted.hidden.matches, "a hidden pair is no match");

    // Once the free plan shows prices again, the listing alert matches at the
    // next run; the saved search when the listing next changes (a later run
    // looks only at listings changed since the one before).
    await match("now()");
    assert.equal((await eventsOf(alerts.freeWatch.id)).length, 2);
    assert.equal((await eventsOf(alerts.freeSearch.id)).length, 0);
    await setPrice(l.id, "299.00");
    await match();
    assert.deepEqual((await eventsOf(alerts.freeSearch.id)).map((e) => e.price), [
      "299.00",
      "299.00",
    ]);
  },
);

sqlTest(
  "match_price_alerts(): a keyword found only in a description the user's plan hides does not match",
  async () => {
    const pro = await createUser(db.pool);
    await setSubscription(db.pool, pro.id, "pro");
    const l = await listing(seller.id, {
      category: "hushed",
      asking_price: "50.00",
      title: "A plain title",
      description: "It has a secret ingredient",
    });
    const inTitle = await listing(seller.id, {
      category: "hushed",
      asking_price: "50.00",
      title: "The secret shop",
      description: "Nothing to see",
    });
    const search = (userId: string) =>
      serviceAlert(userId, {
        category: "hushed",
        max_price: "100",
        currency: "USD",
        keywords: ["secret"],
      });
    const freeSearch = await search(alice.id);
    const proSearch = await search(pro.id);
    await hiding("description", "free", () => match());
    assert.deepEqual(
      [...new Set((await eventsOf(freeSearch.id)).map((e) => e.listing_id))],
      [inTitle.id],
      "the title is always searched; the hidden description is not",
    );
    assert.deepEqual(
      [...new Set((await eventsOf(proSearch.id)).map((e) => e.listing_id))].sort(),
      [l.id, inTitle.id].sort(),
    );
  },
);

sqlTest(
  "price_alerts_since(): a day back before the first run, then the last run's start minus 10 minutes",
  async () => {
    const client = await db.pool.connect();
    try {
      await client.query("begin");
      const back = async () =>
        (await client.query<{ s: number }>(
          "select extract(epoch from now() - public.price_alerts_since())::integer as s",
        )).rows[0]?.s;
      assert.equal(await back(), 24 * 3600);
      await client.query(
        `insert into public.price_alert_runs (status, since, started_at, finished_at, duration_ms)
       values ('succeeded', now() - interval '2 days', now() - interval '1 hour', now(), 10),
              ('failed', now(), now() - interval '5 minutes', now(), 10),
              ('partial', now(), now() - interval '3 hours', now(), 10)`,
      );
      assert.equal(await back(), 70 * 60, "the last run that matched; a failed one does not count");
    } finally {
      await client.query("rollback");
      client.release();
    }
  },
);

// -----------------------------------------------------------------------------
// price_alert_events: RLS and the state machine
// -----------------------------------------------------------------------------

async function pendingEvent(user: TestUser = alice): Promise<EventRow> {
  const l = await listing(seller.id, { asking_price: "5" });
  const watch = await serviceAlert(user.id, {
    listing_id: l.id,
    target_price: "5",
    channels: ["in_app"],
  });
  await match();
  return (await eventsOf(watch.id))[0]!;
}

sqlTest("price_alert_events: users read their own events and write none", async () => {
  const event = await pendingEvent(alice);
  await asRole(db.pool, as(alice), async (c) => {
    const { rows } = await c.query<{ id: string }>(
      "select id from public.price_alert_events where id = $1",
      [event.id],
    );
    assert.equal(rows.length, 1);
    await rejectsWith(c, "42501", "update public.price_alert_events set status = 'sent'");
    await rejectsWith(c, "42501", "delete from public.price_alert_events");
    await rejectsWith(
      c,
      "42501",
      `insert into public.price_alert_events (alert_id, user_id, listing_id, channel, price, currency)
       select alert_id, user_id, listing_id, 'email', 1, 'USD' from public.price_alert_events limit 1`,
    );
  });
  await asRole(db.pool, as(bob), async (c) => {
    const { rows } = await c.query("select id from public.price_alert_events where id = $1", [
      event.id,
    ]);
    assert.equal(rows.length, 0, "another user's events are invisible");
  });
  await asRole(db.pool, { role: "anon" }, async (c) => {
    await rejectsWith(c, "42501", "select id from public.price_alert_events");
  });
  await asRole(db.pool, as(admin), async (c) => {
    const { rows } = await c.query("select id from public.price_alert_events where id = $1", [
      event.id,
    ]);
    assert.equal(rows.length, 1);
  });
});

sqlTest(
  "price_alert_events: pending -> sent | failed | suppressed, failed -> sent, nothing else",
  async () => {
    const set = async (client: pg.PoolClient, id: string, status: string) =>
      await client.query("update public.price_alert_events set status = $2 where id = $1", [
        id,
        status,
      ]);
    const client = await db.pool.connect();
    try {
      const [a, b, c] = [await pendingEvent(), await pendingEvent(), await pendingEvent()];
      await client.query("begin");
      await set(client, a.id, "sent");
      const { rows } = await client.query<{ delivered: boolean }>(
        "select delivered_at is not null as delivered from public.price_alert_events where id = $1",
        [a.id],
      );
      assert.equal(rows[0]?.delivered, true, "sent stamps delivered_at");
      await rejectsWith(
        client,
        "PT409",
        "update public.price_alert_events set status = 'pending' where id = $1",
        [a.id],
      );
      await rejectsWith(
        client,
        "PT409",
        "update public.price_alert_events set status = 'failed' where id = $1",
        [a.id],
      );
      await set(client, b.id, "failed");
      await rejectsWith(
        client,
        "PT409",
        "update public.price_alert_events set status = 'suppressed' where id = $1",
        [b.id],
      );
      await set(client, b.id, "sent");
      await set(client, c.id, "suppressed");
      await rejectsWith(
        client,
        "PT409",
        "update public.price_alert_events set status = 'sent' where id = $1",
        [c.id],
      );
      await rejectsWith(
        client,
        "PT409",
        "update public.price_alert_events set price = 1 where id = $1",
        [c.id],
      );
      await rejectsWith(
        client,
        "PT409",
        "update public.price_alert_events set listing_id = $2 where id = $1",
        [
          c.id,
          onSale.id,
        ],
      );
      await rejectsWith(
        client,
        "PT409",
        `insert into public.price_alert_events (alert_id, user_id, listing_id, channel, price, currency, status)
       select alert_id, user_id, listing_id, channel, 1, currency, 'sent'
       from public.price_alert_events where id = $1`,
        [c.id],
      );
      await rejectsWith(
        client,
        "23505",
        `insert into public.price_alert_events (alert_id, user_id, listing_id, channel, price, currency)
       select alert_id, user_id, listing_id, channel, price, currency
       from public.price_alert_events where id = $1`,
        [c.id],
      );
    } finally {
      await client.query("rollback");
      client.release();
    }
  },
);

// -----------------------------------------------------------------------------
// price_alert_runs
// -----------------------------------------------------------------------------

sqlTest(
  "price_alert_runs: admins read them; users and anon do not; nobody but the service writes",
  async () => {
    await db.pool.query(
      "insert into public.price_alert_runs (since) values (now() - interval '1 day')",
    );
    await asRole(db.pool, as(admin), async (c) => {
      assert.ok(((await c.query("select id from public.price_alert_runs")).rowCount ?? 0) >= 1);
      await rejectsWith(c, "42501", "insert into public.price_alert_runs (since) values (now())");
    });
    await asRole(db.pool, as(alice), async (c) => {
      assert.equal((await c.query("select id from public.price_alert_runs")).rowCount, 0);
      await rejectsWith(c, "42501", "update public.price_alert_runs set matches = 1");
    });
    await asRole(db.pool, { role: "anon" }, async (c) => {
      await rejectsWith(c, "42501", "select id from public.price_alert_runs");
    });
  },
);

sqlTest("matching and reconciling are for the service role only", async () => {
  for (
    const sql of [
      "select * from public.match_price_alerts(now())",
      "select * from public.reconcile_price_alert_emails()",
      "select public.price_alerts_since()",
    ]
  ) {
    for (const identity of [as(alice), { role: "anon" as const }]) {
      await asRole(db.pool, identity, (c) => rejectsWith(c, "42501", sql));
    }
  }
});
