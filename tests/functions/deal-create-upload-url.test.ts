/**
 * `deal-create-upload-url` with the real supabase-js against the local
 * Storage API: a participant's upload through the signed URL, its
 * confirmation and who can download it; the data room of a letter of
 * intent's deal during due diligence; every refusal writes nothing.
 *
 * @module
 */
import assert from "node:assert/strict";
import { createClient } from "@supabase/supabase-js";
import handler from "../../supabase/functions/deal-create-upload-url/handler.ts";
import { createTestDatabase, sqlTest } from "../support/db.ts";
import { testCredentials } from "../support/credentials.ts";
import { createDeal, moveDeal, type TestDeal } from "../support/deals.ts";
import { rpc } from "../support/handover.ts";
import { createLoiDeal, dealOf, testDealOf } from "../support/loi.ts";
import { invoke, testRuntime } from "../support/runtime.ts";
import { createUser, queryAs, type TestUser } from "../support/sql.ts";
import { startLocalStorage } from "../support/storage.ts";

interface UploadUrl {
  documentId: string;
  path: string;
  signedUrl: string;
  token: string;
  expiresIn: number;
}

const db = await createTestDatabase();
const storage = await startLocalStorage(db);
const runtime = await testRuntime(db, storage.env);
const keys = await testCredentials();

/** A supabase-js client signed in as `user`, as the frontend has it. */
async function clientOf(user: TestUser) {
  return createClient(storage.url, keys.anonKey, {
    global: { headers: { Authorization: `Bearer ${await keys.userToken(user)}` } },
    auth: { persistSession: false, autoRefreshToken: false },
  });
}

async function ask(user: TestUser, body: Record<string, unknown>) {
  return await invoke<UploadUrl & { error?: { code: string; message: string } }>(
    handler,
    runtime,
    { token: await keys.userToken(user), body },
  );
}

function request(deal: TestDeal, overrides: Record<string, unknown> = {}) {
  return {
    dealId: deal.id,
    fileName: "Signed agreement.pdf",
    contentType: "application/pdf",
    size: 12,
    kind: "signed_apa",
    ...overrides,
  };
}

async function documentsOf(dealId: string) {
  const { rows } = await db.pool.query(
    `select id, uploaded_by, kind, path, file_name, content_type, size_bytes::int as size, status
     from public.deal_documents where deal_id = $1 order by created_at`,
    [dealId],
  );
  return rows;
}

sqlTest(
  "deal-create-upload-url: the buyer uploads with supabase-js; both parties read it",
  async () => {
    const deal = await createDeal(db.pool);
    const res = await ask(deal.buyer, request(deal, { contentType: "Application/PDF; charset=x" }));
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.expiresIn, 7200);
    assert.match(
      res.body.path,
      new RegExp(`^${deal.id}/signed_apa/[0-9a-f]{16}-Signed agreement\\.pdf$`),
    );
    assert.ok(
      res.body.signedUrl.startsWith(`${storage.url}/storage/v1/object/upload/sign/deal-documents/`),
    );
    assert.deepEqual(await documentsOf(deal.id), [{
      id: res.body.documentId,
      uploaded_by: deal.buyer.id,
      kind: "signed_apa",
      path: res.body.path,
      file_name: "Signed agreement.pdf",
      content_type: "application/pdf",
      size: 12,
      status: "pending",
    }]);

    // The frontend's upload: a File through the signed URL (multipart, as browsers send it).
    const buyer = await clientOf(deal.buyer);
    const bytes = new TextEncoder().encode("%PDF-1.7 signed and sealed");
    const file = new File([bytes], "Signed agreement.pdf", { type: "application/pdf" });
    const uploaded = await buyer.storage.from("deal-documents").uploadToSignedUrl(
      res.body.path,
      res.body.token,
      file,
    );
    assert.equal(uploaded.error, null, String(uploaded.error));

    // Confirmed by the participant's RPC: the real size is recorded.
    await rpc(db.pool, deal.buyer, "confirm_deal_documents", [deal.id]);
    const [row] = await documentsOf(deal.id);
    assert.equal(row.status, "uploaded");
    assert.equal(row.size, bytes.byteLength);

    // The seller downloads it; a stranger cannot.
    const seller = await clientOf(deal.seller);
    const download = await seller.storage.from("deal-documents").download(res.body.path);
    assert.equal(download.error, null);
    assert.deepEqual(new Uint8Array(await download.data!.arrayBuffer()), bytes);
    const stranger = await clientOf(await createUser(db.pool));
    const denied = await stranger.storage.from("deal-documents").download(res.body.path);
    assert.equal(denied.data, null);
    assert.ok(denied.error);
  },
);

