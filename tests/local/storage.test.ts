import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { createTestDatabase, sqlTest } from "../support/db.ts";
import { testCredentials } from "../support/credentials.ts";
import { createUser } from "../support/sql.ts";
import {
  createBucket,
  filesUnder,
  objectRow,
  startLocalStorage,
  storageClient,
} from "../support/storage.ts";

const db = await createTestDatabase();
const keys = await testCredentials();

const md5 = (text: string | Uint8Array) => createHash("md5").update(text).digest("hex");

/** The metadata fields hosted Storage records, without the timestamp. */
function storedMetadata(metadata: Record<string, unknown>) {
  const { lastModified, ...rest } = metadata;
  assert.ok(!Number.isNaN(Date.parse(String(lastModified))), "lastModified is a date");
  return rest;
}

/** Lets `user` insert objects under the folder named by their id in `bucket`. */
async function allowInsertInOwnFolder(bucket: string): Promise<void> {
  await db.pool.query(
    `create policy "${bucket} users insert in their folder" on storage.objects
       for insert to authenticated
       with check (bucket_id = '${bucket}'
                   and (storage.foldername(name))[1] = (select auth.uid())::text)`,
  );
}

/** Lets users read the objects under the folder named by their id in `bucket`. */
async function allowSelectInOwnFolder(bucket: string): Promise<void> {
  await db.pool.query(
    `create policy "${bucket} users read their folder" on storage.objects
       for select to authenticated
       using (bucket_id = '${bucket}'
              and (storage.foldername(name))[1] = (select auth.uid())::text)`,
  );
}

sqlTest(
  "storage: createSignedUploadUrl then uploadToSignedUrl stores a File (multipart) and raw bytes",
  async () => {
    await using storage = await startLocalStorage(db);
    const bucket = await createBucket(db.pool, {
      fileSizeLimit: 1024 * 1024,
      allowedMimeTypes: ["text/plain", "application/pdf"],
    });
    const service = storageClient(storage, keys.anonKey, keys.serviceKey).from(bucket);

    const signed = await service.createSignedUploadUrl("deal-1/notes.txt");
    assert.equal(signed.error, null);
    assert.ok(
      signed.data!.signedUrl.startsWith(
        `${storage.url}/storage/v1/object/upload/sign/${bucket}/deal-1/notes.txt?token=`,
      ),
      signed.data!.signedUrl,
    );
    const file = new File(["hello world"], "notes.txt", { type: "text/plain" });
    const uploaded = await service.uploadToSignedUrl("deal-1/notes.txt", signed.data!.token, file);
    assert.deepEqual(uploaded, {
      data: { path: "deal-1/notes.txt", fullPath: `${bucket}/deal-1/notes.txt` },
      error: null,
    });
    const row = await objectRow(db.pool, bucket, "deal-1/notes.txt");
    assert.ok(row);
    assert.equal(row.owner, null, "the service role owns nothing");
    assert.deepEqual(storedMetadata(row.metadata), {
      eTag: `"${md5("hello world")}"`,
      size: 11,
      mimetype: "text/plain",
      cacheControl: "max-age=3600",
      contentLength: 11,
      httpStatusCode: 200,
    });
    assert.equal(
      await Deno.readTextFile(`${storage.root}/${bucket}/deal-1/notes.txt`),
      "hello world",
    );

    const pdf = new TextEncoder().encode("%PDF-1.7 not really");
    const signedPdf = await service.createSignedUploadUrl("deal-1/contract.pdf");
    const raw = await service.uploadToSignedUrl("deal-1/contract.pdf", signedPdf.data!.token, pdf, {
      contentType: "application/pdf",
      metadata: { kind: "contract" },
    });
    assert.equal(raw.error, null);
    const pdfRow = await objectRow(db.pool, bucket, "deal-1/contract.pdf");
    assert.ok(pdfRow);
    assert.equal(pdfRow.metadata.mimetype, "application/pdf");
    assert.equal(pdfRow.metadata.size, pdf.byteLength);
    assert.equal(pdfRow.metadata.eTag, `"${md5(pdf)}"`);
    assert.deepEqual(pdfRow.user_metadata, { kind: "contract" });
    assert.deepEqual(
      await Deno.readFile(`${storage.root}/${bucket}/deal-1/contract.pdf`),
      pdf,
    );
    assert.deepEqual(await filesUnder(storage.root), [
      `${bucket}/deal-1/contract.pdf`,
      `${bucket}/deal-1/notes.txt`,
    ], "no staging file is left behind");
  },
);

