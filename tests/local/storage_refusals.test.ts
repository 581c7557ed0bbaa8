import assert from "node:assert/strict";
import { dirname } from "node:path";
import { signUrlToken } from "../../local/storage/tokens.ts";
import { createTestDatabase, sqlTest } from "../support/db.ts";
import { TEST_JWT_SECRET, testCredentials } from "../support/credentials.ts";
import { createUser } from "../support/sql.ts";
import {
  createBucket,
  filesUnder,
  type LocalStorage,
  startLocalStorage,
  storageClient,
} from "../support/storage.ts";

const db = await createTestDatabase();
const keys = await testCredentials();

/** What supabase-js reports of a Storage error: HTTP status, the body's statusCode and code. */
function failure(error: unknown): { status: number; statusCode: string; code?: string } {
  assert.ok(error, "expected an error");
  const { status, statusCode, code } = JSON.parse(JSON.stringify(error));
  return { status, statusCode, code };
}

/** The number of rows in storage.objects for `bucket`. */
async function objectCount(bucket: string): Promise<number> {
  const { rows } = await db.pool.query<{ n: number }>(
    "select count(*)::int as n from storage.objects where bucket_id = $1",
    [bucket],
  );
  return rows[0]!.n;
}

/** A fetch to the Storage API with the service key. */
function serviceFetch(storage: LocalStorage, path: string, init: RequestInit = {}) {
  const headers = new Headers(init.headers);
  headers.set("authorization", `Bearer ${keys.serviceKey}`);
  return fetch(`${storage.url}/storage/v1/object/${path}`, { ...init, headers });
}

sqlTest("storage: an upload over the bucket's file_size_limit is refused with 413", async () => {
  await using storage = await startLocalStorage(db);
  const bucket = await createBucket(db.pool, { fileSizeLimit: 1000 });
  const service = storageClient(storage, keys.anonKey, keys.serviceKey).from(bucket);
  const tooLarge = { status: 400, statusCode: "413", code: "EntityTooLarge" };

  assert.equal((await service.upload("exact.bin", new Uint8Array(1000))).error, null);
  assert.deepEqual(
    failure((await service.upload("raw.bin", new Uint8Array(1001))).error),
    tooLarge,
  );
  const multipart = await service.upload("form.bin", new File([new Uint8Array(1001)], "form.bin"));
  assert.deepEqual(failure(multipart.error), tooLarge);
  const signed = await service.createSignedUploadUrl("signed.bin");
  const viaUrl = await service.uploadToSignedUrl(
    "signed.bin",
    signed.data!.token,
    new Blob([new Uint8Array(5000)]),
  );
  assert.deepEqual(failure(viaUrl.error), tooLarge);

  // A body of unknown length that never ends: the server stops reading once
  // it is past the limit, answers, and keeps nothing.
  const endless = new ReadableStream<Uint8Array>({
    pull: (controller) => controller.enqueue(new Uint8Array(64 * 1024)),
  });
  const streamed = await serviceFetch(storage, `${bucket}/stream.bin`, {
    method: "POST",
    headers: { "content-type": "application/octet-stream" },
    body: endless,
    duplex: "half",
  } as RequestInit);
  assert.equal(streamed.status, 400);
  assert.equal((await streamed.json()).statusCode, "413");

  assert.equal(await objectCount(bucket), 1);
  assert.deepEqual(await filesUnder(storage.root), [`${bucket}/exact.bin`]);
});

