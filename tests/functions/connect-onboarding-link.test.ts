import assert from "node:assert/strict";
import handler from "../../supabase/functions/connect-onboarding-link/handler.ts";
import { billingSetup, countRows, payprocEnv } from "../support/billing.ts";
import { sqlTest } from "../support/db.ts";
import { assertRateLimited } from "../support/rate_limits.ts";
import { invoke, testRuntime } from "../support/runtime.ts";
import { createUser, type TestUser } from "../support/sql.ts";

const { db, double, runtime, keys } = await billingSetup();

interface Answer {
  url?: string;
  error?: { code: string; message: string; details?: Record<string, unknown> };
}

const onboard = async (user: TestUser) =>
  await invoke<Answer>(handler, runtime, { token: await keys.userToken(user) });

/** The user's `connect_accounts` row, or undefined. */
async function accountRow(userId: string) {
  const { rows } = await db.pool.query(
    "select * from public.connect_accounts where user_id = $1",
    [userId],
  );
  return rows[0];
}

/** Processor accounts carrying the user's id. */
const accountsOf = (userId: string) =>
  double.all("account").filter((a) => a.metadata?.user_id === userId);

/** The parameters of the account links created for `accountId`. */
const linksFor = (accountId: string) =>
  double.requestsTo("POST", "/v1/account_links")
    .map((r) => r.body as Record<string, string>)
    .filter((body) => body.account === accountId);

sqlTest(
  "connect-onboarding-link: any signed-in user gets an onboarding link for a new Express account, stored once",
  async () => {
    const user = await createUser(db.pool);
    const before = await db.pool.query("select public.is_seller($1) as seller", [user.id]);
    assert.equal(before.rows[0].seller, false);

    const res = await onboard(user);
    assert.equal(res.status, 200);

    const [account, ...others] = accountsOf(user.id);
    assert.ok(account);
    assert.equal(others.length, 0);
    assert.equal(account.type, "express");
    assert.equal(account.email, user.email);
    assert.deepEqual(Object.keys(account.capabilities ?? {}), ["transfers"]);
    const create = double.requestsTo("POST", /^\/v1\/accounts$/).find((r) =>
      (r.body as { metadata?: { user_id?: string } }).metadata?.user_id === user.id
    );
    assert.equal(create?.headers.get("idempotency-key"), `connect-account:${user.id}`);

    const [link] = linksFor(account.id);
    assert.deepEqual(link, {
      account: account.id,
      type: "account_onboarding",
      refresh_url: "http://localhost:5173/seller/payouts?onboarding=refresh",
      return_url: "http://localhost:5173/seller/payouts?onboarding=return",
    });
    assert.ok(double.store.accountLinks.some((l) => l.url === res.body.url));
    assert.ok(res.body.url?.includes(`/connect/setup/${account.id}/`));

    const row = await accountRow(user.id);
    assert.equal(row.payproc_account_id, account.id);
    assert.equal(row.kyc_status, "pending");
    assert.equal(row.details_submitted, false);
    assert.equal(row.currently_due_count, 4);
    const profile = await db.pool.query(
      "select payproc_account_id, kyc_status from public.profiles where id = $1",
      [user.id],
    );
    assert.deepEqual(profile.rows[0], { payproc_account_id: account.id, kyc_status: "pending" });
    const after = await db.pool.query("select public.is_seller($1) as seller", [user.id]);
    assert.equal(after.rows[0].seller, true, "onboarding makes the user a seller");
  },
);

sqlTest(
  "connect-onboarding-link: a second call reuses the stored account (re-read, not re-created) with a fresh link",
  async () => {
    const user = await createUser(db.pool);
    const first = await onboard(user);
    const accountsBefore = double.createdCount("account");
    const second = await onboard(user);
    assert.equal(second.status, 200);
    assert.notEqual(second.body.url, first.body.url, "account links are single-use");
    assert.equal(double.createdCount("account"), accountsBefore);
    const [account] = accountsOf(user.id);
    assert.equal(linksFor(account!.id).length, 2);
    assert.equal(double.requestsTo("GET", `/v1/accounts/${account!.id}`).length, 1);
    assert.equal(await countRows(db.pool, "public.connect_accounts", "user_id = $1", [user.id]), 1);
  },
);

sqlTest(
  "connect-onboarding-link: 10 concurrent calls create one account and one row, and each gets a link",
  async () => {
    const user = await createUser(db.pool);
    const token = await keys.userToken(user);
    const answers = await Promise.all(
      Array.from({ length: 10 }, () => invoke<Answer>(handler, runtime, { token })),
    );
    assert.deepEqual(answers.map((a) => a.status), Array(10).fill(200));
    assert.equal(new Set(answers.map((a) => a.body.url)).size, 10);
    assert.equal(accountsOf(user.id).length, 1);
    assert.equal(await countRows(db.pool, "public.connect_accounts", "user_id = $1", [user.id]), 1);
    assert.equal((await accountRow(user.id)).payproc_account_id, accountsOf(user.id)[0]!.id);
    // Every call raced to create (none had a row yet); the key made them one account.
    const creations = double.requestsTo("POST", /^\/v1\/accounts$/).filter((r) =>
      (r.body as { metadata?: { user_id?: string } }).metadata?.user_id === user.id
    );
    assert.ok(creations.length >= 1);
    for (const r of creations) {
      assert.equal(r.headers.get("idempotency-key"), `connect-account:${user.id}`);
    }
  },
);

