/**
 * Deal documents in the database (migration 20261123002700_deal_documents):
 * the private bucket, who reads a deal's objects under storage.objects RLS,
 * that no client writes there or to the register, the register's state
 * machine, and confirming and expiring uploads; all of it for a letter of
 * intent's deal in due diligence too.
 *
 * @module
 */
import assert from "node:assert/strict";
import type pg from "pg";
import { createTestDatabase, sqlTest } from "../support/db.ts";
import { createDeal, type TestDeal } from "../support/deals.ts";
import { createLoiDeal, dealOf, testDealOf } from "../support/loi.ts";
import { asRole, createUser, queryAs, type TestUser } from "../support/sql.ts";
import { rejectsWith } from "./core_fixtures.ts";

const db = await createTestDatabase();

/** A stored object in deal-documents, as Storage writes it. */
async function storeObject(name: string, size = 1234, mimetype = "application/pdf") {
  await db.pool.query(
    `insert into storage.objects (bucket_id, name, metadata)
     values ('deal-documents', $1, jsonb_build_object('size', $2::int, 'mimetype', $3::text))`,
    [name, size, mimetype],
  );
}

/** A pending upload of `deal` registered as the function does; returns its id and path. */
async function pendingUpload(
  deal: TestDeal,
  expiresInMinutes = 120,
): Promise<{ id: string; path: string }> {
  const path = `${deal.id}/other/${crypto.randomUUID().slice(0, 8)}-file.pdf`;
  const { rows } = await db.pool.query<{ id: string }>(
    `insert into public.deal_documents
       (deal_id, uploaded_by, kind, path, file_name, content_type, size_bytes, upload_expires_at)
     values ($1, $2, 'other', $3, 'file.pdf', 'application/pdf', 10,
             now() + make_interval(mins => $4))
     returning id`,
    [deal.id, deal.buyer.id, path, expiresInMinutes],
  );
  return { id: rows[0]!.id, path };
}

async function statusOf(id: string) {
  const { rows } = await db.pool.query(
    "select status, size_bytes::int as size, content_type, uploaded_at from public.deal_documents where id = $1",
    [id],
  );
  return rows[0];
}

/** Runs `sql` as `user` (committed). */
const as = <T extends pg.QueryResultRow>(user: TestUser, sql: string, params: unknown[] = []) =>
  queryAs<T>(db.pool, user, sql, params);

sqlTest("the bucket is private, 25 MiB, and allows the five kinds of file", async () => {
  const { rows } = await db.pool.query(
    "select public, file_size_limit::int as limit, allowed_mime_types from storage.buckets where id = 'deal-documents'",
  );
  assert.deepEqual(rows[0], {
    public: false,
    limit: 26214400,
    allowed_mime_types: [
      "application/pdf",
      "image/png",
      "image/jpeg",
      "application/zip",
      "application/x-zip-compressed",
      "text/plain",
    ],
  });
});

sqlTest("a deal's objects are read by its participants and admins, by nobody else", async () => {
  const deal = await createDeal(db.pool);
  const other = await createDeal(db.pool);
  const admin = await createUser(db.pool, { admin: true });
  await storeObject(`${deal.id}/other/a-contract.pdf`);
  await storeObject(`${other.id}/other/b-contract.pdf`);
  await storeObject("not-a-deal/x.pdf");
  const visible = async (user: TestUser) =>
    (await as<{ name: string }>(
      user,
      "select name from storage.objects where bucket_id = 'deal-documents' order by name",
    )).map((row) => row.name);
  assert.deepEqual(await visible(deal.buyer), [`${deal.id}/other/a-contract.pdf`]);
  assert.deepEqual(await visible(deal.seller), [`${deal.id}/other/a-contract.pdf`]);
  // Admins read every deal's objects; a name outside a deal folder is nobody's.
  assert.equal((await visible(admin)).length, 2);
  assert.deepEqual(await visible(other.buyer), [`${other.id}/other/b-contract.pdf`]);
  await asRole(db.pool, { role: "anon" }, async (client) => {
    const { rows } = await client.query("select name from storage.objects");
    assert.equal(rows.length, 0);
  });
});

sqlTest("no client writes a deal's objects or the register directly", async () => {
  const deal = await createDeal(db.pool);
  await asRole(db.pool, { role: "authenticated", userId: deal.buyer.id }, async (client) => {
    await rejectsWith(
      client,
      "42501",
      "insert into storage.objects (bucket_id, name) values ('deal-documents', $1)",
      [`${deal.id}/other/sneaky.pdf`],
    );
    await rejectsWith(
      client,
      "42501",
      `insert into public.deal_documents (deal_id, kind, path, file_name, content_type, size_bytes)
       values ($1, 'other', $2, 'x.pdf', 'application/pdf', 1)`,
      [deal.id, `${deal.id}/x.pdf`],
    );
  });
});

sqlTest(
  "confirm_deal_documents() confirms stored uploads with the stored size and type",
  async () => {
    const deal = await createDeal(db.pool);
    const stored = await pendingUpload(deal);
    const waiting = await pendingUpload(deal);
    await storeObject(stored.path, 4321, "image/png");

    const confirmed = await as<{ id: string }>(
      deal.seller,
      "select id from public.confirm_deal_documents($1)",
      [deal.id],
    );
    assert.deepEqual(confirmed.map((row) => row.id), [stored.id]);
    const row = await statusOf(stored.id);
    assert.equal(row.status, "uploaded");
    assert.equal(row.size, 4321);
    assert.equal(row.content_type, "image/png");
    assert.ok(row.uploaded_at);
    assert.equal((await statusOf(waiting.id)).status, "pending");
    // Again: nothing more to confirm.
    assert.equal(
      (await as(deal.seller, "select * from public.confirm_deal_documents($1)", [deal.id])).length,
      0,
    );
  },
);