sqlTest(
  "deal-create-upload-url: during due diligence both sides fill the data room and read it; a stranger cannot",
  async () => {
    const loi = await createLoiDeal(db.pool);
    assert.equal((await dealOf(db.pool, loi.dealId)).status, "in_diligence");
    const deal = testDealOf(loi);
    const files = [
      {
        user: deal.seller,
        kind: "financials",
        name: "Financials 2026.pdf",
        type: "application/pdf",
        bytes: new TextEncoder().encode("%PDF-1.7 revenue and churn"),
      },
      {
        user: deal.buyer,
        kind: "other",
        name: "Questions.txt",
        type: "text/plain",
        bytes: new TextEncoder().encode("Which plans renew yearly?"),
      },
    ];
    const paths: string[] = [];
    for (const file of files) {
      const res = await ask(
        file.user,
        request(deal, {
          fileName: file.name,
          contentType: file.type,
          size: file.bytes.byteLength,
          kind: file.kind,
        }),
      );
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const client = await clientOf(file.user);
      const uploaded = await client.storage.from("deal-documents").uploadToSignedUrl(
        res.body.path,
        res.body.token,
        new File([file.bytes], file.name, { type: file.type }),
      );
      assert.equal(uploaded.error, null, String(uploaded.error));
      await rpc(db.pool, file.user, "confirm_deal_documents", [deal.id]);
      paths.push(res.body.path);
    }

    // Each side lists the register (as supabase.from("deal_documents") reads it)
    // and reads both files: by download and through a signed URL of its own.
    const register = (user: TestUser) =>
      queryAs<{ path: string; kind: string; status: string; uploaded_by: string }>(
        db.pool,
        user,
        `select path, kind, status, uploaded_by from public.deal_documents
         where deal_id = $1 order by created_at`,
        [deal.id],
      );
    for (const user of [deal.buyer, deal.seller]) {
      assert.deepEqual(
        await register(user),
        files.map((file, i) => ({
          path: paths[i],
          kind: file.kind,
          status: "uploaded",
          uploaded_by: file.user.id,
        })),
      );
      const bucket = (await clientOf(user)).storage.from("deal-documents");
      for (const [i, file] of files.entries()) {
        const download = await bucket.download(paths[i]!);
        assert.equal(download.error, null, String(download.error));
        assert.deepEqual(new Uint8Array(await download.data!.arrayBuffer()), file.bytes);
        const link = await bucket.createSignedUrl(paths[i]!, 60);
        assert.equal(link.error, null, String(link.error));
        const fetched = await fetch(link.data!.signedUrl);
        assert.equal(fetched.status, 200);
        assert.deepEqual(new Uint8Array(await fetched.arrayBuffer()), file.bytes);
      }
    }

    // A stranger gets no upload URL, sees no row and reads no file.
    const stranger = await createUser(db.pool);
    const denied = await ask(stranger, request(deal));
    assert.equal(denied.status, 403, JSON.stringify(denied.body));
    assert.deepEqual(await register(stranger), []);
    const strangerBucket = (await clientOf(stranger)).storage.from("deal-documents");
    for (const path of paths) {
      const download = await strangerBucket.download(path);
      assert.equal(download.data, null);
      assert.ok(download.error);
      const link = await strangerBucket.createSignedUrl(path, 60);
      assert.equal(link.data, null);
      assert.ok(link.error);
    }
    assert.equal((await documentsOf(deal.id)).length, 2);

    // The buyer walks away: the data room takes nothing more; what is in it stays readable.
    await rpc(db.pool, deal.buyer, "withdraw_from_deal", [deal.id, "The churn is too high"]);
    assert.equal((await dealOf(db.pool, deal.id)).status, "cancelled");
    const closed = await ask(deal.seller, request(deal));
    assert.equal(closed.status, 409, JSON.stringify(closed.body));
    assert.equal(closed.body.error?.code, "conflict");
    assert.equal((await documentsOf(deal.id)).length, 2);
    assert.equal((await register(deal.seller)).length, 2);
  },
);

sqlTest("deal-create-upload-url: the bucket refuses bytes that break its rules", async () => {
  const deal = await createDeal(db.pool);
  const res = await ask(deal.seller, request(deal, { kind: "transfer_proof" }));
  assert.equal(res.status, 200, JSON.stringify(res.body));
  const seller = await clientOf(deal.seller);
  // Declared a PDF, sends HTML: the bucket's type list refuses it.
  const html = new File(["<script>alert(1)</script>"], "x.html", { type: "text/html" });
  const refused = await seller.storage.from("deal-documents").uploadToSignedUrl(
    res.body.path,
    res.body.token,
    html,
  );
  assert.ok(refused.error);
  await rpc(db.pool, deal.seller, "confirm_deal_documents", [deal.id]);
  assert.equal((await documentsOf(deal.id))[0]!.status, "pending");
  // The token is for that object only.
  const elsewhere = await seller.storage.from("deal-documents").uploadToSignedUrl(
    `${deal.id}/transfer_proof/other.pdf`,
    res.body.token,
    new File(["%PDF"], "other.pdf", { type: "application/pdf" }),
  );
  assert.ok(elsewhere.error);
});