sqlTest(
  "connect-onboarding-link: while a concurrent call holds the creation key (409), it waits and gets the same account",
  async () => {
    const user = await createUser(db.pool);
    double.failNext({ method: "POST", path: /^\/v1\/accounts$/, status: 409, times: 3 });
    const res = await onboard(user);
    assert.equal(res.status, 200);
    assert.equal(accountsOf(user.id).length, 1);
    const creations = double.requestsTo("POST", /^\/v1\/accounts$/).filter((r) =>
      r.headers.get("idempotency-key") === `connect-account:${user.id}`
    );
    assert.equal(creations.length, 4);
  },
);

sqlTest(
  "connect-onboarding-link: no token 401, anon key and service key 403; nothing is created",
  async () => {
    const accounts = double.createdCount("account");
    const links = double.createdCount("account_link");
    const none = await invoke<Answer>(handler, runtime);
    assert.deepEqual([none.status, none.body.error?.code], [401, "unauthorized"]);
    const anon = await invoke<Answer>(handler, runtime, { token: keys.anonKey });
    assert.deepEqual([anon.status, anon.body.error?.code], [403, "forbidden"]);
    const service = await invoke<Answer>(handler, runtime, { token: keys.serviceKey });
    assert.deepEqual([service.status, service.body.error?.code], [403, "forbidden"]);
    assert.equal(double.createdCount("account"), accounts);
    assert.equal(double.createdCount("account_link"), links);
  },
);

sqlTest(
  "connect-onboarding-link: processor down → 503 and nothing stored; a later call finishes with the same account",
  async () => {
    const user = await createUser(db.pool);
    double.failNext({ method: "POST", path: /^\/v1\/accounts$/, status: 503, times: 2 });
    const down = await onboard(user);
    assert.deepEqual([down.status, down.body.error?.code], [503, "upstream_unavailable"]);
    assert.equal(accountsOf(user.id).length, 0);
    assert.equal(await accountRow(user.id), undefined);

    // The account is created and stored, then the link fails: the retry reuses it.
    double.failNext({ method: "POST", path: "/v1/account_links", status: 500, times: 2 });
    const linkDown = await onboard(user);
    assert.equal(linkDown.status, 503);
    const [account] = accountsOf(user.id);
    assert.equal((await accountRow(user.id)).payproc_account_id, account!.id);
    const retry = await onboard(user);
    assert.equal(retry.status, 200);
    assert.equal(accountsOf(user.id).length, 1);
  },
);

sqlTest(
  "connect-onboarding-link: a stored account the processor no longer has → 409 naming it; nothing re-created",
  async () => {
    const user = await createUser(db.pool);
    assert.equal((await onboard(user)).status, 200);
    const [account] = accountsOf(user.id);
    double.store.remove("account", account!.id);
    const accounts = double.createdCount("account");
    const links = double.createdCount("account_link");
    const res = await onboard(user);
    assert.equal(res.status, 409);
    assert.equal(res.body.error?.code, "conflict");
    assert.deepEqual(res.body.error?.details, { accountId: account!.id });
    assert.match(res.body.error!.message, new RegExp(account!.id));
    assert.equal(double.createdCount("account"), accounts);
    assert.equal(double.createdCount("account_link"), links);
    assert.equal((await accountRow(user.id)).payproc_account_id, account!.id);
  },
);

sqlTest(
  "connect-onboarding-link: without PAYPROC_SECRET_KEY or SITE_URL → 503 not_configured, nothing created",
  async () => {
    const user = await createUser(db.pool);
    const token = await keys.userToken(user);
    const accounts = double.createdCount("account");
    const { PAYPROC_SECRET_KEY: _, ...noKey } = payprocEnv(double);
    const withoutKey = await testRuntime(db, noKey);
    const withoutSite = await testRuntime(db, { ...payprocEnv(double), SITE_URL: undefined });
    for (const [name, rt] of [["PAYPROC_SECRET_KEY", withoutKey], ["SITE_URL", withoutSite]]) {
      const res = await invoke<Answer>(handler, rt as typeof runtime, { token });
      assert.equal(res.status, 503, name as string);
      assert.equal(res.body.error?.code, "not_configured");
      assert.match(res.body.error!.message, new RegExp(name as string));
    }
    assert.equal(double.createdCount("account"), accounts);
    assert.equal(await accountRow(user.id), undefined);
    await withoutKey.close();
    await withoutSite.close();
  },
);

sqlTest(
  "connect-onboarding-link: at most 10 calls a minute per user; the 11th answers 429 before any processor request",
  async () => {
    const user = await createUser(db.pool);
    await assertRateLimited(
      { limit: 10, windowSeconds: 60 },
      () => onboard(user),
      () => double.requests.length,
    );
    assert.equal(accountsOf(user.id).length, 1);
    assert.equal((await onboard(await createUser(db.pool))).status, 200);
  },
);
