import assert from "node:assert/strict";
import pg from "pg";
import { createClient, FunctionsHttpError } from "@supabase/supabase-js";
import { localClusterDir } from "../../local/db/db_reset.ts";
import { listMigrations, migrate } from "../../local/db/migrate.ts";
import { freePort } from "../../local/db/postgres.ts";
import { createEmptyDatabase } from "../support/db.ts";
import { runLocalStackToExit, startLocalStack } from "../support/local_stack.ts";

/** An empty database (not the migrated template). */
function emptyDatabase(): Promise<string> {
  return createEmptyDatabase("e2e");
}

Deno.test({
  name: "local stack: migrates, seeds and serves functions to supabase-js like the frontend",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const dbUrl = await emptyDatabase();
    const state = await Deno.makeTempDir();
    const stack = await startLocalStack({
      SUPABASE_DB_URL: dbUrl,
      PORT: "0",
      LOCAL_STATE_DIR: state,
      LOG_LEVEL: "warn",
    });
    let failure: unknown;
    try {
      assert.match(stack.output(), /\d+ new migration\(s\) applied/);
      const anon = createClient(stack.url, stack.anonKey, { auth: { persistSession: false } });

      const { data, error } = await anon.functions.invoke("security-headers", { body: {} });
      assert.equal(error, null);
      assert.match(data.headers["Content-Security-Policy"], /frame-ancestors 'none'/);

      const missing = await anon.functions.invoke("no-such-function", { body: {} });
      assert.ok(missing.error instanceof FunctionsHttpError);
      assert.equal(missing.error.context.status, 404);
      assert.equal((await missing.error.context.json()).error.code, "function_not_found");

      // Locally (LOCAL_DEV=true) the anon key starts utilities, as `docs/functions.md#credentials` says...
      const utility = await anon.functions.invoke("test-env", { body: {} });
      assert.equal(utility.error, null);
      assert.equal(utility.data.database.ok, true);
      // ...but it is never a signed-in user: a valid key without the right is 403.
      const denied = await anon.functions.invoke("check-subscription", { body: {} });
      assert.ok(denied.error instanceof FunctionsHttpError);
      assert.equal(denied.error.context.status, 403);
      assert.equal((await denied.error.context.json()).error.code, "forbidden");

      const token = await stack.token("e2e-admin@example.com", true);
      assert.match(token.split(".")[0]!, /^eyJ/);
      assert.equal(JSON.parse(atob(token.split(".")[0]!)).alg, "ES256");
      const asAdmin = createClient(stack.url, stack.anonKey, {
        auth: { persistSession: false },
        global: { headers: { Authorization: `Bearer ${token}` } },
      });
      const report = await asAdmin.functions.invoke("test-env", { body: {} });
      assert.equal(report.error, null);
      assert.equal(report.data.database.ok, true);
      assert.equal(report.data.variables.SUPABASE_DB_URL, true);
      assert.doesNotMatch(JSON.stringify(report.data), /postgres:/);

      const gatewayNoJwt = await fetch(`${stack.url}/functions/v1/security-headers`, {
        method: "POST",
      });
      assert.equal(gatewayNoJwt.status, 401);
      await gatewayNoJwt.body?.cancel();

      const jwks = await (await fetch(`${stack.url}/auth/v1/.well-known/jwks.json`)).json();
      assert.equal(jwks.keys[0].kty, "EC");
      assert.equal(jwks.keys[0].d, undefined, "the private part must never be served");

      // A page open elsewhere in the developer's browser cannot drive the
      // stack with its public keys: refused before anything runs, preflight
      // and request alike; pages on this machine (any port) and SITE_URL may.
      const mailBefore = (await (await fetch(`${stack.url}/_local/mail.json`)).json()).total;
      const sendEmail = (origin: string, method = "POST") =>
        fetch(`${stack.url}/functions/v1/send-email`, {
          method,
          headers: {
            origin,
            ...(method === "POST"
              ? {
                authorization: `Bearer ${stack.serviceKey}`,
                "content-type": "application/json",
              }
              : { "access-control-request-method": "POST" }),
          },
          body: method === "POST"
            ? JSON.stringify({ to: "victim@example.com", subject: "Hi", html: "<p>x</p>" })
            : undefined,
        });
      for (const origin of ["https://evil.example", "http://localhost.evil.example", "null"]) {
        for (const method of ["OPTIONS", "POST"]) {
          const refused = await sendEmail(origin, method);
          assert.equal(refused.status, 403, `${method} from ${origin}`);
          assert.equal(refused.headers.get("access-control-allow-origin"), null);
          assert.equal((await refused.json()).error.code, "origin_not_allowed");
        }
      }
      const mailAfter = (await (await fetch(`${stack.url}/_local/mail.json`)).json()).total;
      assert.equal(mailAfter, mailBefore, "nothing was sent");
      for (
        const origin of ["http://localhost:5173", "http://127.0.0.1:3000", "http://[::1]:8080"]
      ) {
        const preflight = await sendEmail(origin, "OPTIONS");
        assert.equal(preflight.status, 204, origin);
        assert.equal(preflight.headers.get("access-control-allow-origin"), origin);
        await preflight.body?.cancel();
      }
      // fetch() sends the URL's host; a rebound name needs a request by hand.
      const rebound = await rawRequest(
        new URL(stack.url).port,
        "POST /functions/v1/security-headers HTTP/1.1\r\nHost: rebound.example\r\n" +
          `Authorization: Bearer ${stack.anonKey}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`,
      );
      assert.match(
        rebound,
        /^HTTP\/1\.1 403 /,
        "a name of another site that resolves here reads nothing",
      );
      assert.match(rebound, /answers on 127\.0\.0\.1 and localhost only/);

      // The local mail viewer (LOCAL_DEV): served, and named in the banner.
      assert.ok(stack.output().includes(`  Mail             ${stack.url}/_local/mail`));
      const mail = await fetch(`${stack.url}/_local/mail`);
      assert.equal(mail.status, 200);
      assert.match(mail.headers.get("content-type") ?? "", /^text\/html/);
      assert.match(await mail.text(), /<title>Mail — Local console<\/title>/);

      const client = new pg.Client({ connectionString: dbUrl });
      await client.connect();
      const { rows } = await client.query(
        "select count(*)::int as n from auth.users where email like '%@example.com'",
      );
      assert.ok(rows[0].n >= 4, "seed users are present");

      // Deal documents end to end: the frontend's supabase-js calls the function, uploads
      // to the local Storage API through the signed URL, and the other party downloads.
      assert.ok(stack.output().includes(`  Storage          ${stack.url}/storage/v1`));
      const userOf = async (email: string) => {
        const bearer = await stack.token(email);
        const id =
          JSON.parse(atob(bearer.split(".")[1]!.replace(/-/g, "+").replace(/_/g, "/"))).sub;
        const supabase = createClient(stack.url, stack.anonKey, {
          auth: { persistSession: false },
          global: { headers: { Authorization: `Bearer ${bearer}` } },
        });
        return { id: id as string, supabase };
      };
      const seller = await userOf("e2e-seller@example.com");
      const buyer = await userOf("e2e-buyer@example.com");
      const deal = await client.query<{ id: string }>(
        `with listing as (
           insert into public.listings (seller_id, title, url, category, asking_price, currency)
           values ($1, 'E2E shop', 'https://e2e-shop.example', 'saas', 900, 'USD') returning id
         )
         insert into public.deals (listing_id, buyer_id, seller_id, amount, currency)
         select id, $2, $1, 900, 'USD' from listing returning id`,
        [seller.id, buyer.id],
      );
      const dealId = deal.rows[0]!.id;
      const upload = await buyer.supabase.functions.invoke("deal-create-upload-url", {
        body: { dealId, fileName: "proof.txt", contentType: "text/plain", size: 5, kind: "other" },
      });
      assert.equal(upload.error, null, String(upload.error));
      const file = new File(["hello"], "proof.txt", { type: "text/plain" });
      const put = await buyer.supabase.storage.from("deal-documents")
        .uploadToSignedUrl(upload.data.path, upload.data.token, file);
      assert.equal(put.error, null, String(put.error));
      const got = await seller.supabase.storage.from("deal-documents").download(upload.data.path);
      assert.equal(await got.data?.text(), "hello");
      assert.equal(
        await Deno.readTextFile(`${state}/storage/deal-documents/${upload.data.path}`),
        "hello",
      );
      const apa = await seller.supabase.functions.invoke("generate-apa-pdf", { body: { dealId } });
      assert.equal(apa.error, null, String(apa.error));
      const pdf = await fetch(apa.data.signedUrl);
      assert.equal(pdf.headers.get("content-type"), "application/pdf");
      assert.equal(new TextDecoder().decode((await pdf.bytes()).slice(0, 5)), "%PDF-");
      await client.end();
    } catch (error) {
      failure = error;
    }
    const code = await stack.stop("SIGTERM");
    if (failure) throw failure;
    assert.equal(code, 0, stack.output());
  },
});