sqlTest(
  "storage: a content type the bucket does not allow is refused with 415 (wildcards match)",
  async () => {
    await using storage = await startLocalStorage(db);
    const bucket = await createBucket(db.pool, {
      allowedMimeTypes: ["image/*", "application/pdf", "text/plain"],
    });
    const service = storageClient(storage, keys.anonKey, keys.serviceKey).from(bucket);
    const refused = { status: 400, statusCode: "415", code: "InvalidMimeType" };

    for (const [name, contentType] of [["a.png", "image/png"], ["b.svg", "image/svg+xml"]]) {
      const ok = await service.upload(name!, "img", { contentType });
      assert.equal(ok.error, null, `${contentType} matches image/*`);
    }
    assert.equal(
      (await service.upload("c.pdf", "pdf", { contentType: "application/pdf" })).error,
      null,
    );
    const html = await service.upload("d.html", "<p>", { contentType: "text/html" });
    assert.deepEqual(failure(html.error), refused);
    assert.equal(html.error?.message, "mime type text/html is not supported");
    const lookalike = await service.upload("e.pdfx", "x", { contentType: "application/pdfx" });
    assert.deepEqual(failure(lookalike.error), refused);
    const blob = await service.upload(
      "f.zip",
      new File(["zip"], "f.zip", { type: "application/zip" }),
    );
    assert.deepEqual(failure(blob.error), refused, "a multipart file's own type is checked");
    // As hosted: parameters are part of the type, so supabase-js's default
    // "text/plain;charset=UTF-8" does not match "text/plain".
    const charset = await service.upload("g.txt", "text");
    assert.deepEqual(failure(charset.error), refused);
    const plain = await service.upload(
      "g.txt",
      new File(["text"], "g.txt", { type: "text/plain" }),
    );
    assert.equal(plain.error, null);

    const signed = await service.createSignedUploadUrl("h.exe");
    const viaUrl = await service.uploadToSignedUrl("h.exe", signed.data!.token, "MZ", {
      contentType: "application/x-msdownload",
    });
    assert.deepEqual(failure(viaUrl.error), refused);
    assert.deepEqual(
      (await filesUnder(storage.root)).map((f) => f.slice(bucket.length + 1)),
      ["a.png", "b.svg", "c.pdf", "g.txt"],
    );
    assert.equal(await objectCount(bucket), 4);
  },
);

sqlTest(
  "storage: signed upload tokens are checked (tampered, other object, download scope, expired)",
  async () => {
    await using storage = await startLocalStorage(db);
    const bucket = await createBucket(db.pool);
    const service = storageClient(storage, keys.anonKey, keys.serviceKey).from(bucket);
    const signed = await service.createSignedUploadUrl("a.txt");
    const token = signed.data!.token;
    const put = (name: string, uploadToken: string) =>
      service.uploadToSignedUrl(name, uploadToken, "payload", { contentType: "text/plain" });

    const [header, payload, signature] = token.split(".");
    const flipped = signature!.startsWith("A")
      ? `B${signature!.slice(1)}`
      : `A${signature!.slice(1)}`;
    assert.deepEqual(failure((await put("a.txt", `${header}.${payload}.${flipped}`)).error), {
      status: 400,
      statusCode: "400",
      code: "InvalidJWT",
    });
    const forged = await signUrlToken(
      "another-secret-that-is-at-least-32-characters",
      { url: `${bucket}/a.txt`, scope: "upload" },
      60,
    );
    assert.equal(failure((await put("a.txt", forged)).error).code, "InvalidJWT");

    const other = await put("b.txt", token);
    assert.equal(failure(other.error).code, "InvalidSignature", "a token names one object");
    assert.equal(other.error?.message, "Invalid signature");

    await service.upload("existing.txt", "x", { contentType: "text/plain" });
    const download = await service.createSignedUrl("existing.txt", 60);
    const downloadToken = new URL(download.data!.signedUrl).searchParams.get("token")!;
    const wrongScope = await put("existing.txt", downloadToken);
    assert.equal(failure(wrongScope.error).code, "InvalidSignature");
    assert.equal(wrongScope.error?.message, "Token is not scoped for upload");
    const uploadAsDownload = await fetch(
      `${storage.url}/storage/v1/object/sign/${bucket}/a.txt?token=${token}`,
    );
    assert.equal(uploadAsDownload.status, 400);
    assert.equal((await uploadAsDownload.json()).message, "Token is not scoped for download");

    const expired = await signUrlToken(
      TEST_JWT_SECRET,
      { url: `${bucket}/a.txt`, scope: "upload", upsert: false },
      -60,
    );
    const late = await put("a.txt", expired);
    assert.equal(failure(late.error).code, "InvalidJWT");
    assert.match(late.error!.message, /"exp" claim timestamp check failed/);
    const expiredDownload = await signUrlToken(
      TEST_JWT_SECRET,
      { url: `${bucket}/existing.txt`, scope: "download" },
      -60,
    );
    const lateDownload = await fetch(
      `${storage.url}/storage/v1/object/sign/${bucket}/existing.txt?token=${expiredDownload}`,
    );
    assert.equal((await lateDownload.json()).code, "InvalidJWT");

    const noToken = await fetch(`${storage.url}/storage/v1/object/upload/sign/${bucket}/a.txt`, {
      method: "PUT",
      body: "x",
    });
    assert.equal((await noToken.json()).code, "InvalidRequest");

    assert.equal(await objectCount(bucket), 1, "only existing.txt");
    assert.deepEqual(await filesUnder(storage.root), [`${bucket}/existing.txt`]);
    assert.equal((await put("a.txt", token)).error, null, "the genuine token still works");
  },
);