sqlTest(
  "storage: a user's signed upload URL needs an insert policy and records the user as owner",
  async () => {
    await using storage = await startLocalStorage(db);
    const bucket = await createBucket(db.pool);
    await allowInsertInOwnFolder(bucket);
    const alice = await createUser(db.pool);
    const aliceClient = storageClient(storage, keys.anonKey, await keys.userToken(alice))
      .from(bucket);

    const signed = await aliceClient.createSignedUploadUrl(`${alice.id}/id.png`);
    assert.equal(signed.error, null);
    const anonClient = storageClient(storage, keys.anonKey, keys.anonKey).from(bucket);
    const uploaded = await anonClient.uploadToSignedUrl(
      `${alice.id}/id.png`,
      signed.data!.token,
      new Uint8Array([137, 80, 78, 71]),
      { contentType: "image/png" },
    );
    assert.equal(uploaded.error, null, "the signed URL needs no credential of its own");
    const row = await objectRow(db.pool, bucket, `${alice.id}/id.png`);
    assert.equal(row?.owner, alice.id);
    assert.equal(row?.owner_id, alice.id);

    const elsewhere = await aliceClient.createSignedUploadUrl("someone-else/id.png");
    assert.equal(elsewhere.data, null);
    assert.equal(elsewhere.error?.status, 400);
    assert.equal(elsewhere.error?.statusCode, "403");
    assert.equal(
      elsewhere.error && "code" in elsewhere.error && elsewhere.error.code,
      "AccessDenied",
    );
    const anon = await anonClient.createSignedUploadUrl(`${alice.id}/other.png`);
    assert.equal(anon.error?.statusCode, "403", "the anon key has no insert policy");
  },
);

sqlTest(
  "storage: upload() as a user is allowed by an insert policy and refused (403) without one",
  async () => {
    await using storage = await startLocalStorage(db);
    const bucket = await createBucket(db.pool);
    await allowInsertInOwnFolder(bucket);
    const alice = await createUser(db.pool);
    const bob = await createUser(db.pool);
    const aliceClient = storageClient(storage, keys.anonKey, await keys.userToken(alice))
      .from(bucket);

    const own = await aliceClient.upload(`${alice.id}/a.txt`, "from alice", {
      contentType: "text/plain",
    });
    assert.equal(own.error, null);
    const row = await objectRow(db.pool, bucket, `${alice.id}/a.txt`);
    assert.deepEqual(own.data, {
      path: `${alice.id}/a.txt`,
      id: row?.id,
      fullPath: `${bucket}/${alice.id}/a.txt`,
    });
    assert.equal(row?.owner, alice.id);

    const refused = await aliceClient.upload(`${bob.id}/a.txt`, new Blob(["into bob's folder"]));
    assert.equal(refused.data, null);
    assert.deepEqual(
      refused.error && { ...refused.error.toJSON(), name: undefined },
      {
        name: undefined,
        message: "new row violates row-level security policy",
        status: 400,
        statusCode: "403",
        code: "AccessDenied",
      },
    );
    const anonymous = await storageClient(storage, keys.anonKey, keys.anonKey).from(bucket)
      .upload(`${alice.id}/b.txt`, "anon");
    assert.equal(anonymous.error?.statusCode, "403");
    assert.equal(await objectRow(db.pool, bucket, `${bob.id}/a.txt`), null);
    assert.equal(await objectRow(db.pool, bucket, `${alice.id}/b.txt`), null);
    assert.deepEqual(await filesUnder(storage.root), [`${bucket}/${alice.id}/a.txt`]);
  },
);