Deno.test({
  name: "local stack: its scheduler welcomes a new user with no manual call, once",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const dbUrl = await emptyDatabase();
    await migrate(dbUrl, { includePlatform: true });
    const client = new pg.Client({ connectionString: dbUrl });
    await client.connect();
    // Every second instead of every minute (croner reads six fields), so the
    // test waits seconds: the scheduler runs this row as it runs any other.
    await client.query(
      "update public.job_schedules set cron = '* * * * * *' where function_name = 'send-new-user-notification'",
    );
    const state = await Deno.makeTempDir();
    const stack = await startLocalStack({
      SUPABASE_DB_URL: dbUrl,
      PORT: "0",
      LOCAL_STATE_DIR: state,
      LOG_LEVEL: "warn",
    });
    let failure: unknown;
    try {
      const email = `e2e-welcome-${crypto.randomUUID().slice(0, 8)}@example.com`;
      const { rows } = await client.query<{ id: string }>(
        "insert into auth.users (email) values ($1) returning id",
        [email],
      );
      const welcomes = async () => {
        const list = await (await fetch(`${stack.url}/_local/mail.json`)).json() as {
          messages: Array<{ to: string; type: string; status: string }>;
        };
        return list.messages.filter((m) => m.to === email && m.type === "welcome");
      };
      // The sender writes the row as pending, then captures it: wait for the end state.
      const deadline = Date.now() + 30_000;
      const settled = async () => (await welcomes()).some((m) => m.status !== "pending");
      while (!(await settled()) && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      assert.equal((await welcomes()).length, 1, stack.output());
      assert.equal((await welcomes())[0]!.status, "captured");
      // Later runs send nothing more.
      await new Promise((resolve) => setTimeout(resolve, 2_500));
      assert.equal((await welcomes()).length, 1);
      const queued = await client.query<{ status: string }>(
        "select status from public.new_user_welcomes where user_id = $1",
        [rows[0]!.id],
      );
      assert.equal(queued.rows[0]?.status, "welcomed");
    } catch (error) {
      failure = error;
    }
    await client.end();
    const code = await stack.stop("SIGTERM");
    await Deno.remove(state, { recursive: true }).catch(() => {});
    if (failure) throw failure;
    assert.equal(code, 0, stack.output());
  },
});