sqlTest("deal-create-upload-url: refusals answer 4xx and write nothing", async () => {
  const deal = await createDeal(db.pool);
  const stranger = await createUser(db.pool);
  const cases: Array<[TestUser, Record<string, unknown>, number, string]> = [
    [stranger, request(deal), 403, "forbidden"],
    [deal.buyer, request(deal, { dealId: crypto.randomUUID() }), 404, "not_found"],
    [deal.buyer, request(deal, { contentType: "text/html" }), 400, "invalid_input"],
    [deal.buyer, request(deal, { contentType: "application/x-msdownload" }), 400, "invalid_input"],
    [deal.buyer, request(deal, { size: 25 * 1024 * 1024 + 1 }), 400, "invalid_input"],
    [deal.buyer, request(deal, { size: 0 }), 400, "invalid_input"],
    [deal.buyer, request(deal, { kind: "apa" }), 400, "invalid_input"],
    [deal.buyer, request(deal, { fileName: "../../etc/passwd" }), 400, "invalid_input"],
    [deal.buyer, request(deal, { fileName: "..\\..\\boot.ini" }), 400, "invalid_input"],
    [deal.buyer, request(deal, { fileName: "invoice\u202Efdp.exe" }), 400, "invalid_input"],
    [deal.buyer, request(deal, { fileName: "nul\u0000.pdf" }), 400, "invalid_input"],
    [deal.buyer, request(deal, { fileName: "..." }), 400, "invalid_input"],
  ];
  for (const [user, body, status, code] of cases) {
    const res = await ask(user, body);
    assert.equal(res.status, status, `${JSON.stringify(body)} → ${JSON.stringify(res.body)}`);
    assert.equal(res.body.error?.code, code);
  }
  assert.deepEqual(await documentsOf(deal.id), []);

  for (const path of [["cancelled"], ["funded", "refunded"]]) {
    const closed = await createDeal(db.pool);
    await moveDeal(db.pool, closed.id, ...path);
    const res = await ask(closed.buyer, request(closed));
    assert.equal(res.status, 409, JSON.stringify(res.body));
    assert.equal(res.body.error?.code, "conflict");
    assert.deepEqual(await documentsOf(closed.id), []);
  }
});

sqlTest("deal-create-upload-url: storage down answers 503 and leaves no row", async () => {
  const deal = await createDeal(db.pool);
  const offline = await testRuntime(db, { ...storage.env, SUPABASE_URL: "http://127.0.0.1:9" });
  try {
    const res = await invoke<{ error: { code: string } }>(handler, offline, {
      token: await keys.userToken(deal.buyer),
      body: request(deal),
    });
    assert.equal(res.status, 503, JSON.stringify(res.body));
    assert.equal(res.body.error.code, "upstream_unavailable");
    assert.deepEqual(await documentsOf(deal.id), []);
  } finally {
    await offline.close();
  }
});

addEventListener("unload", () => {
  storage.stop();
  runtime.close();
});

sqlTest(
  "deal-create-upload-url: a project without legacy keys signs with a secret key of SUPABASE_SECRET_KEYS",
  async () => {
    const secretKey = `sb_secret_${crypto.randomUUID().replaceAll("-", "")}`;
    const secrets = JSON.stringify({ other: "sb_secret_not_this_one", default: secretKey });
    await using hosted = await startLocalStorage(db, { SUPABASE_SECRET_KEYS: secrets });
    const noLegacy = await testRuntime(db, {
      ...hosted.env,
      SUPABASE_SECRET_KEYS: secrets,
      SUPABASE_SERVICE_ROLE_KEY: undefined,
      SUPABASE_ANON_KEY: undefined,
    });
    const deal = await createDeal(db.pool);
    const res = await invoke<UploadUrl>(handler, noLegacy, {
      token: await keys.userToken(deal.buyer),
      body: request(deal),
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.ok(res.body.signedUrl.startsWith(`${hosted.url}/storage/v1/object/upload/sign/`));
    const buyer = createClient(hosted.url, keys.anonKey, {
      global: { headers: { Authorization: `Bearer ${await keys.userToken(deal.buyer)}` } },
      auth: { persistSession: false, autoRefreshToken: false },
    });
    const uploaded = await buyer.storage.from("deal-documents").uploadToSignedUrl(
      res.body.path,
      res.body.token,
      new Blob(["%PDF-1.7 x"], { type: "application/pdf" }),
    );
    assert.equal(uploaded.error, null, String(uploaded.error));
    await noLegacy.close();

    // Neither key: 503 not_configured naming both, nothing written.
    const unset = await testRuntime(db, {
      ...hosted.env,
      SUPABASE_SECRET_KEYS: undefined,
      SUPABASE_SERVICE_ROLE_KEY: undefined,
    });
    const other = await createDeal(db.pool);
    const refused = await invoke<{ error: { code: string; message: string } }>(handler, unset, {
      token: await keys.userToken(other.buyer),
      body: request(other),
    });
    await unset.close();
    assert.equal(refused.status, 503);
    assert.equal(refused.body.error.code, "not_configured");
    assert.match(refused.body.error.message, /SUPABASE_SECRET_KEYS/);
    assert.match(refused.body.error.message, /SUPABASE_SERVICE_ROLE_KEY/);
    assert.deepEqual(await documentsOf(other.id), []);
  },
);