sqlTest(
  "storage: an existing name is refused without upsert (409) and replaced with upsert",
  async () => {
    await using storage = await startLocalStorage(db);
    const bucket = await createBucket(db.pool);
    const service = storageClient(storage, keys.anonKey, keys.serviceKey).from(bucket);
    const path = `${storage.root}/${bucket}/doc.txt`;

    assert.equal((await service.upload("doc.txt", "one")).error, null);
    const first = await objectRow(db.pool, bucket, "doc.txt");
    const duplicate = await service.upload("doc.txt", "two");
    assert.equal(duplicate.error?.status, 400);
    assert.equal(duplicate.error?.statusCode, "409");
    assert.equal(duplicate.error?.message, "The resource already exists");
    assert.equal(await Deno.readTextFile(path), "one");

    const signExisting = await service.createSignedUploadUrl("doc.txt");
    assert.equal(signExisting.error?.statusCode, "409", "as hosted, signing checks the name too");
    const signed = await service.createSignedUploadUrl("late.txt");
    assert.equal((await service.upload("late.txt", "first")).error, null);
    const signedDuplicate = await service.uploadToSignedUrl("late.txt", signed.data!.token, "two");
    assert.equal(signedDuplicate.error?.statusCode, "409", "taken after the URL was signed");
    assert.equal(await Deno.readTextFile(`${storage.root}/${bucket}/late.txt`), "first");
    assert.equal(await Deno.readTextFile(path), "one");
    assert.deepEqual(await objectRow(db.pool, bucket, "doc.txt"), first);

    const upserted = await service.upload("doc.txt", "three!", { upsert: true });
    assert.equal(upserted.error, null);
    assert.equal(upserted.data?.id, first?.id, "the row is updated, not replaced");
    assert.equal(await Deno.readTextFile(path), "three!");
    const row = await objectRow(db.pool, bucket, "doc.txt");
    assert.equal(row?.metadata.size, 6);
    assert.equal(row?.metadata.eTag, `"${md5("three!")}"`);

    assert.equal((await service.update("doc.txt", "four")).error, null, "update() replaces");
    assert.equal(await Deno.readTextFile(path), "four");
    const signedUpsert = await service.createSignedUploadUrl("doc.txt", { upsert: true });
    const replaced = await service.uploadToSignedUrl("doc.txt", signedUpsert.data!.token, "five");
    assert.equal(replaced.error, null);
    assert.equal(await Deno.readTextFile(path), "five");
    assert.deepEqual(await filesUnder(storage.root), [`${bucket}/doc.txt`, `${bucket}/late.txt`]);
  },
);

sqlTest(
  "storage: createSignedUrl gives a URL serving the bytes and type, as an attachment when asked",
  async () => {
    await using storage = await startLocalStorage(db);
    const bucket = await createBucket(db.pool);
    await allowSelectInOwnFolder(bucket);
    const alice = await createUser(db.pool);
    const bob = await createUser(db.pool);
    const service = storageClient(storage, keys.anonKey, keys.serviceKey).from(bucket);
    const name = `${alice.id}/report.pdf`;
    const bytes = new TextEncoder().encode("%PDF-1.7 report");
    await service.upload(name, bytes, { contentType: "application/pdf" });

    const signed = await service.createSignedUrl(name, 60);
    assert.equal(signed.error, null);
    const res = await fetch(signed.data!.signedUrl);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("content-type"), "application/pdf");
    assert.equal(res.headers.get("content-length"), String(bytes.byteLength));
    assert.equal(res.headers.get("etag"), `"${md5(bytes)}"`);
    assert.ok(res.headers.get("expires"), "a signed download says when it expires");
    assert.equal(res.headers.get("content-disposition"), null);
    assert.deepEqual(new Uint8Array(await res.arrayBuffer()), bytes);

    const head = await fetch(signed.data!.signedUrl, { method: "HEAD" });
    assert.equal(head.status, 200);
    assert.equal(head.headers.get("content-length"), String(bytes.byteLength));
    await head.body?.cancel();

    const attachment = await fetch(
      (await service.createSignedUrl(name, 60, { download: true }))
        .data!.signedUrl,
    );
    assert.equal(attachment.headers.get("content-disposition"), "attachment;");
    await attachment.body?.cancel();
    const named = await fetch(
      (await service.createSignedUrl(name, 60, { download: "Deal report.pdf" })).data!.signedUrl,
    );
    assert.equal(
      named.headers.get("content-disposition"),
      "attachment; filename=Deal%20report.pdf; filename*=UTF-8''Deal%20report.pdf",
    );
    await named.body?.cancel();

    const aliceSigned = await storageClient(storage, keys.anonKey, await keys.userToken(alice))
      .from(bucket).createSignedUrl(name, 60);
    assert.equal(aliceSigned.error, null, "a reader under RLS may sign");
    const bobSigned = await storageClient(storage, keys.anonKey, await keys.userToken(bob))
      .from(bucket).createSignedUrl(name, 60);
    assert.equal(bobSigned.data, null);
    assert.equal(bobSigned.error?.statusCode, "404");
    assert.equal(bobSigned.error?.message, "Object not found");
    const missing = await service.createSignedUrl("nothing-here.pdf", 60);
    assert.equal(missing.error?.statusCode, "404");
  },
);