Deno.test({
  name:
    "local stack: starts with its state in a private (0700) folder, also as root, serves, and Ctrl-C leaves no server behind",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    // As root PostgreSQL runs as the "postgres" user, which cannot enter this folder.
    const state = await Deno.makeTempDir({ prefix: "private-state-" });
    assert.equal((await Deno.stat(state)).mode! & 0o777, 0o700);
    const dataDir = await localClusterDir(state);
    try {
      if (Deno.uid() === 0) assert.notEqual(dataDir, `${state}/db`, "the cluster is relocated");
      await startServeAndStop(state, dataDir);
    } finally {
      await Deno.remove(state, { recursive: true }).catch(() => {});
      await Deno.remove(dataDir, { recursive: true }).catch(() => {});
    }
  },
});

/** Starts the stack on `state`, checks it serves, stops it with SIGINT, checks it is all gone. */
async function startServeAndStop(state: string, dataDir: string): Promise<void> {
  const dbPort = freePort();
  const stack = await startLocalStack({
    PORT: "0",
    DB_PORT: String(dbPort),
    LOCAL_STATE_DIR: state,
    LOG_LEVEL: "warn",
  });
  let code: number;
  try {
    const notices = stack.output().split("\n").filter((line) => line.startsWith("PostgreSQL data"));
    if (dataDir === `${state}/db`) {
      assert.deepEqual(notices, []);
    } else {
      assert.deepEqual(notices, [
        `PostgreSQL data in ${dataDir}: as root it runs as the "postgres" user, which cannot reach ${state}/db`,
      ]);
    }
    const preflight = await fetch(`${stack.url}/functions/v1/security-headers`, {
      method: "OPTIONS",
    });
    assert.equal(preflight.status, 204);
    await preflight.body?.cancel();
    const served = await fetch(`${stack.url}/functions/v1/security-headers`, {
      method: "POST",
      headers: { authorization: `Bearer ${stack.anonKey}` },
    });
    assert.equal(served.status, 200);
    await served.body?.cancel();
    const token = await stack.token("private-folder@example.com");
    assert.match(token, /^eyJ/, "the database answers: the user was created");
  } finally {
    code = await stack.stop("SIGINT");
  }
  assert.equal(code, 0, stack.output());
  assert.ok((await Deno.stat(`${dataDir}/PG_VERSION`)).isFile, "the cluster is kept");
  await assert.rejects(Deno.stat(`${dataDir}/postmaster.pid`), Deno.errors.NotFound);
  assert.deepEqual(serversOn(dataDir), [], "no PostgreSQL process is left on the cluster");
  const listener = Deno.listen({ hostname: "127.0.0.1", port: dbPort });
  listener.close();
}