/** Sends `request` (the request line and headers) over a raw connection; returns the status. */
async function rawStatus(storage: LocalStorage, request: string): Promise<number> {
  const port = Number(new URL(storage.url).port);
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  await conn.write(new TextEncoder().encode(request));
  const reply = new TextDecoder().decode(
    new Uint8Array(await new Response(conn.readable).arrayBuffer()),
  );
  return Number(/^HTTP\/1\.1 (\d{3})/.exec(reply)?.[1]);
}

sqlTest(
  "storage: names that could leave the bucket's folder are refused before anything is stored",
  async () => {
    await using storage = await startLocalStorage(db);
    const bucket = await createBucket(db.pool);
    const escape = `escape-${crypto.randomUUID().slice(0, 8)}`;
    const bad = [
      `../${escape}`,
      `a/../../${escape}`,
      `%2e%2e/${escape}`,
      `a\\..\\..\\${escape}`,
      `a/b\u0001c`,
      `nul\u0000.txt`,
      "a//b.txt",
      "./a.txt",
      "a/./b.txt",
      "a/.",
      "new\nline.txt",
      "résumé.pdf",
      `${"x".repeat(1021)}.txt`,
    ];
    for (const name of bad) {
      // The name reaches the server intact (percent-encoded, "/" included)...
      const encoded = encodeURIComponent(name);
      const created = await serviceFetch(storage, `${bucket}/${encoded}`, {
        method: "POST",
        headers: { "content-type": "text/plain" },
        body: "x",
      });
      assert.deepEqual(
        [created.status, (await created.json()).code],
        [400, "InvalidKey"],
        JSON.stringify(name),
      );
      const sign = await serviceFetch(storage, `upload/sign/${bucket}/${encoded}`, {
        method: "POST",
      });
      assert.equal((await sign.json()).code, "InvalidKey", JSON.stringify(name));
      // ...even with a token signed for exactly that name.
      const token = await signUrlToken(
        TEST_JWT_SECRET,
        { url: `${bucket}/${name}`, scope: "upload", upsert: true },
        60,
      );
      const put = await fetch(
        `${storage.url}/storage/v1/object/upload/sign/${bucket}/${encoded}?token=${token}`,
        { method: "PUT", headers: { "content-type": "text/plain" }, body: "x" },
      );
      assert.equal((await put.json()).code, "InvalidKey", JSON.stringify(name));
    }
    // Through supabase-js the URL parser resolves dot segments (and backslashes)
    // first: the request lands on no route that stores.
    const service = storageClient(storage, keys.anonKey, keys.serviceKey).from(bucket);
    for (const name of bad.slice(0, 4)) {
      const viaClient = await service.upload(name, "x", { contentType: "text/plain" });
      assert.equal(viaClient.error?.statusCode, "404", JSON.stringify(name));
    }
    const badBucket = await serviceFetch(
      storage,
      `${encodeURIComponent(`../../${escape}`)}/x.txt`,
      { method: "POST", body: "x" },
    );
    assert.equal((await badBucket.json()).code, "InvalidBucketName");
    // Nor can a bucket name reach the store's own staging folder.
    const dotBucket = await serviceFetch(storage, ".uploads/x.txt", {
      method: "POST",
      body: "x",
    });
    assert.equal((await dotBucket.json()).code, "InvalidBucketName");

    // Unencoded dot segments never reach a route that stores.
    for (const path of [`${bucket}/a/../../${escape}`, `${bucket}/../../../${escape}`]) {
      const status = await rawStatus(
        storage,
        `POST /storage/v1/object/${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n` +
          `Authorization: Bearer ${keys.serviceKey}\r\nContent-Length: 1\r\n` +
          `Connection: close\r\n\r\nx`,
      );
      assert.notEqual(status, 200, path);
    }

    assert.equal(await objectCount(bucket), 0);
    assert.deepEqual(await filesUnder(storage.root), []);
    for (const dir of [storage.root, dirname(storage.root), `${storage.root}/${bucket}`]) {
      await assert.rejects(Deno.stat(`${dir}/${escape}`), Deno.errors.NotFound);
    }
  },
);