sqlTest(
  "storage: download() returns the bytes to a user RLS lets read and 'Object not found' to others",
  async () => {
    await using storage = await startLocalStorage(db);
    const bucket = await createBucket(db.pool);
    await allowSelectInOwnFolder(bucket);
    const alice = await createUser(db.pool);
    const bob = await createUser(db.pool);
    const name = `${alice.id}/secret.txt`;
    await storageClient(storage, keys.anonKey, keys.serviceKey).from(bucket)
      .upload(name, "alice's secret", { contentType: "text/plain" });

    const own = await storageClient(storage, keys.anonKey, await keys.userToken(alice))
      .from(bucket).download(name);
    assert.equal(own.error, null);
    assert.equal(await own.data?.text(), "alice's secret");
    assert.equal(own.data?.type, "text/plain");

    for (const token of [await keys.userToken(bob), keys.anonKey]) {
      const refused = await storageClient(storage, keys.anonKey, token).from(bucket).download(name);
      assert.equal(refused.data, null);
      assert.equal(refused.error?.status, 400);
      assert.equal(refused.error?.statusCode, "404");
      assert.equal(refused.error?.message, "Object not found");
    }

    const url = `${storage.url}/storage/v1/object`;
    const bare = await fetch(`${url}/${bucket}/${name}`);
    assert.equal(bare.status, 400);
    assert.deepEqual(await bare.json(), {
      statusCode: "404",
      code: "NoSuchBucket",
      error: "Bucket not found",
      message: "Bucket not found",
    }, "without a credential a private bucket does not exist");
    const noHeader = await fetch(`${url}/authenticated/${bucket}/${name}`);
    assert.equal(noHeader.status, 400);
    assert.equal((await noHeader.json()).code, "InvalidRequest");
    const authenticated = await fetch(`${url}/authenticated/${bucket}/${name}`, {
      headers: { authorization: `Bearer ${await keys.userToken(alice)}` },
    });
    assert.equal(await authenticated.text(), "alice's secret");
    const noBucket = await storageClient(storage, keys.anonKey, keys.serviceKey).from("t-none")
      .download("x.txt");
    assert.equal(noBucket.error?.statusCode, "404");
  },
);

sqlTest("storage: a public bucket serves its objects to anyone", async () => {
  await using storage = await startLocalStorage(db);
  const bucket = await createBucket(db.pool, { public: true });
  const service = storageClient(storage, keys.anonKey, keys.serviceKey).from(bucket);
  await service.upload("logo.svg", "<svg/>", { contentType: "image/svg+xml" });

  const publicUrl = service.getPublicUrl("logo.svg").data.publicUrl;
  const res = await fetch(publicUrl);
  assert.equal(res.status, 200);
  assert.equal(await res.text(), "<svg/>");
  const anonymous = await fetch(`${storage.url}/storage/v1/object/${bucket}/logo.svg`);
  assert.equal(await anonymous.text(), "<svg/>");

  const privateBucket = await createBucket(db.pool);
  await storageClient(storage, keys.anonKey, keys.serviceKey).from(privateBucket)
    .upload("logo.svg", "<svg/>");
  const refused = await fetch(`${storage.url}/storage/v1/object/public/${privateBucket}/logo.svg`);
  assert.equal(refused.status, 400);
  assert.equal((await refused.json()).code, "NoSuchBucket");
});

sqlTest(
  "storage: concurrent uploads of one name store one object, and the file matches its row",
  async () => {
    await using storage = await startLocalStorage(db);
    const bucket = await createBucket(db.pool);
    const service = storageClient(storage, keys.anonKey, keys.serviceKey).from(bucket);
    const contents = Array.from({ length: 6 }, (_, i) => `version ${i} `.repeat(1000 + i));

    const creates = await Promise.all(contents.map((text) => service.upload("race.txt", text)));
    assert.equal(creates.filter((r) => r.error === null).length, 1, "one upload wins");
    assert.deepEqual(
      [...new Set(creates.filter((r) => r.error).map((r) => r.error?.statusCode))],
      ["409"],
    );
    const stored = await Deno.readTextFile(`${storage.root}/${bucket}/race.txt`);
    assert.ok(contents.includes(stored));

    const upserts = await Promise.all(
      contents.map((text) => service.upload("race.txt", text, { upsert: true })),
    );
    assert.ok(upserts.every((r) => r.error === null));
    const row = await objectRow(db.pool, bucket, "race.txt");
    const onDisk = await Deno.readFile(`${storage.root}/${bucket}/race.txt`);
    assert.equal(row?.metadata.eTag, `"${md5(onDisk)}"`, "the last write's row and bytes agree");
    assert.equal(row?.metadata.size, onDisk.byteLength);
    assert.deepEqual(await filesUnder(storage.root), [`${bucket}/race.txt`]);
  },
);