Deno.test({
  name: "local stack: a migration changed after it was applied is a one-line error naming the fix",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const dbUrl = await emptyDatabase();
    await migrate(dbUrl, { includePlatform: true });
    const edited = listMigrations()[0]!;
    const client = new pg.Client({ connectionString: dbUrl });
    await client.connect();
    await client.query(
      "update supabase_migrations.schema_migrations set checksum = repeat('0', 64) where version = $1",
      [edited.version],
    );
    await client.end();
    const state = await Deno.makeTempDir();
    try {
      const result = await runLocalStackToExit({
        SUPABASE_DB_URL: dbUrl,
        PORT: "0",
        LOCAL_STATE_DIR: state,
      });
      assert.equal(result.code, 1);
      assert.equal(result.stderr.trim().split("\n").length, 1, result.stderr);
      assert.ok(
        result.stderr.includes(
          `"${edited.version}_${edited.name}.sql" changed after it was applied`,
        ),
        result.stderr,
      );
      assert.match(result.stderr, /new migration, or `deno task db:reset --yes`/);
    } finally {
      await Deno.remove(state, { recursive: true }).catch(() => {});
    }
  },
});

/** Pids of PostgreSQL processes whose command line names `dataDir` (Linux; empty elsewhere). */
function serversOn(dataDir: string): number[] {
  const pids: number[] = [];
  let entries: Deno.DirEntry[];
  try {
    entries = [...Deno.readDirSync("/proc")];
  } catch {
    return pids;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const args = Deno.readTextFileSync(`/proc/${entry.name}/cmdline`).split("\0");
      if (args.includes(dataDir) && args.some((a) => a.endsWith("/postgres"))) {
        pids.push(Number(entry.name));
      }
    } catch {
      // the process ended meanwhile
    }
  }
  return pids;
}

Deno.test({
  name: "local stack: a taken port is a one-line error, not a stack trace",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    try {
      const port = (listener.addr as Deno.NetAddr).port;
      const result = await runLocalStackToExit({
        PORT: String(port),
        SUPABASE_DB_URL: "postgresql://postgres:postgres@127.0.0.1:1/none",
      });
      assert.equal(result.code, 1);
      assert.equal(result.stderr.trim().split("\n").length, 1, result.stderr);
      assert.match(result.stderr, new RegExp(`port ${port} .*already in use`));
    } finally {
      listener.close();
    }
  },
});

Deno.test({
  name: "local stack: a database that cannot start is a one-line error, not a stack trace",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const state = await Deno.makeTempDir();
    try {
      const dbPort = (listener.addr as Deno.NetAddr).port;
      const result = await runLocalStackToExit({
        PORT: "0",
        DB_PORT: String(dbPort),
        LOCAL_STATE_DIR: state,
      });
      assert.equal(result.code, 1);
      assert.equal(result.stderr.trim().split("\n").length, 1, result.stderr);
      assert.match(result.stderr, new RegExp(`Cannot start PostgreSQL: port ${dbPort}`));
    } finally {
      listener.close();
      await Deno.remove(state, { recursive: true }).catch(() => {});
    }
  },
});

/** Sends `request` as written to 127.0.0.1:`port` and reads the whole answer. */
async function rawRequest(port: string, request: string): Promise<string> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: Number(port) });
  await conn.write(new TextEncoder().encode(request));
  return await new Response(conn.readable).text();
}
