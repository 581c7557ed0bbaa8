import assert from "node:assert/strict";
import { createTestDatabase, sqlTest } from "../support/db.ts";
import { asRole, createUser } from "../support/sql.ts";
import { createListing, rejectsWith, sqlState } from "./core_fixtures.ts";

const db = await createTestDatabase();

const seller = await createUser(db.pool);
const buyer = await createUser(db.pool);
const stranger = await createUser(db.pool);
const admin = await createUser(db.pool, { admin: true });
const listing = await createListing(db.pool, seller.id, "approved");

async function createDeal(buyerId = buyer.id, sellerId = seller.id): Promise<string> {
  const { rows } = await db.pool.query<{ id: string }>(
    `insert into public.deals (listing_id, buyer_id, seller_id, amount, currency)
     values ($1, $2, $3, 25000, 'USD') returning id`,
    [listing.id, buyerId, sellerId],
  );
  return rows[0]!.id;
}

sqlTest(
  "deals: the seller is the listing's seller and never the buyer; amounts and currencies are checked",
  async () => {
    await assert.rejects(createDeal(buyer.id, stranger.id), sqlState("23503"));
    await assert.rejects(createDeal(seller.id, seller.id), sqlState("23514"));
    const insert = (amount: string, currency: string) =>
      db.pool.query(
        `insert into public.deals (listing_id, buyer_id, seller_id, amount, currency)
       values ($1, $2, $3, $4, $5)`,
        [listing.id, buyer.id, seller.id, amount, currency],
      );
    await assert.rejects(insert("0", "USD"), sqlState("23514"));
    await assert.rejects(insert("10", "usd"), sqlState("23514"));
    const id = await createDeal();
    assert.match(id, /^[0-9a-f-]{36}$/);
  },
);

sqlTest("is_deal_participant() is true for the buyer and the seller only", async () => {
  const deal = await createDeal();
  const { rows } = await db.pool.query(
    `select public.is_deal_participant($1, $2) as buyer, public.is_deal_participant($1, $3) as seller,
            public.is_deal_participant($1, $4) as stranger, public.is_deal_participant($1, $5) as admin,
            public.is_deal_participant($6, $2) as unknown_deal,
            public.is_deal_participant(null, $2) as null_deal,
            public.is_deal_participant($1, null) as null_user`,
    [deal, buyer.id, seller.id, stranger.id, admin.id, crypto.randomUUID()],
  );
  assert.deepEqual(rows[0], {
    buyer: true,
    seller: true,
    stranger: false,
    admin: false,
    unknown_deal: false,
    null_deal: false,
    null_user: false,
  });
});

sqlTest("is_deal_participant() lets a client ask only about itself", async () => {
  const deal = await createDeal();
  await asRole(db.pool, { role: "authenticated", userId: buyer.id }, async (c) => {
    const own = await c.query("select public.is_deal_participant($1, $2) as ok", [deal, buyer.id]);
    assert.equal(own.rows[0].ok, true);
    await rejectsWith(c, "42501", "select public.is_deal_participant($1, $2)", [deal, seller.id]);
  });
  await asRole(db.pool, { role: "authenticated", userId: stranger.id }, async (c) => {
    const own = await c.query("select public.is_deal_participant($1, $2) as ok", [
      deal,
      stranger.id,
    ]);
    assert.equal(own.rows[0].ok, false);
  });
  await asRole(db.pool, { role: "anon" }, async (c) => {
    await rejectsWith(c, "42501", "select public.is_deal_participant($1, $2)", [deal, buyer.id]);
  });
  await asRole(db.pool, { role: "service_role" }, async (c) => {
    const { rows } = await c.query("select public.is_deal_participant($1, $2) as ok", [
      deal,
      seller.id,
    ]);
    assert.equal(rows[0].ok, true);
  });
});

sqlTest(
  "deals RLS: participants and admins read a deal; nobody else; clients write nothing",
  async () => {
    const deal = await createDeal();
    for (const who of [buyer, seller, admin]) {
      await asRole(db.pool, { role: "authenticated", userId: who.id }, async (c) => {
        const { rows } = await c.query("select id from public.deals where id = $1", [deal]);
        assert.deepEqual(rows, [{ id: deal }]);
      });
    }
    await asRole(db.pool, { role: "authenticated", userId: stranger.id }, async (c) => {
      const { rows } = await c.query("select id from public.deals where id = $1", [deal]);
      assert.deepEqual(rows, []);
    });
    await asRole(db.pool, { role: "authenticated", userId: buyer.id }, async (c) => {
      await rejectsWith(c, "42501", "update public.deals set amount = 1 where id = $1", [deal]);
      await rejectsWith(c, "42501", "delete from public.deals where id = $1", [deal]);
      await rejectsWith(
        c,
        "42501",
        `insert into public.deals (listing_id, buyer_id, seller_id, amount, currency)
       values ($1, $2, $3, 1, 'USD')`,
        [listing.id, buyer.id, seller.id],
      );
    });
    await asRole(db.pool, { role: "anon" }, async (c) => {
      await rejectsWith(c, "42501", "select id from public.deals");
      await rejectsWith(c, "42501", "update public.deals set amount = 1");
    });
    const { rows } = await db.pool.query("select amount from public.deals where id = $1", [deal]);
    assert.equal(rows[0].amount, "25000.00");
  },
);