sqlTest("confirm_deal_documents() is for the deal's participants and admins", async () => {
  const deal = await createDeal(db.pool);
  const stranger = await createUser(db.pool);
  const upload = await pendingUpload(deal);
  await storeObject(upload.path);
  for (
    const [sql, params, code] of [
      ["select public.confirm_deal_documents($1)", [deal.id], "42501"],
      ["select public.confirm_deal_documents()", [], "22023"],
    ] as const
  ) {
    await asRole(
      db.pool,
      { role: "authenticated", userId: stranger.id },
      (client) => rejectsWith(client, code, sql, [...params]),
    );
  }
  assert.equal((await statusOf(upload.id)).status, "pending");
  // The service connection confirms every deal's.
  const { rows } = await db.pool.query("select id from public.confirm_deal_documents()");
  assert.ok(rows.some((row) => row.id === upload.id));
});

sqlTest(
  "expire_deal_uploads() expires lapsed URLs without an object, and nothing else",
  async () => {
    const deal = await createDeal(db.pool);
    const lapsed = await pendingUpload(deal, -5);
    const lapsedButStored = await pendingUpload(deal, -5);
    const fresh = await pendingUpload(deal, 60);
    await storeObject(lapsedButStored.path);
    const { rows } = await db.pool.query("select id from public.expire_deal_uploads(now())");
    assert.deepEqual(rows.map((row) => row.id), [lapsed.id]);
    assert.equal((await statusOf(lapsed.id)).status, "expired");
    assert.equal((await statusOf(lapsedButStored.id)).status, "pending");
    assert.equal((await statusOf(fresh.id)).status, "pending");
  },
);

sqlTest("the register's state machine: pending → uploaded | expired, then final", async () => {
  const deal = await createDeal(db.pool);
  const upload = await pendingUpload(deal, -5);
  await db.pool.query("select public.expire_deal_uploads(now())");
  await assert.rejects(
    db.pool.query(
      "update public.deal_documents set status = 'uploaded', uploaded_at = now() where id = $1",
      [upload.id],
    ),
    /Cannot change a document that is expired/,
  );
  await assert.rejects(
    db.pool.query("update public.deal_documents set path = $2 where id = $1", [
      upload.id,
      `${deal.id}/elsewhere.pdf`,
    ]),
    /Cannot move a document/,
  );
  const other = await createDeal(db.pool);
  await assert.rejects(
    db.pool.query(
      `insert into public.deal_documents (deal_id, kind, path, file_name, content_type, size_bytes)
       values ($1, 'other', $2, 'x.pdf', 'application/pdf', 1)`,
      [deal.id, `${other.id}/x.pdf`],
    ),
    /deal_documents_path_in_deal/,
  );
});

sqlTest("participants and admins read the register; nobody else does", async () => {
  const deal = await createDeal(db.pool);
  const stranger = await createUser(db.pool);
  const admin = await createUser(db.pool, { admin: true });
  await pendingUpload(deal);
  const count = async (user: TestUser) =>
    (await as<{ n: number }>(
      user,
      "select count(*)::int as n from public.deal_documents where deal_id = $1",
      [deal.id],
    ))[0]!.n;
  assert.equal(await count(deal.buyer), 1);
  assert.equal(await count(deal.seller), 1);
  assert.equal(await count(admin), 1);
  assert.equal(await count(stranger), 0);
});

sqlTest(
  "a deal in due diligence: its participants confirm and read its documents, nobody else",
  async () => {
    const loi = await createLoiDeal(db.pool);
    assert.equal((await dealOf(db.pool, loi.dealId)).status, "in_diligence");
    const deal = testDealOf(loi);
    const stranger = await createUser(db.pool);
    const rival = await createDeal(db.pool);
    const upload = await pendingUpload(deal);
    await storeObject(upload.path, 2048, "application/pdf");

    // A stranger may not confirm it; the seller does.
    await asRole(
      db.pool,
      { role: "authenticated", userId: stranger.id },
      (client) =>
        rejectsWith(client, "42501", "select public.confirm_deal_documents($1)", [deal.id]),
    );
    const confirmed = await as<{ id: string }>(
      deal.seller,
      "select id from public.confirm_deal_documents($1)",
      [deal.id],
    );
    assert.deepEqual(confirmed.map((row) => row.id), [upload.id]);
    assert.equal((await statusOf(upload.id)).status, "uploaded");

    const register = async (user: TestUser) =>
      (await as<{ id: string }>(
        user,
        "select id from public.deal_documents where deal_id = $1",
        [deal.id],
      )).map((row) => row.id);
    const objects = async (user: TestUser) =>
      (await as<{ name: string }>(
        user,
        "select name from storage.objects where bucket_id = 'deal-documents' and name = $1",
        [upload.path],
      )).map((row) => row.name);
    for (const user of [deal.buyer, deal.seller]) {
      assert.deepEqual(await register(user), [upload.id]);
      assert.deepEqual(await objects(user), [upload.path]);
    }
    for (const user of [stranger, rival.buyer, rival.seller]) {
      assert.deepEqual(await register(user), []);
      assert.deepEqual(await objects(user), []);
    }
  },
);