sqlTest(
  "storage: authenticated routes refuse a missing or invalid credential and the scheduler token",
  async () => {
    await using storage = await startLocalStorage(db);
    const bucket = await createBucket(db.pool);
    const user = await createUser(db.pool);
    await db.pool.query(
      `create policy "${bucket} anyone inserts" on storage.objects
         for insert to anon, authenticated with check (bucket_id = '${bucket}')`,
    );
    const scheduler = storageClient(storage, keys.anonKey, keys.schedulerToken).from(bucket);
    const denied = { status: 400, statusCode: "403", code: "AccessDenied" };

    assert.deepEqual(failure((await scheduler.createSignedUploadUrl("a.txt")).error), denied);
    assert.deepEqual(failure((await scheduler.upload("a.txt", "x")).error), denied);
    assert.deepEqual(failure((await scheduler.createSignedUrl("a.txt", 60)).error), denied);
    const expired = storageClient(storage, keys.anonKey, await keys.userToken(user, -60))
      .from(bucket);
    assert.deepEqual(failure((await expired.upload("a.txt", "x")).error), denied);
    const garbage = storageClient(storage, keys.anonKey, "not-a-token").from(bucket);
    assert.deepEqual(failure((await garbage.createSignedUploadUrl("a.txt")).error), denied);

    const noHeader = await fetch(`${storage.url}/storage/v1/object/${bucket}/a.txt`, {
      method: "POST",
      body: "x",
    });
    assert.deepEqual(await noHeader.json(), {
      statusCode: "400",
      code: "InvalidRequest",
      error: "Bad Request",
      message: "headers must have required property 'authorization'",
    });
    assert.equal(await objectCount(bucket), 0);
    assert.deepEqual(await filesUnder(storage.root), []);
  },
);

sqlTest(
  "storage: the gateway answers CORS preflight for /storage/v1 and adds CORS to every answer",
  async () => {
    await using storage = await startLocalStorage(db);
    const preflight = await fetch(`${storage.url}/storage/v1/object/upload/sign/b/x.pdf`, {
      method: "OPTIONS",
      headers: {
        origin: "http://localhost:5173",
        "access-control-request-method": "PUT",
        "access-control-request-headers": "authorization, x-upsert, content-type",
      },
    });
    assert.equal(preflight.status, 204);
    assert.equal(preflight.headers.get("access-control-allow-origin"), "*");
    assert.equal(
      preflight.headers.get("access-control-allow-methods"),
      "GET, HEAD, POST, PUT, OPTIONS",
    );
    const allowed = preflight.headers.get("access-control-allow-headers")!.split(/,\s*/);
    for (
      const header of ["authorization", "content-type", "x-upsert", "cache-control", "x-metadata"]
    ) {
      assert.ok(allowed.includes(header), header);
    }
    await preflight.body?.cancel();

    const answer = await fetch(`${storage.url}/storage/v1/object/t-none/x.pdf`, {
      headers: { origin: "http://localhost:5173" },
    });
    assert.equal(answer.headers.get("access-control-allow-origin"), "*");
    assert.ok(answer.headers.get("x-request-id"));
    assert.equal(answer.headers.get("x-content-type-options"), "nosniff");
    await answer.body?.cancel();

    for (
      const [method, path] of [
        ["GET", "bucket"],
        ["DELETE", "object/b/x.pdf"],
        ["POST", "object/list/b"],
        ["GET", "object/info/b/x.pdf"],
        ["GET", "object/b"],
      ]
    ) {
      const res = await fetch(`${storage.url}/storage/v1/${path}`, {
        method,
        headers: { authorization: `Bearer ${keys.serviceKey}` },
      });
      assert.equal(res.status, 404, `${method} ${path}`);
      assert.deepEqual(await res.json(), {
        statusCode: "404",
        code: "InvalidRequest",
        error: "Not Found",
        message: `Route ${method}:/${path} not found`,
      });
    }
  },
);
